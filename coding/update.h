#pragma once
// A compressed update as every receiver reconstructs it: the operator-independent form that
// the compression operators produce (compressor.h), the codec puts on the wire
// (update_codec.h) and gossip adds into dense vectors.
//
// `values` hold exactly the floats a receiver decodes, never the pre-quantization inputs, so
// the sender's error feedback (residual = input - update) accounts for every bit of loss and
// encode -> decode is exact. The factories below are the only way values get their format:
// they round and flush, so any Update built through them encodes without loss.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace murmur::coding {

// Which operator made an update (carried on the wire for metrics and debugging; decoding does
// not depend on it). Values are wire codes: append, never renumber.
enum class Operator : uint8_t {
  kNone = 0,         // dense fp32, the reference
  kFp16 = 1,         // dense, fp16 precision
  kTopK = 2,         // exact top-k by magnitude
  kSampledTopK = 3,  // DGC sampled-threshold top-k
  kThreshold = 4,    // |v| >= tau, fixed or adaptive tau
  kOneBit = 5,       // Strom: indices and signs, one magnitude tau
  kQsgd = 6,         // stochastic quantization to s levels of the L2 norm
  kInt8 = 7,         // stochastic quantization to 127 levels of the max magnitude
};
inline constexpr int kOperatorCount = 8;
std::string_view OperatorName(Operator op);

// How values are represented on the wire (wire codes: append, never renumber).
enum class ValueCoding : uint8_t {
  // sign | exponent code (exponent_bits) | top mantissa_bits of the fp32 mantissa. Exponent code
  // 0 means exponent field 0 (zero or subnormal); code c > 0 means biased exponent base + c.
  // mantissa_bits 23 is fp32 precision, 10 is fp16 precision; a narrow exponent window relative
  // to a per-message base is how top-k values cost 25 (fp32) or 12 (fp16) bits instead of 32.
  kFloat = 0,
  kSign = 1,    // one bit (1 = negative); magnitude = scale
  kLevels = 2,  // sign bit | level in [0, levels]; value = scale * level / levels
};

struct ValueFormat {
  ValueCoding coding = ValueCoding::kFloat;
  uint8_t mantissa_bits = 23;  // kFloat: 23 or 10
  uint8_t exponent_bits = 8;   // kFloat: 1..8
  uint8_t exponent_base = 0;   // kFloat
  uint32_t levels = 0;         // kLevels: s >= 1
  float scale = 0;             // kSign, kLevels

  int BitsPerValue() const;
  static ValueFormat RawFloat32() { return {}; }  // bit-identical fp32
  friend bool operator==(const ValueFormat&, const ValueFormat&) = default;
};

struct Update {
  Operator op = Operator::kNone;
  uint32_t dimension = 0;
  // Dense: values.size() == dimension and indices is empty. Sparse: indices strictly
  // increasing, each < dimension, one per value.
  bool dense = false;
  std::vector<uint32_t> indices;
  std::vector<float> values;
  ValueFormat format;

  size_t count() const { return values.size(); }
  // Bytes its vectors hold (capacity: a reused Update keeps its largest size).
  size_t HeldBytes() const {
    return indices.capacity() * sizeof(uint32_t) + values.capacity() * sizeof(float);
  }
  // Resets to an empty sparse update of `dimension` (keeps the buffers' capacity).
  void Clear(Operator op, uint32_t dimension);
};

// x += alpha * update. REQUIRES x.size() == update.dimension (CHECKed).
void AddTo(const Update& update, float alpha, std::span<float> x);
void AddTo(const Update& update, double alpha, std::span<double> x);
// out = update as a dense vector. REQUIRES out.size() == update.dimension.
void Densify(const Update& update, std::span<float> out);

// Rounds `values` in place to `mantissa_bits` (23 or 10; round to nearest even) and chooses
// the narrowest exponent window that holds them, at most 8 bits (mantissa 23) or 5 bits
// (mantissa 10, fp16's width); values below a capped window are flushed to signed zero.
// REQUIRES finite values.
ValueFormat QuantizeFloats(std::span<float> values, int mantissa_bits);

// The bits of a finite float rounded to fp16 precision as QuantizeFloats rounds: to nearest
// even at mantissa bit 13, a carry moving into the exponent (the correctly rounded result),
// and a rounding past the largest finite float clamped to it. Branch-free, so loops over it
// vectorize.
inline uint32_t RoundToFp16Precision(uint32_t bits) {
  bits += 0xFFFu + ((bits >> 13) & 1u);
  bits &= ~0x1FFFu;
  const bool overflowed = ((bits >> 23) & 0xFFu) == 0xFFu;
  return overflowed ? (bits & 0x80000000u) | 0x7F7FE000u : bits;
}

// The exponent range QuantizeFloats accumulates: the largest biased exponent, and the smallest
// one >= 1 (255 when there is none). Spelled so that GCC 12 vectorizes the reductions: it does
// not through std::max's reference, nor a min fed by `e == 0 ? 255 : e`.
inline void ExtendExponentRange(uint32_t bits, uint32_t& emin, uint32_t& emax) {
  const uint32_t e = (bits >> 23) & 0xFFu;
  const uint32_t e_or_255 = e | (e == 0 ? 255u : 0u);
  emax = e > emax ? e : emax;
  emin = e_or_255 < emin ? e_or_255 : emin;
}

// The window QuantizeFloats picks for that range (exponent_bits, exponent_base); for fp16
// precision (mantissa 10) at most 5 bits wide, for fp32 precision 8.
ValueFormat FloatWindow(uint32_t emin, uint32_t emax, int mantissa_bits);

// The value of `level` out of `levels` steps of `scale`: the one formula sender and receiver
// share, so decoded values are bit-identical to the sender's.
inline float LevelValue(float scale, uint32_t levels, uint32_t level) {
  return static_cast<float>(static_cast<double>(scale) * level / levels);
}

// LevelValue for every level 0..levels, for the hot loops (REQUIRES levels <= kMaxLevelTable).
inline constexpr uint32_t kMaxLevelTable = 1u << 16;
void FillLevelTable(float scale, uint32_t levels, std::vector<float>& table);

}  // namespace murmur::coding
