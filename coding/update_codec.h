#pragma once
// The byte format of a compressed update: what gossip puts in a payload frame and what the
// metrics count. Little-endian throughout.
//
//   offset size  field
//        0    2  magic 0x4D55 ("UM")
//        2    1  format version (kUpdateFormatVersion)
//        3    1  operator (update.h, informational)
//        4    1  index coding: 0 all (dense), 1 varint deltas, 2 bitmap
//        5    1  value coding (update.h)
//        6    1  mantissa bits      } kFloat only,
//        7    1  exponent bits      } zero otherwise
//        8    1  exponent base      }
//        9    3  reserved, zero
//       12    4  dimension d
//       16    4  count of values
//       20    4  scale (fp32; kSign, kLevels)
//       24    4  levels (kLevels)
//       28    4  index section bytes
//       32    8  XXH3-64 of bytes [0, 32) and of the payload
//       40       index section, then values bit-packed LSB first, BitsPerValue() each
//
// Index coding is chosen by size: varint deltas (the first index as is, then the difference
// to the previous one, which is >= 1) or a bitmap of ceil(d/8) bytes, whichever is smaller;
// the bitmap wins above roughly 1/8 density, where every delta costs one byte (DL4J's 1/16
// rule is for 4-byte indices).
//
// Decoding treats its input as untrusted: every check below runs before the output is
// trusted, and a failure is a Status plus a DecodeFailure to count, never a crash.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "coding/update.h"

namespace murmur::coding {

inline constexpr uint8_t kUpdateFormatVersion = 1;
inline constexpr size_t kUpdateHeaderBytes = 40;

enum class IndexCoding : uint8_t { kAll = 0, kVarint = 1, kBitmap = 2 };
std::string_view IndexCodingName(IndexCoding coding);

// The coding EncodeUpdate will choose for `update`.
IndexCoding ChooseIndexCoding(const Update& update);

// Exact encoded size in bytes, header included.
size_t EncodedSize(const Update& update);

// Encoded bytes per value sent (header included); 0 for an empty update.
double BytesPerNonZero(const Update& update);

// Replaces `out` with the encoding of `update` and returns its size (== EncodedSize).
// REQUIRES a well-formed update (built by a Compressor or the update.h factories): a value the
// format cannot represent exactly is a broken invariant and CHECK-fails.
size_t EncodeUpdate(const Update& update, std::vector<std::byte>& out);

// Replaces `out` with the encoding of `values` as a dense fp32 update (bit-exact: what a
// receiver decodes is `values`). Snapshots of a whole model use it.
size_t EncodeDense(std::span<const float> values, std::vector<std::byte>& out);

// Why a decode failed, one per check; stable names for a metric label.
enum class DecodeFailure : uint8_t {
  kNone = 0,
  kTruncated,           // shorter than the header or than the sizes it declares
  kTrailingBytes,       // longer than the header declares
  kBadHeader,           // magic, unknown version/operator/coding, impossible field values
  kWrongDimension,      // dimension differs from the receiver's model
  kChecksumMismatch,
  kMalformedIndices,    // overlong or unterminated varint, bitmap count differs from count
  kIndexOutOfRange,     // index >= dimension
  kIndexNotIncreasing,  // a repeated index (delta 0)
  kBadValue,            // a level above `levels`
  kNonFinite,           // a NaN or infinite value or scale
};
inline constexpr int kDecodeFailureCount = 11;
std::string_view DecodeFailureName(DecodeFailure failure);

// Decodes `bytes` into `out` (reusing its buffers). Returns kDataLoss for a checksum mismatch,
// kInvalidArgument for everything else, with a message naming the field; `failure` (optional)
// receives the reason. On failure `out` holds unspecified contents but no write went out of
// its own buffers.
Status DecodeUpdate(std::span<const std::byte> bytes, uint32_t expected_dimension, Update& out,
                    DecodeFailure* failure = nullptr);

// Recomputes the checksum of an encoded update in place. For tests and fuzzers that craft
// payloads which must get past the checksum to reach a later check.
void RewriteChecksum(std::span<std::byte> encoded);

// Turns a sparse update dense in place when its dense encoding is no larger (e.g. QSGD with
// few zero levels, top-k at high density). Sign-coded updates have no zero and stay sparse.
void DensifyIfSmaller(Update& update);

// A dense update of `dimension` values at b bits each: the count of nonzero values under which
// its bitmap-indexed sparse form (d/8 + nnz b/8 bytes against d b/8) is smaller, d (1 - 1/b).
size_t SparseBelow(size_t dimension, const ValueFormat& format);
// The sparse form of a dense update in place when it is smaller (`nonzero` of its values are
// not zero, fewer than SparseBelow): the rule both compressors, host and device, apply to a
// quantized update. True when it was made sparse.
bool SparsifyIfSmaller(Update& update, size_t nonzero);

}  // namespace murmur::coding
