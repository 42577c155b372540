#include "coding/update_codec.h"

#include <xxhash.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <string>

#include "base/check.h"
#include "coding/vector_ops.h"
#include "fmt/format.h"

namespace murmur::coding {
namespace {

static_assert(std::endian::native == std::endian::little, "the update format is little-endian");

constexpr uint16_t kMagic = 0x4D55;

template <typename T>
void Store(std::byte* p, T value) {
  std::memcpy(p, &value, sizeof(T));
}
template <typename T>
T Load(const std::byte* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

size_t VarintSize(uint32_t v) {
  // 7 payload bits per byte; 0 still takes one byte.
  return (static_cast<size_t>(std::bit_width(v | 1u)) + 6) / 7;
}

std::byte* PutVarint(std::byte* p, uint32_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<std::byte>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<std::byte>(v);
  return p;
}

size_t VarintSectionBytes(const Update& update) {
  size_t bytes = 0;
  uint32_t previous = 0;
  for (size_t i = 0; i < update.indices.size(); ++i) {
    const uint32_t index = update.indices[i];
    bytes += VarintSize(i == 0 ? index : index - previous);
    previous = index;
  }
  return bytes;
}

size_t BitmapBytes(uint32_t dimension) { return (static_cast<size_t>(dimension) + 7) / 8; }

size_t ValueBytes(uint64_t count, int bits_per_value) {
  return static_cast<size_t>((count * static_cast<uint64_t>(bits_per_value) + 7) / 8);
}

struct Layout {
  IndexCoding index_coding;
  size_t index_bytes;
  size_t value_bytes;
  size_t total() const { return kUpdateHeaderBytes + index_bytes + value_bytes; }
};

Layout ChooseLayout(const Update& update) {
  Layout layout{IndexCoding::kAll, 0,
                ValueBytes(update.values.size(), update.format.BitsPerValue())};
  if (!update.dense) {
    const size_t varint = VarintSectionBytes(update);
    const size_t bitmap = BitmapBytes(update.dimension);
    if (varint <= bitmap) {
      layout.index_coding = IndexCoding::kVarint;
      layout.index_bytes = varint;
    } else {
      layout.index_coding = IndexCoding::kBitmap;
      layout.index_bytes = bitmap;
    }
  }
  return layout;
}

// Packs codes of up to 32 bits LSB first.
class BitWriter {
 public:
  explicit BitWriter(std::byte* out) : out_(out) {}
  [[gnu::always_inline]] void Put(uint32_t code, int bits) {
    acc_ |= static_cast<uint64_t>(code) << filled_;
    filled_ += bits;
    if (filled_ >= 32) {
      Store<uint32_t>(out_, static_cast<uint32_t>(acc_));
      out_ += 4;
      acc_ >>= 32;
      filled_ -= 32;
    }
  }
  void Finish() {
    for (; filled_ > 0; filled_ -= 8) {
      *out_++ = static_cast<std::byte>(acc_ & 0xFF);
      acc_ >>= 8;
    }
  }

 private:
  std::byte* out_;
  uint64_t acc_ = 0;
  int filled_ = 0;
};

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

bool IsRawFloat32(const ValueFormat& f) { return f == ValueFormat::RawFloat32(); }

// The packed code of a float (layout in update.h); sets `bad` when the value lies outside the
// format (more mantissa bits, an exponent outside the window, non-finite), which the caller
// CHECKs once per update rather than once per value.
// The format's fields as locals: the encoder writes through std::byte pointers, which may alias
// anything, so fields read through a reference would be reloaded for every value.
struct FloatPacking {
  explicit FloatPacking(const ValueFormat& f)
      : mantissa_bits(f.mantissa_bits),
        exponent_bits(f.exponent_bits),
        base(f.exponent_base),
        dropped(23u - f.mantissa_bits),
        window(1u << f.exponent_bits) {}
  uint32_t mantissa_bits, exponent_bits, base, dropped, window;
};

inline uint32_t FloatCode(float value, const FloatPacking& f, uint32_t& bad) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint32_t sign = bits >> 31;
  const uint32_t exponent = (bits >> 23) & 0xFFu;
  const uint32_t mantissa = bits & 0x7FFFFFu;
  const uint32_t code = exponent == 0 ? 0 : exponent - f.base;
  bad |= mantissa & ((1u << f.dropped) - 1);
  bad |= static_cast<uint32_t>(exponent == 0xFF);
  bad |= static_cast<uint32_t>(exponent != 0 && (exponent <= f.base || code >= f.window));
  return (sign << (f.exponent_bits + f.mantissa_bits)) | (code << f.mantissa_bits) |
         (mantissa >> f.dropped);
}

uint32_t LevelCode(float value, const ValueFormat& f, int level_bits) {
  const float magnitude = std::fabs(value);
  uint32_t level = 0;
  if (f.scale > 0) {
    level = static_cast<uint32_t>(
        std::lround(static_cast<double>(magnitude) * f.levels / static_cast<double>(f.scale)));
  }
  MURMUR_CHECK(level <= f.levels && LevelValue(f.scale, f.levels, level) == magnitude)
      << "value " << value << " is not a level of scale " << f.scale << " / " << f.levels;
  return level | (static_cast<uint32_t>(std::signbit(value)) << level_bits);
}

void EncodeValues(const Update& update, std::byte* out, size_t value_bytes) {
  const ValueFormat& f = update.format;
  if (IsRawFloat32(f)) {
    MURMUR_CHECK(AllFinite(update.values)) << "non-finite value in an update";
    std::memcpy(out, update.values.data(), value_bytes);
    return;
  }
  const int bits = f.BitsPerValue();
  BitWriter writer(out);
  switch (f.coding) {
    case ValueCoding::kFloat: {
      uint32_t bad = 0;
      const FloatPacking packing(f);
      const float* values = update.values.data();
      const size_t count = update.values.size();
      for (size_t i = 0; i < count; ++i) writer.Put(FloatCode(values[i], packing, bad), bits);
      MURMUR_CHECK_EQ(bad, 0u) << "a value outside the float format (mantissa "
                               << int{f.mantissa_bits} << " bits, exponent base "
                               << int{f.exponent_base} << ", width " << int{f.exponent_bits}
                               << "): build updates with QuantizeFloats";
      break;
    }
    case ValueCoding::kSign:
      for (float v : update.values) {
        MURMUR_CHECK_EQ(std::fabs(v), f.scale) << "sign-coded value off its magnitude";
        writer.Put(std::signbit(v) ? 1 : 0, 1);
      }
      break;
    case ValueCoding::kLevels:
      if (f.levels <= kMaxLevelTable && f.scale > 0) {
        thread_local std::vector<float> table;
        FillLevelTable(f.scale, f.levels, table);
        const double per_level = f.levels / static_cast<double>(f.scale);
        const uint32_t sign_shift = static_cast<uint32_t>(bits - 1);
        const auto levels = static_cast<double>(f.levels);
        const float* level_value = table.data();  // thread_local lookups stay out of the loop
        uint32_t bad = 0;
        for (float v : update.values) {
          const float magnitude = std::fabs(v);
          const auto level =
              static_cast<uint32_t>(std::min(magnitude * per_level + 0.5, levels));
          bad |= static_cast<uint32_t>(level_value[level] != magnitude);
          writer.Put(level | (static_cast<uint32_t>(std::signbit(v)) << sign_shift), bits);
        }
        MURMUR_CHECK_EQ(bad, 0u) << "a value that is not a level of scale " << f.scale << " / "
                                 << f.levels;
      } else {
        for (float v : update.values) writer.Put(LevelCode(v, f, bits - 1), bits);
      }
      break;
  }
  writer.Finish();
}

uint64_t Checksum(std::span<const std::byte> encoded) {
  const uint64_t payload = XXH3_64bits(encoded.data() + kUpdateHeaderBytes,
                                       encoded.size() - kUpdateHeaderBytes);
  return XXH3_64bits_withSeed(encoded.data(), 32, payload);
}

Status Reject(DecodeFailure failure, std::string message, DecodeFailure* out) {
  if (out != nullptr) *out = failure;
  std::string text = fmt::format("update rejected ({}): {}", DecodeFailureName(failure), message);
  return failure == DecodeFailure::kChecksumMismatch ? DataLossError(text)
                                                     : InvalidArgumentError(text);
}

}  // namespace

std::string_view IndexCodingName(IndexCoding coding) {
  switch (coding) {
    case IndexCoding::kAll: return "all";
    case IndexCoding::kVarint: return "varint";
    case IndexCoding::kBitmap: return "bitmap";
  }
  return "unknown";
}

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

IndexCoding ChooseIndexCoding(const Update& update) { return ChooseLayout(update).index_coding; }

size_t EncodedSize(const Update& update) { return ChooseLayout(update).total(); }

double BytesPerNonZero(const Update& update) {
  if (update.values.empty()) return 0;
  return static_cast<double>(EncodedSize(update)) / static_cast<double>(update.values.size());
}

size_t EncodeDense(std::span<const float> values, std::vector<std::byte>& out) {
  Update u;
  u.Clear(Operator::kNone, static_cast<uint32_t>(values.size()));
  u.dense = true;
  u.values.assign(values.begin(), values.end());
  return EncodeUpdate(u, out);
}

size_t EncodeUpdate(const Update& update, std::vector<std::byte>& out) {
  MURMUR_CHECK(update.dense ? update.values.size() == update.dimension
                            : update.indices.size() == update.values.size())
      << "update with " << update.values.size() << " values, " << update.indices.size()
      << " indices, dimension " << update.dimension;
  const Layout layout = ChooseLayout(update);
  out.resize(layout.total());
  std::byte* p = out.data();
  const ValueFormat& f = update.format;
  const bool is_float = f.coding == ValueCoding::kFloat;
  Store<uint16_t>(p, kMagic);
  Store<uint8_t>(p + 2, kUpdateFormatVersion);
  Store<uint8_t>(p + 3, static_cast<uint8_t>(update.op));
  Store<uint8_t>(p + 4, static_cast<uint8_t>(layout.index_coding));
  Store<uint8_t>(p + 5, static_cast<uint8_t>(f.coding));
  Store<uint8_t>(p + 6, is_float ? f.mantissa_bits : 0);
  Store<uint8_t>(p + 7, is_float ? f.exponent_bits : 0);
  Store<uint8_t>(p + 8, is_float ? f.exponent_base : 0);
  std::memset(p + 9, 0, 3);
  Store<uint32_t>(p + 12, update.dimension);
  Store<uint32_t>(p + 16, static_cast<uint32_t>(update.values.size()));
  Store<float>(p + 20, f.coding == ValueCoding::kFloat ? 0.0f : f.scale);
  Store<uint32_t>(p + 24, f.coding == ValueCoding::kLevels ? f.levels : 0);
  Store<uint32_t>(p + 28, static_cast<uint32_t>(layout.index_bytes));

  std::byte* index = p + kUpdateHeaderBytes;
  uint32_t previous = 0;
  switch (layout.index_coding) {
    case IndexCoding::kAll: break;
    case IndexCoding::kVarint: {
      std::byte* q = index;
      const uint32_t* indices = update.indices.data();
      const size_t count = update.indices.size();
      const uint32_t dimension = update.dimension;
      uint32_t bad = 0;
      for (size_t i = 0; i < count; ++i) {
        const uint32_t current = indices[i];
        bad |= static_cast<uint32_t>(current >= dimension || (i > 0 && current <= previous));
        q = PutVarint(q, i == 0 ? current : current - previous);
        previous = current;
      }
      MURMUR_CHECK(bad == 0) << "indices must be increasing and below the dimension";
      MURMUR_CHECK_EQ(static_cast<size_t>(q - index), layout.index_bytes);
      break;
    }
    case IndexCoding::kBitmap: {
      std::memset(index, 0, layout.index_bytes);
      for (size_t i = 0; i < update.indices.size(); ++i) {
        const uint32_t current = update.indices[i];
        MURMUR_CHECK(current < update.dimension && (i == 0 || current > previous))
            << "indices must be increasing and below the dimension";
        index[current / 8] |= static_cast<std::byte>(1u << (current % 8));
        previous = current;
      }
      break;
    }
  }
  EncodeValues(update, index + layout.index_bytes, layout.value_bytes);
  Store<uint64_t>(p + 32, Checksum(out));
  return out.size();
}

void RewriteChecksum(std::span<std::byte> encoded) {
  MURMUR_CHECK_GE(encoded.size(), kUpdateHeaderBytes);
  Store<uint64_t>(encoded.data() + 32, Checksum(encoded));
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

void DensifyIfSmaller(Update& update) {
  if (update.dense || update.format.coding == ValueCoding::kSign) return;
  const size_t dense_bytes =
      kUpdateHeaderBytes + ValueBytes(update.dimension, update.format.BitsPerValue());
  // A varint costs at most 5 bytes: when even that bound is smaller, skip the exact size.
  const size_t sparse_bound = kUpdateHeaderBytes + 5 * update.indices.size() +
                              ValueBytes(update.values.size(), update.format.BitsPerValue());
  if (sparse_bound < dense_bytes || dense_bytes > EncodedSize(update)) return;
  std::vector<float> dense(update.dimension, 0.0f);
  for (size_t i = 0; i < update.values.size(); ++i) dense[update.indices[i]] = update.values[i];
  update.values = std::move(dense);
  update.indices.clear();
  update.dense = true;
}

}  // namespace murmur::coding
