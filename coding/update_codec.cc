#include "coding/update_codec.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "base/check.h"
#include "coding/update_wire.h"
#include "coding/vector_ops.h"
#include "fmt/format.h"

namespace murmur::coding {
namespace {

using wire::BitmapBytes;
using wire::Checksum;
using wire::IsRawFloat32;
using wire::kMagic;
using wire::Store;
using wire::ValueBytes;


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
      if (bits == 16) {
        // Whole 16-bit codes (dense fp16 with its full exponent window): LSB-first packing of
        // 16-bit codes is a little-endian uint16 array, built without the bit accumulator so
        // that the loop vectorizes (update_codec_test checks every code against the format).
        static_assert(std::endian::native == std::endian::little);
        thread_local std::vector<uint16_t> scratch;
        if (scratch.size() < count) scratch.resize(count);
        uint16_t* __restrict codes = scratch.data();
        // FloatCode with the widths this case implies (1 + 5 + 10 bits, 13 mantissa bits
        // dropped) and its checks as masks instead of branches.
        MURMUR_CHECK(f.mantissa_bits == 10 && f.exponent_bits == 5);
        const uint32_t base = f.exponent_base;
        uint32_t bad16 = 0;
        for (size_t i = 0; i < count; ++i) {
          const uint32_t v = std::bit_cast<uint32_t>(values[i]);
          const uint32_t exponent = (v >> 23) & 0xFFu;
          const uint32_t normal = exponent != 0 ? 0xFFFFFFFFu : 0u;
          const uint32_t code = (exponent - base) & normal;
          // One OR into the reduction per value: GCC 12 vectorizes no chain of them.
          bad16 |= (v & 0x1FFFu) | (exponent == 0xFFu ? 1u : 0u) |
                   (normal & ((exponent <= base ? 1u : 0u) | (code >= 32u ? 1u : 0u)));
          codes[i] = static_cast<uint16_t>(((v >> 31) << 15) | (code << 10) | ((v >> 13) & 0x3FFu));
        }
        bad |= bad16;
        std::memcpy(out, codes, count * sizeof(uint16_t));
      } else {
        for (size_t i = 0; i < count; ++i) writer.Put(FloatCode(values[i], packing, bad), bits);
      }
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

}  // namespace

void wire::WriteHeader(const Update& update, IndexCoding index_coding, size_t index_bytes,
                       std::byte* p) {
  const ValueFormat& f = update.format;
  const bool is_float = f.coding == ValueCoding::kFloat;
  Store<uint16_t>(p, kMagic);
  Store<uint8_t>(p + 2, kUpdateFormatVersion);
  Store<uint8_t>(p + 3, static_cast<uint8_t>(update.op));
  Store<uint8_t>(p + 4, static_cast<uint8_t>(index_coding));
  Store<uint8_t>(p + 5, static_cast<uint8_t>(f.coding));
  Store<uint8_t>(p + 6, is_float ? f.mantissa_bits : 0);
  Store<uint8_t>(p + 7, is_float ? f.exponent_bits : 0);
  Store<uint8_t>(p + 8, is_float ? f.exponent_base : 0);
  std::memset(p + 9, 0, 3);
  Store<uint32_t>(p + 12, update.dimension);
  Store<uint32_t>(p + 16, static_cast<uint32_t>(update.values.size()));
  Store<float>(p + 20, f.coding == ValueCoding::kFloat ? 0.0f : f.scale);
  Store<uint32_t>(p + 24, f.coding == ValueCoding::kLevels ? f.levels : 0);
  Store<uint32_t>(p + 28, static_cast<uint32_t>(index_bytes));
}

std::string_view IndexCodingName(IndexCoding coding) {
  switch (coding) {
    case IndexCoding::kAll: return "all";
    case IndexCoding::kVarint: return "varint";
    case IndexCoding::kBitmap: return "bitmap";
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
  wire::WriteHeader(update, layout.index_coding, layout.index_bytes, p);

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

size_t SparseBelow(size_t dimension, const ValueFormat& format) {
  const auto bits_per_value = static_cast<size_t>(format.BitsPerValue());
  return dimension - dimension / bits_per_value;
}

bool SparsifyIfSmaller(Update& update, size_t nonzero) {
  if (!update.dense || nonzero >= SparseBelow(update.values.size(), update.format)) return false;
  size_t kept = 0;
  update.indices.resize(nonzero);
  for (size_t i = 0; i < update.values.size(); ++i) {
    if (update.values[i] == 0) continue;
    update.indices[kept] = static_cast<uint32_t>(i);
    update.values[kept] = update.values[i];
    ++kept;
  }
  update.values.resize(kept);
  update.dense = false;
  return true;
}

}  // namespace murmur::coding
