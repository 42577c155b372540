#pragma once
// Seeded input vectors for the compression tests: the distributions a selection must cope with.

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <span>
#include <string_view>
#include <vector>

namespace murmur::coding::testing {

enum class Distribution { kNormal, kHeavyTailed, kAllEqual, kMostlyZero, kFewDistinct };

inline std::string_view DistributionName(Distribution d) {
  switch (d) {
    case Distribution::kNormal: return "normal";
    case Distribution::kHeavyTailed: return "heavy-tailed";
    case Distribution::kAllEqual: return "all-equal";
    case Distribution::kMostlyZero: return "mostly-zero";
    case Distribution::kFewDistinct: return "few-distinct";
  }
  return "?";
}

inline constexpr Distribution kAllDistributions[] = {
    Distribution::kNormal, Distribution::kHeavyTailed, Distribution::kAllEqual,
    Distribution::kMostlyZero, Distribution::kFewDistinct};

// normal: N(0, 1); heavy-tailed: Cauchy(0, 1e-3) (gradients have outliers); all-equal: 0.25
// with random signs; mostly-zero: 0.2 % non-zero normals; few-distinct: 7 magnitudes, so ties
// at the selection boundary are the rule.
inline std::vector<float> MakeVector(Distribution d, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::cauchy_distribution<float> cauchy(0.0f, 1e-3f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) {
    const float sign = unit(rng) < 0.5f ? -1.0f : 1.0f;
    switch (d) {
      case Distribution::kNormal: x = normal(rng); break;
      case Distribution::kHeavyTailed:
        do x = cauchy(rng); while (!std::isfinite(x) || std::fabs(x) > 1e30f);
        break;
      case Distribution::kAllEqual: x = sign * 0.25f; break;
      case Distribution::kMostlyZero: x = unit(rng) < 0.002f ? normal(rng) : 0.0f; break;
      case Distribution::kFewDistinct:
        x = sign * static_cast<float>(1 + static_cast<int>(unit(rng) * 7)) * 0.125f;
        break;
    }
  }
  return v;
}

// The bit patterns of v, for comparisons that tell -0 from +0 and NaNs apart.
inline std::vector<uint32_t> Bits(std::span<const float> v) {
  std::vector<uint32_t> bits(v.size());
  for (size_t i = 0; i < v.size(); ++i) bits[i] = std::bit_cast<uint32_t>(v[i]);
  return bits;
}

}  // namespace murmur::coding::testing
