#include "coding/vector_ops.h"

#include <cmath>

namespace murmur::coding {

std::optional<size_t> FirstNonFinite(std::span<const float> values) {
  // x - x is 0 for finite x and NaN for NaN or inf; summing in blocks keeps this vectorizable
  // and the common all-finite case a single pass.
  constexpr size_t kBlock = 1024;
  for (size_t begin = 0; begin < values.size(); begin += kBlock) {
    const size_t end = std::min(values.size(), begin + kBlock);
    float probe = 0;
    for (size_t i = begin; i < end; ++i) probe += values[i] - values[i];
    if (probe != 0 || std::isnan(probe)) {
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

}  // namespace murmur::coding
