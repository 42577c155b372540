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
#include "kernels/op_table.h"

namespace murmur::kernels {

// Status CountNonFinite(const Device& device, ...) and the rest: each op and its contract in
// compress_ops.inc.
#define MURMUR_KERNEL MURMUR_DECLARE_DEVICE_KERNEL
#include "kernels/compress_ops.inc"  // IWYU pragma: export

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
