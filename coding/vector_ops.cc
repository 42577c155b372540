#include "coding/vector_ops.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "base/check.h"

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
  double sum = 0;
  for (float v : values) sum += static_cast<double>(v) * v;
  return sum;
}

double SquaredL2Distance(std::span<const float> a, std::span<const float> b) {
  MURMUR_CHECK_EQ(a.size(), b.size());
  double sum = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    const double d = static_cast<double>(a[k]) - b[k];
    sum += d * d;
  }
  return sum;
}

}  // namespace murmur::coding
