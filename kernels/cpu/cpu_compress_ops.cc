#include "kernels/cpu/cpu_compress_ops.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <vector>
#if defined(__F16C__)
#include <immintrin.h>
#endif

#include "base/lane_sum.h"
#include "kernels/compress_ops.h"

namespace murmur::kernels::cpu {
namespace {

// |v| as an integer that orders like the magnitude (for finite v and infinities).
uint32_t MagnitudeKey(float v) { return std::bit_cast<uint32_t>(v) & 0x7fffffffu; }

}  // namespace

void CountNonFinite(std::span<const float> v, int64_t* count) {
  int64_t n = 0;
  for (float x : v) n += !std::isfinite(x);
  *count = n;
}

void Axpy(float alpha, std::span<const float> x, std::span<float> y) {
  for (size_t i = 0; i < x.size(); ++i) y[i] += alpha * x[i];
}

void SumOfSquares(std::span<const float> v, double* out) {
  const float* p = v.data();
  *out = LaneSum(v.size(), [p](size_t k) { return static_cast<double>(p[k]) * p[k]; });
}

void MaxAbs(std::span<const float> v, float* out) {
  float m = 0;
  for (float x : v) m = std::max(m, std::fabs(x));
  *out = m;
}

void SelectAtLeast(std::span<const float> v, float tau, std::span<uint32_t> indices,
                   std::span<float> values, int64_t* selected) {
  int64_t total = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!(std::fabs(v[i]) >= tau)) continue;
    if (static_cast<size_t>(total) < indices.size()) {
      indices[static_cast<size_t>(total)] = static_cast<uint32_t>(i);
      values[static_cast<size_t>(total)] = v[i];
    }
    ++total;
  }
  *selected = total;
}

namespace {

// The selection itself; returns how many it took.
int64_t TopKCount(std::span<const float> v, int64_t k, std::span<uint32_t> indices,
                  std::span<float> values) {
  std::vector<uint32_t> keys;
  for (float x : v) {
    if (MagnitudeKey(x) != 0) keys.push_back(MagnitudeKey(x));
  }
  // The threshold key: the k-th largest non-zero magnitude (everything non-zero when k >= nz).
  uint32_t threshold = 1;
  int64_t ties = -1;  // how many entries equal to the threshold to take; -1: all
  if (k <= 0) return 0;
  if (static_cast<size_t>(k) < keys.size()) {
    std::nth_element(keys.begin(), keys.begin() + (k - 1), keys.end(), std::greater<>());
    threshold = keys[static_cast<size_t>(k - 1)];
    int64_t above = 0;
    for (uint32_t key : keys) above += key > threshold;
    ties = k - above;
  }
  int64_t count = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    const uint32_t key = MagnitudeKey(v[i]);
    bool take = false;
    if (ties < 0) {
      take = key >= threshold;
    } else if (key > threshold) {
      take = true;
    } else if (key == threshold && ties > 0) {
      take = true;
      --ties;
    }
    if (!take) continue;
    indices[static_cast<size_t>(count)] = static_cast<uint32_t>(i);
    values[static_cast<size_t>(count)] = v[i];
    ++count;
  }
  return count;
}

}  // namespace

void TopK(std::span<const float> v, int64_t k, std::span<uint32_t> indices, std::span<float> values,
          int64_t* count) {
  *count = TopKCount(v, k, indices, values);
}

void Gather(std::span<const float> v, std::span<const uint32_t> indices, std::span<float> values) {
  for (size_t i = 0; i < indices.size(); ++i) values[i] = v[indices[i]];
}

void StridedGather(std::span<const float> v, int64_t start, int64_t stride, std::span<float> out) {
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = v[static_cast<size_t>(start + static_cast<int64_t>(i) * stride)];
  }
}

void ScatterAdd(std::span<const uint32_t> indices, std::span<const float> values, float alpha,
                std::span<float> x) {
  for (size_t i = 0; i < indices.size(); ++i) x[indices[i]] += alpha * values[i];
}

void PackSigns(std::span<const float> v, std::span<uint32_t> words) {
  std::fill(words.begin(), words.end(), 0u);
  for (size_t i = 0; i < v.size(); ++i) {
    words[i / 32] |= static_cast<uint32_t>(std::signbit(v[i])) << (i % 32);
  }
}

void UnpackSigns(std::span<const uint32_t> words, float magnitude, std::span<float> out) {
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = (words[i / 32] >> (i % 32)) & 1u ? -magnitude : magnitude;
  }
}

template <typename L>
void StochasticLevels(std::span<const float> v, double per_level, uint32_t levels, uint64_t seed,
                      std::span<L> out) {
  const LevelScale scale = MakeLevelScale(per_level);
  const uint32_t seed32 = LevelSeed(seed);
  for (size_t i = 0; i < v.size(); ++i) {
    const auto l = static_cast<L>(StochasticLevel(std::fabs(v[i]), scale, levels,
                                                  LevelDraw(seed32, static_cast<uint32_t>(i))));
    out[i] = std::signbit(v[i]) ? static_cast<L>(-l) : l;
  }
}

template <typename L>
void LevelsToFloat(std::span<const L> level, float scale, uint32_t levels, std::span<float> out) {
  for (size_t i = 0; i < level.size(); ++i) {
    const int l = level[i];
    const auto magnitude =
        static_cast<float>(static_cast<double>(scale) * std::abs(l) / levels);
    out[i] = l < 0 ? -magnitude : magnitude;
  }
}

#define MURMUR_KERNEL MURMUR_INSTANTIATE_HOST_KERNEL
#include "kernels/compress_ops.inc"

#if defined(__FLT16_MANT_DIG__)
void FloatToHalf(std::span<const float> v, std::span<uint16_t> out) {
  // GCC's _Float16 conversion rounds to nearest even, keeps subnormals and overflows to infinity.
  for (size_t i = 0; i < v.size(); ++i) out[i] = std::bit_cast<uint16_t>(static_cast<_Float16>(v[i]));
}

void HalfToFloat(std::span<const uint16_t> h, std::span<float> out) {
  for (size_t i = 0; i < h.size(); ++i) out[i] = static_cast<float>(std::bit_cast<_Float16>(h[i]));
}
#elif defined(__F16C__)
// Compilers without _Float16 on x86 (clang 14, the fuzzing build): the F16C instructions, with
// the same rounding (to nearest even), subnormals and overflow.
void FloatToHalf(std::span<const float> v, std::span<uint16_t> out) {
  for (size_t i = 0; i < v.size(); ++i) out[i] = _cvtss_sh(v[i], _MM_FROUND_TO_NEAREST_INT);
}

void HalfToFloat(std::span<const uint16_t> h, std::span<float> out) {
  for (size_t i = 0; i < h.size(); ++i) out[i] = _cvtsh_ss(h[i]);
}
#else
#error "fp16 conversion needs _Float16 or F16C (build with -march=x86-64-v3 or newer)"
#endif

}  // namespace murmur::kernels::cpu
