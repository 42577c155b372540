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
  size_t max_header_bytes = 64 * 1024;
  // Cap'n Proto's traversal limit, in 8-byte words: bounds the work a crafted message with
  // shared or looping pointers can cause (capnp/message.h ReaderOptions).
  uint64_t traversal_limit_words = 16 * 1024;
  // Bounds recursion through nested structs.
  int nesting_limit = 16;
};

// The header frame for `envelope`: a flat (unpacked) single-segment capnp message.
std::string EncodeEnvelope(const gossip::Envelope& envelope);

// Parses a header frame. Never crashes and never reads outside `bytes`. Errors:
//   kResourceExhausted  larger than limits.max_header_bytes, or over the traversal limit
//   kDataLoss           not a well-formed capnp message (truncated, bad pointers, odd length)
//   kFailedPrecondition another schema version, another cluster, or a payload this build does
//                       not know
// `expected_cluster` empty accepts any cluster (for tools that inspect traffic).
StatusOr<gossip::Envelope> DecodeEnvelope(std::span<const std::byte> bytes,
                                          std::string_view expected_cluster,
                                          const DecodeLimits& limits = DecodeLimits());

}  // namespace murmur::proto
