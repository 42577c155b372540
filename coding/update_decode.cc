// DecodeUpdate: untrusted bytes to an Update, every field checked before it is used (the
// encoder is update_codec.cc; the shared layout is update_wire.h).

#include <bit>
#include <cmath>
#include <cstring>
#include <string>

#include "coding/level_codec.h"
#include "coding/update_codec.h"
#include "coding/update_wire.h"
#include "coding/vector_ops.h"
#include "fmt/format.h"

namespace murmur::coding {
namespace {

using wire::BitmapBytes;
using wire::Checksum;
using wire::IsRawFloat32;
using wire::kMagic;
using wire::Load;
using wire::ValueBytes;

class BitReader {
 public:
  BitReader(const std::byte* begin, const std::byte* end) : in_(begin), end_(end) {}
  [[gnu::always_inline]] uint32_t Get(int bits) {
    if (filled_ < bits) Refill();
    const uint32_t code = static_cast<uint32_t>(acc_ & ((uint64_t{1} << bits) - 1));
    acc_ >>= bits;
    filled_ -= bits;
    return code;
  }

 private:
  void Refill() {
    if (end_ - in_ >= 4) {
      acc_ |= static_cast<uint64_t>(Load<uint32_t>(in_)) << filled_;
      in_ += 4;
      filled_ += 32;
      return;
    }
    while (in_ < end_ && filled_ <= 56) {
      acc_ |= static_cast<uint64_t>(*in_++) << filled_;
      filled_ += 8;
    }
  }
  const std::byte* in_;
  const std::byte* end_;
  uint64_t acc_ = 0;
  int filled_ = 0;
};

// Dense fp16's 16-bit little-endian codes (sign, 5 bits of exponent above `base`, 10 of
// mantissa) to floats; false when a code's exponent reaches 0xFF (the caller names it). Its own
// function, not inlined: inside DecodeUpdate GCC 12 does not vectorize the loop.
[[gnu::noinline]] bool DecodeFp16Codes(const std::byte* __restrict in, uint32_t count,
                                       uint32_t base, float* __restrict values) {
  static_assert(std::endian::native == std::endian::little);
  uint32_t too_large = 0;
  for (size_t i = 0; i < count; ++i) {
    uint16_t code;
    std::memcpy(&code, in + 2 * i, sizeof(code));
    const uint32_t exponent_code = (code >> 10) & 31u;
    const uint32_t exponent = (base + exponent_code) & (exponent_code != 0 ? ~0u : 0u);
    too_large |= exponent >= 0xFFu ? 1u : 0u;
    values[i] = std::bit_cast<float>((uint32_t{code} >> 15 << 31) | (exponent << 23) |
                                     ((code & 0x3FFu) << 13));
  }
  return too_large == 0;
}

Status Reject(DecodeFailure failure, std::string message, DecodeFailure* out) {
  if (out != nullptr) *out = failure;
  std::string text = fmt::format("update rejected ({}): {}", DecodeFailureName(failure), message);
  return failure == DecodeFailure::kChecksumMismatch ? DataLossError(text)
                                                     : InvalidArgumentError(text);
}

using DF = DecodeFailure;

// The header's fields once it has passed every check: what the sections hold and how long they
// are.
struct Header {
  Operator op{};
  IndexCoding coding = IndexCoding::kAll;
  ValueFormat format;
  uint32_t dimension = 0;
  uint32_t count = 0;
  uint32_t index_bytes = 0;
  int bits = 0;
  size_t value_bytes = 0;
};

// The value format's fields (bytes 5..8, 20..27) for a known value coding: float packings, signs
// or levels.
Status ReadValueFormat(const std::byte* p, ValueFormat& format, DecodeFailure* failure) {
  const auto value_coding = Load<uint8_t>(p + 5);
  const auto mantissa_bits = Load<uint8_t>(p + 6);
  const auto exponent_bits = Load<uint8_t>(p + 7);
  const auto exponent_base = Load<uint8_t>(p + 8);
  const auto scale = Load<float>(p + 20);
  const auto levels = Load<uint32_t>(p + 24);
  format.coding = static_cast<ValueCoding>(value_coding);
  if (format.coding == ValueCoding::kFloat) {
    if (mantissa_bits != 23 && mantissa_bits != 10) {
      return Reject(DF::kBadHeader, fmt::format("mantissa bits {} (23 or 10)", mantissa_bits),
                    failure);
    }
    if (exponent_bits < 1 || exponent_bits > 8) {
      return Reject(DF::kBadHeader, fmt::format("exponent bits {} (1..8)", exponent_bits), failure);
    }
    if (scale != 0 || levels != 0) {
      return Reject(DF::kBadHeader, "scale and levels must be zero for float values", failure);
    }
    format.mantissa_bits = mantissa_bits;
    format.exponent_bits = exponent_bits;
    format.exponent_base = exponent_base;
    return OkStatus();
  }
  if (mantissa_bits != 0 || exponent_bits != 0 || exponent_base != 0) {
    return Reject(DF::kBadHeader, "float fields set for a non-float value coding", failure);
  }
  if (!std::isfinite(scale)) {
    return Reject(DF::kNonFinite, fmt::format("scale {} is not finite", scale), failure);
  }
  if (scale < 0) return Reject(DF::kBadHeader, fmt::format("negative scale {}", scale), failure);
  if (format.coding == ValueCoding::kLevels && (levels < 1 || levels > (1u << 30))) {
    return Reject(DF::kBadHeader, fmt::format("levels {} (1..2^30)", levels), failure);
  }
  if (format.coding == ValueCoding::kSign && levels != 0) {
    return Reject(DF::kBadHeader, "levels must be zero for sign values", failure);
  }
  format.scale = scale;
  format.levels = levels;
  return OkStatus();
}

// The fixed fields of the header (update_wire.h) except the value format.
Status ReadFixedFields(const std::byte* p, uint32_t expected_dimension, Header& h,
                       DecodeFailure* failure) {
  const auto magic = Load<uint16_t>(p);
  const auto version = Load<uint8_t>(p + 2);
  const auto op = Load<uint8_t>(p + 3);
  const auto index_coding = Load<uint8_t>(p + 4);
  const auto value_coding = Load<uint8_t>(p + 5);
  const bool reserved_zero = Load<uint8_t>(p + 9) == 0 && Load<uint16_t>(p + 10) == 0;
  if (magic != kMagic) {
    return Reject(DF::kBadHeader, fmt::format("bad magic {:#06x}", magic), failure);
  }
  if (version != kUpdateFormatVersion) {
    return Reject(
        DF::kBadHeader,
        fmt::format("format version {}, this build reads {}", version, kUpdateFormatVersion),
        failure);
  }
  if (op >= kOperatorCount) {
    return Reject(DF::kBadHeader, fmt::format("unknown operator {}", op), failure);
  }
  if (index_coding > 2) {
    return Reject(DF::kBadHeader, fmt::format("unknown index coding {}", index_coding), failure);
  }
  if (value_coding > 2) {
    return Reject(DF::kBadHeader, fmt::format("unknown value coding {}", value_coding), failure);
  }
  if (!reserved_zero) return Reject(DF::kBadHeader, "reserved bytes are not zero", failure);
  MURMUR_RETURN_IF_ERROR(ReadValueFormat(p, h.format, failure));
  h.op = static_cast<Operator>(op);
  h.coding = static_cast<IndexCoding>(index_coding);
  h.dimension = Load<uint32_t>(p + 12);
  h.count = Load<uint32_t>(p + 16);
  h.index_bytes = Load<uint32_t>(p + 28);
  if (h.dimension != expected_dimension) {
    return Reject(DF::kWrongDimension,
                  fmt::format("dimension {}, this model has {}", h.dimension, expected_dimension),
                  failure);
  }
  return OkStatus();
}

// The whole header: its fields, the sections' sizes against the bytes there are, the checksum.
Status ReadHeader(std::span<const std::byte> bytes, uint32_t expected_dimension, Header& h,
                  DecodeFailure* failure) {
  if (bytes.size() < kUpdateHeaderBytes) {
    return Reject(DF::kTruncated,
                  fmt::format("{} bytes is shorter than the {}-byte header", bytes.size(),
                              kUpdateHeaderBytes),
                  failure);
  }
  MURMUR_RETURN_IF_ERROR(ReadFixedFields(bytes.data(), expected_dimension, h, failure));
  if (h.count > h.dimension) {
    return Reject(DF::kBadHeader,
                  fmt::format("count {} exceeds dimension {}", h.count, h.dimension), failure);
  }
  if (h.coding == IndexCoding::kAll && (h.count != h.dimension || h.index_bytes != 0)) {
    return Reject(DF::kBadHeader,
                  fmt::format("dense update with count {} of dimension {} and {} index bytes",
                              h.count, h.dimension, h.index_bytes),
                  failure);
  }
  if (h.coding == IndexCoding::kBitmap && h.index_bytes != BitmapBytes(h.dimension)) {
    return Reject(DF::kBadHeader,
                  fmt::format("bitmap of {} bytes for dimension {}", h.index_bytes, h.dimension),
                  failure);
  }
  h.bits = h.format.BitsPerValue();
  h.value_bytes = ValueBytes(h.count, h.bits);
  const size_t expected = kUpdateHeaderBytes + size_t{h.index_bytes} + h.value_bytes;
  if (bytes.size() != expected) {
    return Reject(bytes.size() < expected ? DF::kTruncated : DF::kTrailingBytes,
                  fmt::format("{} bytes, the header declares {}", bytes.size(), expected), failure);
  }
  if (Load<uint64_t>(bytes.data() + 32) != Checksum(bytes)) {
    return Reject(DF::kChecksumMismatch, "payload checksum does not match", failure);
  }
  return OkStatus();
}

// Strictly increasing indices below the dimension, as LEB128 deltas that fill the section.
Status ReadVarintIndices(const std::byte* index, const Header& h, std::vector<uint32_t>& indices,
                         DecodeFailure* failure) {
  indices.resize(h.count);
  const std::byte* q = index;
  const std::byte* end = index + h.index_bytes;
  uint64_t previous = 0;
  for (uint32_t i = 0; i < h.count; ++i) {
    uint64_t delta = 0;
    int shift = 0;
    while (true) {
      if (q == end) {
        return Reject(DF::kMalformedIndices,
                      fmt::format("index section ends inside entry {} of {}", i, h.count), failure);
      }
      const auto byte = static_cast<uint8_t>(*q++);
      delta |= static_cast<uint64_t>(byte & 0x7F) << shift;
      if ((byte & 0x80) == 0) break;
      shift += 7;
      if (shift > 28) {
        return Reject(DF::kMalformedIndices, fmt::format("overlong varint at entry {}", i),
                      failure);
      }
    }
    if (i > 0 && delta == 0) {
      return Reject(DF::kIndexNotIncreasing, fmt::format("entry {} repeats index {}", i, previous),
                    failure);
    }
    const uint64_t index_value = (i == 0 ? 0 : previous) + delta;
    if (index_value >= h.dimension) {
      return Reject(
          DF::kIndexOutOfRange,
          fmt::format("entry {} has index {} >= dimension {}", i, index_value, h.dimension),
          failure);
    }
    indices[i] = static_cast<uint32_t>(index_value);
    previous = index_value;
  }
  if (q != end) {
    return Reject(DF::kMalformedIndices, fmt::format("{} bytes left in the index section", end - q),
                  failure);
  }
  return OkStatus();
}

// A bitmap of the dimension with `count` bits set and none past the dimension.
Status ReadBitmapIndices(const std::byte* index, const Header& h, std::vector<uint32_t>& indices,
                         DecodeFailure* failure) {
  size_t set = 0;
  for (uint32_t b = 0; b < h.index_bytes; ++b) {
    set += std::popcount(static_cast<uint8_t>(index[b]));
  }
  if (set != h.count) {
    return Reject(DF::kMalformedIndices,
                  fmt::format("bitmap has {} bits set, count is {}", set, h.count), failure);
  }
  const uint32_t tail_bits = h.dimension % 8;
  if (tail_bits != 0 && (static_cast<uint8_t>(index[h.index_bytes - 1]) >> tail_bits) != 0) {
    return Reject(DF::kIndexOutOfRange, "bitmap has bits set past the dimension", failure);
  }
  indices.resize(h.count);
  size_t n = 0;
  for (uint32_t b = 0; b < h.index_bytes; ++b) {
    for (auto byte = static_cast<uint8_t>(index[b]); byte != 0; byte &= byte - 1) {
      indices[n++] = b * 8 + std::countr_zero(byte);
    }
  }
  return OkStatus();
}

// Float codes narrower than fp32: sign, exponent above the base, mantissa; an exponent that
// reaches 0xFF (infinity or NaN) is refused.
Status ReadFloatValues(const std::byte* in, const Header& h, float* values,
                       DecodeFailure* failure) {
  const ValueFormat& format = h.format;
  const int mb = format.mantissa_bits;
  if (mb == 10 && format.exponent_bits == 5) {
    // Dense fp16's whole 16-bit little-endian codes (the encoder's fast path, mirrored): no bit
    // reader, and the exponent check as a flag, so that the loop vectorizes; a flagged update is
    // searched again for the value to name.
    const uint32_t base = format.exponent_base;
    if (DecodeFp16Codes(in, h.count, base, values)) return OkStatus();
    for (uint32_t i = 0; i < h.count; ++i) {
      uint16_t code;
      std::memcpy(&code, in + 2 * size_t{i}, sizeof(code));
      const uint32_t exponent_code = (code >> 10) & 31u;
      if (exponent_code != 0 && base + exponent_code >= 0xFFu) {
        return Reject(DF::kNonFinite,
                      fmt::format("value {} has exponent {}", i, base + exponent_code), failure);
      }
    }
    return OkStatus();
  }
  const int dropped = 23 - mb;
  const uint32_t mantissa_mask = (1u << mb) - 1;
  const uint32_t code_mask = (1u << format.exponent_bits) - 1;
  BitReader reader(in, in + h.value_bytes);
  for (uint32_t i = 0; i < h.count; ++i) {
    const uint32_t code = reader.Get(h.bits);
    const uint32_t exponent_code = (code >> mb) & code_mask;
    const uint32_t exponent = exponent_code == 0 ? 0 : format.exponent_base + exponent_code;
    if (exponent >= 0xFF) {
      return Reject(DF::kNonFinite, fmt::format("value {} has exponent {}", i, exponent), failure);
    }
    const uint32_t sign = code >> (mb + format.exponent_bits);
    values[i] =
        std::bit_cast<float>((sign << 31) | (exponent << 23) | ((code & mantissa_mask) << dropped));
  }
  return OkStatus();
}

// QSGD levels: a sign bit and a level no higher than `levels`, worth LevelValue.
Status ReadLevelValues(const std::byte* in, const Header& h, float* values,
                       DecodeFailure* failure) {
  const ValueFormat& format = h.format;
  if (h.bits == 8 && internal::DecodeByteLevels(in, h.count, format.scale, format.levels, values)) {
    return OkStatus();  // int8's one-byte codes, 8 at a time; a refusal is searched below
  }
  const int level_bits = h.bits - 1;
  const uint32_t level_mask = (1u << level_bits) - 1;
  thread_local std::vector<float> table;
  const bool tabled = format.levels <= kMaxLevelTable;
  if (tabled) FillLevelTable(format.scale, format.levels, table);
  const float* level_value = table.data();
  BitReader reader(in, in + h.value_bytes);
  for (uint32_t i = 0; i < h.count; ++i) {
    const uint32_t code = reader.Get(h.bits);
    const uint32_t level = code & level_mask;
    if (level > format.levels) {
      return Reject(DF::kBadValue,
                    fmt::format("value {} has level {} above {}", i, level, format.levels),
                    failure);
    }
    const float magnitude =
        tabled ? level_value[level] : LevelValue(format.scale, format.levels, level);
    values[i] =
        std::bit_cast<float>(std::bit_cast<uint32_t>(magnitude) | ((code >> level_bits) << 31));
  }
  return OkStatus();
}

Status ReadValues(const std::byte* in, const Header& h, std::vector<float>& values,
                  DecodeFailure* failure) {
  values.resize(h.count);
  if (IsRawFloat32(h.format)) {
    std::memcpy(values.data(), in, h.value_bytes);
    if (const auto bad = FirstNonFinite(values)) {
      return Reject(DF::kNonFinite, fmt::format("value {} is {}", *bad, values[*bad]), failure);
    }
    return OkStatus();
  }
  switch (h.format.coding) {
    case ValueCoding::kFloat:
      return ReadFloatValues(in, h, values.data(), failure);
    case ValueCoding::kSign: {
      BitReader reader(in, in + h.value_bytes);
      const uint32_t magnitude = std::bit_cast<uint32_t>(h.format.scale);
      for (uint32_t i = 0; i < h.count; ++i) {
        // Branch-free: signs are random, a branch on them mispredicts half the time.
        values[i] = std::bit_cast<float>(magnitude | (reader.Get(1) << 31));
      }
      return OkStatus();
    }
    case ValueCoding::kLevels:
      return ReadLevelValues(in, h, values.data(), failure);
  }
  return OkStatus();
}

}  // namespace

std::string_view DecodeFailureName(DecodeFailure failure) {
  switch (failure) {
    case DecodeFailure::kNone:
      return "none";
    case DecodeFailure::kTruncated:
      return "truncated";
    case DecodeFailure::kTrailingBytes:
      return "trailing_bytes";
    case DecodeFailure::kBadHeader:
      return "bad_header";
    case DecodeFailure::kWrongDimension:
      return "wrong_dimension";
    case DecodeFailure::kChecksumMismatch:
      return "checksum_mismatch";
    case DecodeFailure::kMalformedIndices:
      return "malformed_indices";
    case DecodeFailure::kIndexOutOfRange:
      return "index_out_of_range";
    case DecodeFailure::kIndexNotIncreasing:
      return "index_not_increasing";
    case DecodeFailure::kBadValue:
      return "bad_value";
    case DecodeFailure::kNonFinite:
      return "non_finite";
  }
  return "unknown";
}

Status DecodeUpdate(std::span<const std::byte> bytes, uint32_t expected_dimension, Update& out,
                    DecodeFailure* failure) {
  if (failure != nullptr) *failure = DecodeFailure::kNone;
  Header h;
  MURMUR_RETURN_IF_ERROR(ReadHeader(bytes, expected_dimension, h, failure));
  out.op = h.op;
  out.dimension = h.dimension;
  out.dense = h.coding == IndexCoding::kAll;
  out.format = h.format;
  out.indices.clear();
  const std::byte* index = bytes.data() + kUpdateHeaderBytes;
  if (h.coding == IndexCoding::kVarint) {
    MURMUR_RETURN_IF_ERROR(ReadVarintIndices(index, h, out.indices, failure));
  } else if (h.coding == IndexCoding::kBitmap) {
    MURMUR_RETURN_IF_ERROR(ReadBitmapIndices(index, h, out.indices, failure));
  }
  return ReadValues(index + h.index_bytes, h, out.values, failure);
}

}  // namespace murmur::coding
