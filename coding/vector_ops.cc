#include "coding/vector_ops.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace murmur::coding {

std::optional<size_t> FirstNonFinite(std::span<const float> values) {
  // A float is NaN or infinite exactly when its exponent bits are all ones. An integer OR over
  // blocks vectorizes (a float sum would not, without fast-math), so the common all-finite case
  // is one pass at memory speed.
  constexpr size_t kBlock = 4096;
  const float* data = values.data();
  for (size_t begin = 0; begin < values.size(); begin += kBlock) {
    const size_t end = std::min(values.size(), begin + kBlock);
    uint32_t any = 0;
    for (size_t i = begin; i < end; ++i) {
      uint32_t bits;
      std::memcpy(&bits, data + i, sizeof(bits));
      any |= static_cast<uint32_t>((bits & 0x7F800000u) == 0x7F800000u);
    }
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

}  // namespace murmur::coding
