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

}  // namespace

std::string_view DecodeFailureName(DecodeFailure failure) {
  switch (failure) {
    case DecodeFailure::kNone: return "none";
    case DecodeFailure::kTruncated: return "truncated";
    case DecodeFailure::kTrailingBytes: return "trailing_bytes";
    case DecodeFailure::kBadHeader: return "bad_header";
    case DecodeFailure::kWrongDimension: return "wrong_dimension";
    case DecodeFailure::kChecksumMismatch: return "checksum_mismatch";
    case DecodeFailure::kMalformedIndices: return "malformed_indices";
    case DecodeFailure::kIndexOutOfRange: return "index_out_of_range";
    case DecodeFailure::kIndexNotIncreasing: return "index_not_increasing";
    case DecodeFailure::kBadValue: return "bad_value";
    case DecodeFailure::kNonFinite: return "non_finite";
  }
  return "unknown";
}

Status DecodeUpdate(std::span<const std::byte> bytes, uint32_t expected_dimension, Update& out,
                    DecodeFailure* failure) {
  if (failure != nullptr) *failure = DecodeFailure::kNone;
  auto reject = [failure](DecodeFailure why, std::string message) {
    return Reject(why, std::move(message), failure);
  };
  if (bytes.size() < kUpdateHeaderBytes) {
    return reject(DecodeFailure::kTruncated,
                  fmt::format("{} bytes is shorter than the {}-byte header", bytes.size(),
                              kUpdateHeaderBytes));
  }
  const std::byte* p = bytes.data();
  const auto magic = Load<uint16_t>(p);
  const auto version = Load<uint8_t>(p + 2);
  const auto op = Load<uint8_t>(p + 3);
  const auto index_coding = Load<uint8_t>(p + 4);
  const auto value_coding = Load<uint8_t>(p + 5);
  const auto mantissa_bits = Load<uint8_t>(p + 6);
  const auto exponent_bits = Load<uint8_t>(p + 7);
  const auto exponent_base = Load<uint8_t>(p + 8);
  const bool reserved_zero = Load<uint8_t>(p + 9) == 0 && Load<uint16_t>(p + 10) == 0;
  const auto dimension = Load<uint32_t>(p + 12);
  const auto count = Load<uint32_t>(p + 16);
  const auto scale = Load<float>(p + 20);
  const auto levels = Load<uint32_t>(p + 24);
  const auto index_bytes = Load<uint32_t>(p + 28);

  using DF = DecodeFailure;
  if (magic != kMagic) return reject(DF::kBadHeader, fmt::format("bad magic {:#06x}", magic));
  if (version != kUpdateFormatVersion) {
    return reject(DF::kBadHeader, fmt::format("format version {}, this build reads {}", version,
                                              kUpdateFormatVersion));
  }
  if (op >= kOperatorCount) return reject(DF::kBadHeader, fmt::format("unknown operator {}", op));
  if (index_coding > 2) {
    return reject(DF::kBadHeader, fmt::format("unknown index coding {}", index_coding));
  }
  if (value_coding > 2) {
    return reject(DF::kBadHeader, fmt::format("unknown value coding {}", value_coding));
  }
  if (!reserved_zero) return reject(DF::kBadHeader, "reserved bytes are not zero");
  ValueFormat format;
  format.coding = static_cast<ValueCoding>(value_coding);
  if (format.coding == ValueCoding::kFloat) {
    if (mantissa_bits != 23 && mantissa_bits != 10) {
      return reject(DF::kBadHeader, fmt::format("mantissa bits {} (23 or 10)", mantissa_bits));
    }
    if (exponent_bits < 1 || exponent_bits > 8) {
      return reject(DF::kBadHeader, fmt::format("exponent bits {} (1..8)", exponent_bits));
    }
    if (scale != 0 || levels != 0) {
      return reject(DF::kBadHeader, "scale and levels must be zero for float values");
    }
    format.mantissa_bits = mantissa_bits;
    format.exponent_bits = exponent_bits;
    format.exponent_base = exponent_base;
  } else {
    if (mantissa_bits != 0 || exponent_bits != 0 || exponent_base != 0) {
      return reject(DF::kBadHeader, "float fields set for a non-float value coding");
    }
    if (!std::isfinite(scale)) {
      return reject(DF::kNonFinite, fmt::format("scale {} is not finite", scale));
    }
    if (scale < 0) return reject(DF::kBadHeader, fmt::format("negative scale {}", scale));
    if (format.coding == ValueCoding::kLevels && (levels < 1 || levels > (1u << 30))) {
      return reject(DF::kBadHeader, fmt::format("levels {} (1..2^30)", levels));
    }
    if (format.coding == ValueCoding::kSign && levels != 0) {
      return reject(DF::kBadHeader, "levels must be zero for sign values");
    }
    format.scale = scale;
    format.levels = levels;
  }
  if (dimension != expected_dimension) {
    return reject(DF::kWrongDimension,
                  fmt::format("dimension {}, this model has {}", dimension, expected_dimension));
  }
  if (count > dimension) {
    return reject(DF::kBadHeader, fmt::format("count {} exceeds dimension {}", count, dimension));
  }
  const auto coding = static_cast<IndexCoding>(index_coding);
  if (coding == IndexCoding::kAll && (count != dimension || index_bytes != 0)) {
    return reject(DF::kBadHeader,
                  fmt::format("dense update with count {} of dimension {} and {} index bytes",
                              count, dimension, index_bytes));
  }
  if (coding == IndexCoding::kBitmap && index_bytes != BitmapBytes(dimension)) {
    return reject(DF::kBadHeader, fmt::format("bitmap of {} bytes for dimension {}", index_bytes,
                                              dimension));
  }
  const int bits = format.BitsPerValue();
  const size_t value_bytes = ValueBytes(count, bits);
  const size_t expected = kUpdateHeaderBytes + size_t{index_bytes} + value_bytes;
  if (bytes.size() < expected) {
    return reject(DF::kTruncated, fmt::format("{} bytes, the header declares {}", bytes.size(),
                                              expected));
  }
  if (bytes.size() > expected) {
    return reject(DF::kTrailingBytes, fmt::format("{} bytes, the header declares {}",
                                                  bytes.size(), expected));
  }
  if (Load<uint64_t>(p + 32) != Checksum(bytes)) {
    return reject(DF::kChecksumMismatch, "payload checksum does not match");
  }

  out.op = static_cast<Operator>(op);
  out.dimension = dimension;
  out.dense = coding == IndexCoding::kAll;
  out.format = format;
  out.indices.clear();
  const std::byte* index = p + kUpdateHeaderBytes;
  if (coding == IndexCoding::kVarint) {
    out.indices.resize(count);
    const std::byte* q = index;
    const std::byte* end = index + index_bytes;
    uint64_t previous = 0;
    for (uint32_t i = 0; i < count; ++i) {
      uint64_t delta = 0;
      int shift = 0;
      while (true) {
        if (q == end) {
          return reject(DF::kMalformedIndices,
                        fmt::format("index section ends inside entry {} of {}", i, count));
        }
        const auto byte = static_cast<uint8_t>(*q++);
        delta |= static_cast<uint64_t>(byte & 0x7F) << shift;
        if ((byte & 0x80) == 0) break;
        shift += 7;
        if (shift > 28) {
          return reject(DF::kMalformedIndices, fmt::format("overlong varint at entry {}", i));
        }
      }
      if (i > 0 && delta == 0) {
        return reject(DF::kIndexNotIncreasing,
                      fmt::format("entry {} repeats index {}", i, previous));
      }
      const uint64_t index_value = (i == 0 ? 0 : previous) + delta;
      if (index_value >= dimension) {
        return reject(DF::kIndexOutOfRange, fmt::format("entry {} has index {} >= dimension {}",
                                                        i, index_value, dimension));
      }
      out.indices[i] = static_cast<uint32_t>(index_value);
      previous = index_value;
    }
    if (q != end) {
      return reject(DF::kMalformedIndices,
                    fmt::format("{} bytes left in the index section", end - q));
    }
  } else if (coding == IndexCoding::kBitmap) {
    size_t set = 0;
    for (uint32_t b = 0; b < index_bytes; ++b) set += std::popcount(static_cast<uint8_t>(index[b]));
    if (set != count) {
      return reject(DF::kMalformedIndices,
                    fmt::format("bitmap has {} bits set, count is {}", set, count));
    }
    const uint32_t tail_bits = dimension % 8;
    if (tail_bits != 0 &&
        (static_cast<uint8_t>(index[index_bytes - 1]) >> tail_bits) != 0) {
      return reject(DF::kIndexOutOfRange, "bitmap has bits set past the dimension");
    }
    out.indices.resize(count);
    size_t n = 0;
    for (uint32_t b = 0; b < index_bytes; ++b) {
      for (auto byte = static_cast<uint8_t>(index[b]); byte != 0; byte &= byte - 1) {
        out.indices[n++] = b * 8 + std::countr_zero(byte);
      }
    }
  }

  out.values.resize(count);
  const std::byte* value_begin = index + index_bytes;
  if (IsRawFloat32(format)) {
    std::memcpy(out.values.data(), value_begin, value_bytes);
    if (const auto bad = FirstNonFinite(out.values)) {
      return reject(DF::kNonFinite, fmt::format("value {} is {}", *bad, out.values[*bad]));
    }
    return OkStatus();
  }
  BitReader reader(value_begin, value_begin + value_bytes);
  switch (format.coding) {
    case ValueCoding::kFloat: {
      const int mb = format.mantissa_bits;
      const int dropped = 23 - mb;
      const uint32_t mantissa_mask = (1u << mb) - 1;
      const uint32_t code_mask = (1u << format.exponent_bits) - 1;
      if (mb == 10 && format.exponent_bits == 5) {
        // Dense fp16's whole 16-bit little-endian codes (the encoder's fast path, mirrored):
        // no bit reader, and the exponent check as a flag, so that the loop vectorizes; a
        // flagged update is searched again for the value to name.
        const uint32_t base = format.exponent_base;
        if (!DecodeFp16Codes(value_begin, count, base, out.values.data())) {
          for (uint32_t i = 0; i < count; ++i) {
            uint16_t code;
            std::memcpy(&code, value_begin + 2 * size_t{i}, sizeof(code));
            const uint32_t exponent_code = (code >> 10) & 31u;
            if (exponent_code != 0 && base + exponent_code >= 0xFFu) {
              return reject(DF::kNonFinite,
                            fmt::format("value {} has exponent {}", i, base + exponent_code));
            }
          }
        }
        break;
      }
      for (uint32_t i = 0; i < count; ++i) {
        const uint32_t code = reader.Get(bits);
        const uint32_t exponent_code = (code >> mb) & code_mask;
        const uint32_t exponent = exponent_code == 0 ? 0 : format.exponent_base + exponent_code;
        if (exponent >= 0xFF) {
          return reject(DF::kNonFinite, fmt::format("value {} has exponent {}", i, exponent));
        }
        const uint32_t sign = code >> (mb + format.exponent_bits);
        out.values[i] = std::bit_cast<float>((sign << 31) | (exponent << 23) |
                                             ((code & mantissa_mask) << dropped));
      }
      break;
    }
    case ValueCoding::kSign:
      for (uint32_t i = 0; i < count; ++i) {
        // Branch-free: signs are random, a branch on them mispredicts half the time.
        out.values[i] = std::bit_cast<float>(std::bit_cast<uint32_t>(format.scale) |
                                             (reader.Get(1) << 31));
      }
      break;
    case ValueCoding::kLevels: {
      const int level_bits = bits - 1;
      if (bits == 8 && internal::DecodeByteLevels(value_begin, count, format.scale, format.levels,
                                                  out.values.data())) {
        break;  // int8's one-byte codes, 8 at a time; a refusal is searched below for its name
      }
      const uint32_t level_mask = (1u << level_bits) - 1;
      thread_local std::vector<float> table;
      const bool tabled = format.levels <= kMaxLevelTable;
      if (tabled) FillLevelTable(format.scale, format.levels, table);
      const float* level_value = table.data();
      for (uint32_t i = 0; i < count; ++i) {
        const uint32_t code = reader.Get(bits);
        const uint32_t level = code & level_mask;
        if (level > format.levels) {
          return reject(DF::kBadValue, fmt::format("value {} has level {} above {}", i, level,
                                                   format.levels));
        }
        const float magnitude =
            tabled ? level_value[level] : LevelValue(format.scale, format.levels, level);
        out.values[i] = std::bit_cast<float>(std::bit_cast<uint32_t>(magnitude) |
                                             ((code >> level_bits) << 31));
      }
      break;
    }
  }
  return OkStatus();
}

}  // namespace murmur::coding
