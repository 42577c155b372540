#pragma once
// Conversion between gossip::Envelope and its Cap'n Proto bytes. The only code (with the
// generated headers) that touches capnp; library exceptions stop here and become a Status.
// Thread safety: free functions with no shared state.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"
#include "gossip/envelope.h"

namespace murmur::proto {

// Limits applied to bytes from the network, which are untrusted.
struct DecodeLimits {
  // A header frame larger than this is rejected before parsing (kResourceExhausted).
  size_t max_header_bytes = 256 * 1024;
  // Cap'n Proto's traversal limit, in 8-byte words: bounds the work a crafted message with
  // shared or looping pointers can cause (capnp/message.h ReaderOptions).
  uint64_t traversal_limit_words = 64 * 1024;
  // Bounds recursion through nested structs.
  int nesting_limit = 16;
  // Member entries in one digest or gossip list, and bytes in one address or cluster id.
  size_t max_members = 4096;
  size_t max_text_bytes = 256;
};

// Why a message was refused, for a counter label (names are stable: see RejectionName).
enum class Rejection : uint8_t {
  kNone = 0,
  kOversized,       // larger than a limit
  kMalformed,       // not a well-formed capnp message
  kVersion,         // another schema version
  kCluster,         // another cluster
  kUnknownPayload,  // a payload kind this build does not know
  kInvalidField,    // a field out of range (enum, text length, frame count for the kind)
  kFramesMissing,   // fewer (or more) tensor frames than the header announces
  kCount,
};
std::string_view RejectionName(Rejection r);

// The header frame for `envelope`: a flat (unpacked) single-segment capnp message.
std::string EncodeEnvelope(const gossip::Envelope& envelope);

// Parses a header frame. Never crashes and never reads outside `bytes`. Errors:
//   kResourceExhausted  larger than limits.max_header_bytes, over the traversal limit, or too
//                       many members / too long a text
//   kDataLoss           not a well-formed capnp message (truncated, bad pointers, odd length)
//   kFailedPrecondition another schema version, another cluster, or a payload this build does
//                       not know
//   kInvalidArgument    a field out of range (unknown member state, wrong frame count for the
//                       payload kind)
// `expected_cluster` empty accepts any cluster (for tools that inspect traffic). `why`, when
// given, is set to the reason (kNone on success).
StatusOr<gossip::Envelope> DecodeEnvelope(std::span<const std::byte> bytes,
                                          std::string_view expected_cluster,
                                          const DecodeLimits& limits = DecodeLimits(),
                                          Rejection* why = nullptr);

// Checks that a decoded header arrived with the tensor frames it announces
// (kInvalidArgument, Rejection::kFramesMissing otherwise).
Status CheckPayloadFrames(const gossip::Envelope& envelope, size_t frames_received,
                          Rejection* why = nullptr);

}  // namespace murmur::proto
