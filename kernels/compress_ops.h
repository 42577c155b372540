#pragma once
// Vector kernels behind the compression operators (coding/device_compressor.h): selection and
// compaction, exact top-k, sign packing, stochastic quantization, fp16, scatter-add and the
// reductions error feedback needs. They exist so a GPU node compresses where its gradient lives
// and only the compressed update crosses to the host.
//
// Same conventions as ops.h: shapes first (kInvalidArgument, nothing written), memory of the
// device, scalar results in host memory. The CPU versions are written for obviousness and are
// the reference the CUDA versions are compared with bit for bit: every kernel here is
// deterministic (the stochastic rounding draws from a counter-based hash of (seed, index), so
// both backends draw the same numbers).

#include <cmath>
#include <cstdint>
#include <span>

#include "base/status.h"
#include "kernels/device.h"

namespace murmur::kernels {

// *count = number of NaN or infinite entries of v.
Status CountNonFinite(const Device& device, std::span<const float> v, int64_t* count);

// y += alpha * x.
Status Axpy(const Device& device, float alpha, std::span<const float> x, std::span<float> y);

// Σ v_i² accumulated in double, and max |v_i|.
Status SumOfSquares(const Device& device, std::span<const float> v, double* out);
Status MaxAbs(const Device& device, std::span<const float> v, float* out);

// Every i with |v_i| >= tau, in increasing i: the first min(*total, capacity) go into
// indices/values (capacity = indices.size() = values.size()), *total counts all of them.
// REQUIRES tau > 0 (so zeros are never selected). A NaN is never selected; an infinity is.
Status SelectAtLeast(const Device& device, std::span<const float> v, float tau,
                     std::span<uint32_t> indices, std::span<float> values, int64_t* total);

// The k largest |v_i|, ties broken by the lower index, zeros never selected, in increasing i:
// *count = min(k, non-zeros of v). REQUIRES capacity >= min(k, v.size()) and finite v
// (non-finite entries make the choice unspecified; check with CountNonFinite first). On CUDA a
// radix select over the magnitude bits (no sort of v); v.size() < 2^32.
Status TopK(const Device& device, std::span<const float> v, int64_t k,
            std::span<uint32_t> indices, std::span<float> values, int64_t* count);

// values[i] = v[indices[i]] (indices < v.size(), not checked on the device).
Status Gather(const Device& device, std::span<const float> v, std::span<const uint32_t> indices,
              std::span<float> values);
// out[i] = v[start + i * stride]. REQUIRES the last position < v.size(), stride >= 1.
Status StridedGather(const Device& device, std::span<const float> v, int64_t start,
                     int64_t stride, std::span<float> out);

// x[indices[i]] += alpha * values[i]. Indices must be distinct (a decoded update's are strictly
// increasing), so no two threads write one element.
Status ScatterAdd(const Device& device, std::span<const uint32_t> indices,
                  std::span<const float> values, float alpha, std::span<float> x);

// Bit j of words[w] = sign bit of v[32 w + j] (1 = negative); unused bits of the last word are
// zero. REQUIRES words.size() == ceil(v.size() / 32).
Status PackSigns(const Device& device, std::span<const float> v, std::span<uint32_t> words);
// out[i] = bit i ? -magnitude : magnitude. REQUIRES words.size() == ceil(out.size() / 32).
Status UnpackSigns(const Device& device, std::span<const uint32_t> words, float magnitude,
                   std::span<float> out);

// QSGD's stochastic rounding (Alistarh et al. 2017, §3.1): a = |v_i| * per_level, level =
// floor(a) + (u_i < a - floor(a)), clamped to `levels`, signed like v_i; u_i in [0, 1) from
// LevelDraw(LevelSeed(seed), i) (StochasticLevel below). E[level] = a, so E[sign * level /
// per_level] = v_i. L is int8_t (levels <= 127) or int16_t (levels <= 32767).
template <typename L>
Status StochasticLevels(const Device& device, std::span<const float> v, double per_level,
                        uint32_t levels, uint64_t seed, std::span<L> out);
// out[i] = sign(level_i) * float(double(scale) * |level_i| / levels): coding's LevelValue, so
// sender and receiver reconstruct bit-identical values.
template <typename L>
Status LevelsToFloat(const Device& device, std::span<const L> level, float scale,
                     uint32_t levels, std::span<float> out);

// IEEE binary16 with round-to-nearest-even (subnormals kept, overflow to infinity), and back.
Status FloatToHalf(const Device& device, std::span<const float> v, std::span<uint16_t> out);
Status HalfToFloat(const Device& device, std::span<const uint16_t> h, std::span<float> out);

// splitmix64's finalizer: a 64-bit mix of a seed (per-step seeds of the quantizers).
inline constexpr uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The draws and the rounding of StochasticLevels, shared by the host compressor and both
// backends so that they quantize a vector to the same levels. Everything is 32-bit: with AVX2 a
// host loop over it runs 8 values wide (a 64-bit mix and double arithmetic would not).
//
// The draw for index i: murmur3's 32-bit finalizer over the folded seed + (i + 1) * golden.
inline constexpr uint32_t LevelSeed(uint64_t seed) {
  return static_cast<uint32_t>(seed ^ (seed >> 32));
}
inline constexpr uint32_t LevelDraw(uint32_t seed, uint32_t i) {
  uint32_t h = seed + (i + 1u) * 0x9E3779B9u;
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  return h ^ (h >> 16);
}

// per_level as float: a power-of-two pre-scale of |v| (exact) and a factor that stays finite,
// so a = (|v| * pre) * factor is |v| * per_level in float for every finite per_level (a tiny
// scale makes per_level exceed float's range).
struct LevelScale {
  float pre = 1;
  float factor = 0;
};
inline LevelScale MakeLevelScale(double per_level) {
  int exponent = 0;
  (void)std::frexp(per_level, &exponent);
  const int shift = exponent > 100 ? exponent - 100 : 0;
  return {static_cast<float>(std::ldexp(1.0, shift)),
          static_cast<float>(std::ldexp(per_level, -shift))};
}

// level = floor(a) + (u < a - floor(a)) for a = |v| * per_level clamped to `levels`, u = the
// draw's top 24 bits / 2^24 in [0, 1).
inline constexpr uint32_t StochasticLevel(float magnitude, LevelScale scale, uint32_t levels,
                                          uint32_t draw) {
  const float a = magnitude * scale.pre * scale.factor;
  const auto top = static_cast<float>(levels);
  const float clamped = a < top ? a : top;
  const auto floor_a = static_cast<float>(static_cast<int32_t>(clamped));
  const float u = static_cast<float>(draw >> 8) * 0x1p-24f;
  const auto level = static_cast<uint32_t>(floor_a + (u < clamped - floor_a ? 1.0f : 0.0f));
  return level < levels ? level : levels;
}

}  // namespace murmur::kernels
