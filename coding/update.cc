#include "coding/update.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "base/check.h"

namespace murmur::coding {
namespace {

template <typename T>
void AddToImpl(const Update& update, T alpha, std::span<T> x) {
  MURMUR_CHECK_EQ(x.size(), update.dimension);
  const float* v = update.values.data();
  if (update.dense) {
    MURMUR_CHECK_EQ(update.values.size(), update.dimension);
    for (size_t i = 0; i < x.size(); ++i) x[i] += alpha * static_cast<T>(v[i]);
    return;
  }
  MURMUR_CHECK_EQ(update.indices.size(), update.values.size());
  const uint32_t* idx = update.indices.data();
  for (size_t i = 0; i < update.values.size(); ++i) x[idx[i]] += alpha * static_cast<T>(v[i]);
}

}  // namespace

std::string_view OperatorName(Operator op) {
  switch (op) {
    case Operator::kNone: return "none";
    case Operator::kFp16: return "fp16";
    case Operator::kTopK: return "topk";
    case Operator::kSampledTopK: return "dgc";
    case Operator::kThreshold: return "threshold";
    case Operator::kOneBit: return "onebit";
    case Operator::kQsgd: return "qsgd";
    case Operator::kInt8: return "int8";
  }
  return "unknown";
}

int ValueFormat::BitsPerValue() const {
  switch (coding) {
    case ValueCoding::kFloat: return 1 + exponent_bits + mantissa_bits;
    case ValueCoding::kSign: return 1;
    case ValueCoding::kLevels: return 1 + std::bit_width(levels);
  }
  MURMUR_CHECK(false) << "unknown value coding " << static_cast<int>(coding);
  return 0;
}

void Update::Clear(Operator new_op, uint32_t new_dimension) {
  op = new_op;
  dimension = new_dimension;
  dense = false;
  indices.clear();
  values.clear();
  format = ValueFormat{};
}

void AddTo(const Update& update, float alpha, std::span<float> x) { AddToImpl(update, alpha, x); }
void AddTo(const Update& update, double alpha, std::span<double> x) {
  AddToImpl(update, alpha, x);
}

void Densify(const Update& update, std::span<float> out) {
  MURMUR_CHECK_EQ(out.size(), update.dimension);
  if (update.dense) {
    std::copy(update.values.begin(), update.values.end(), out.begin());
    return;
  }
  std::fill(out.begin(), out.end(), 0.0f);
  for (size_t i = 0; i < update.values.size(); ++i) out[update.indices[i]] = update.values[i];
}

void FillLevelTable(float scale, uint32_t levels, std::vector<float>& table) {
  MURMUR_CHECK_LE(levels, kMaxLevelTable);
  table.resize(levels + 1);
  for (uint32_t l = 0; l <= levels; ++l) table[l] = LevelValue(scale, levels, l);
}

ValueFormat FloatWindow(uint32_t emin, uint32_t emax, int mantissa_bits) {
  MURMUR_CHECK(mantissa_bits == 23 || mantissa_bits == 10) << "mantissa_bits " << mantissa_bits;
  const int max_exponent_bits = mantissa_bits == 23 ? 8 : 5;
  ValueFormat format;
  format.coding = ValueCoding::kFloat;
  format.mantissa_bits = static_cast<uint8_t>(mantissa_bits);
  if (emin == 255) {  // only zeros and subnormals: exponent code 0 carries them all
    format.exponent_bits = 1;
    format.exponent_base = 0;
    return format;
  }
  uint32_t base = emin - 1;
  int width = std::bit_width(emax - base);
  if (width > max_exponent_bits) {
    width = max_exponent_bits;
    base = emax - ((1u << width) - 1);
  }
  format.exponent_bits = static_cast<uint8_t>(width);
  format.exponent_base = static_cast<uint8_t>(base);
  return format;
}

ValueFormat QuantizeFloats(std::span<float> values, int mantissa_bits) {
  MURMUR_CHECK(mantissa_bits == 23 || mantissa_bits == 10) << "mantissa_bits " << mantissa_bits;
  uint32_t emax = 0;
  uint32_t emin = 255;  // smallest biased exponent >= 1
  // Branch-free bodies (selects, not ifs), so that both loops vectorize (-fopt-info-vec).
  if (mantissa_bits == 10) {
    for (float& v : values) {
      const uint32_t bits = RoundToFp16Precision(std::bit_cast<uint32_t>(v));
      v = std::bit_cast<float>(bits);
      ExtendExponentRange(bits, emin, emax);
    }
  } else {
    for (const float v : values) ExtendExponentRange(std::bit_cast<uint32_t>(v), emin, emax);
  }
  const ValueFormat format = FloatWindow(emin, emax, mantissa_bits);
  // A window capped below the smallest exponent flushes what lies under it.
  if (emin != 255 && format.exponent_base >= emin) {
    const uint32_t base = format.exponent_base;
    for (float& v : values) {
      const uint32_t e = (std::bit_cast<uint32_t>(v) >> 23) & 0xFFu;
      if (e != 0 && e <= base) v = std::copysign(0.0f, v);
    }
  }
  return format;
}

}  // namespace murmur::coding
