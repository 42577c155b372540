#include "coding/vector_ops.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "base/check.h"
#include "base/lane_sum.h"

namespace murmur::coding {

std::optional<size_t> FirstNonFinite(std::span<const float> values) {
  // An integer OR over blocks vectorizes, so the common all-finite case is one pass at memory
  // speed; only a block with a hit is searched for its first.
  constexpr size_t kBlock = 4096;
  const float* data = values.data();
  for (size_t begin = 0; begin < values.size(); begin += kBlock) {
    const size_t end = std::min(values.size(), begin + kBlock);
    uint32_t any = 0;
    for (size_t i = begin; i < end; ++i) any |= static_cast<uint32_t>(IsNonFinite(data[i]));
    if (any != 0) {
      for (size_t i = begin; i < end; ++i) {
        if (!std::isfinite(values[i])) return i;
      }
    }
  }
  return std::nullopt;
}

double SquaredL2Norm(std::span<const float> values) {
  const float* p = values.data();
  return LaneSum(values.size(), [p](size_t k) { return static_cast<double>(p[k]) * p[k]; });
}

double SquaredL2Distance(std::span<const float> a, std::span<const float> b) {
  MURMUR_CHECK_EQ(a.size(), b.size());
  const float* pa = a.data();
  const float* pb = b.data();
  return LaneSum(a.size(), [pa, pb](size_t k) {
    const double d = static_cast<double>(pa[k]) - pb[k];
    return d * d;
  });
}

}  // namespace murmur::coding
