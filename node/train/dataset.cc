#include "node/train/dataset.h"

#include <algorithm>

#include "base/check.h"

namespace murmur::node {

kernels::ConstMatrixView<float> Dataset::Features() const {
  MURMUR_CHECK(!compact()) << name << ": compact rows are read with RowsInto";
  return kernels::ConstMatrixView<float>(features.data(), rows, cols);
}

void Dataset::RowsInto(int64_t begin, int64_t n, std::span<float> out) const {
  MURMUR_CHECK(begin >= 0 && n >= 0 && begin + n <= rows) << name << ": rows " << begin << "+" << n;
  const auto count = static_cast<size_t>(n * cols);
  MURMUR_CHECK_EQ(out.size(), count);
  const auto first = static_cast<size_t>(begin * cols);
  if (!compact()) {
    std::copy_n(features.begin() + static_cast<std::ptrdiff_t>(first), count, out.begin());
    return;
  }
  // restrict: a float store could otherwise alias the bytes (a char type) or this set's scale,
  // and the loop would stay scalar.
  const uint8_t* __restrict in = pixels.get() + first;
  float* __restrict o = out.data();
  for (size_t i = 0; i < count; ++i) o[i] = PixelValue(in[i]);
}

void Dataset::Densify() {
  if (!compact()) return;
  std::vector<float> dense(static_cast<size_t>(rows * cols));
  RowsInto(0, rows, dense);
  features = std::move(dense);
  pixels.reset();
}

void Dataset::Truncate(int64_t n) {
  if (n >= rows || n < 0) return;
  rows = n;
  if (!compact()) features.resize(static_cast<size_t>(rows * cols));
  if (!labels.empty()) labels.resize(static_cast<size_t>(rows));
  if (!targets.empty()) targets.resize(static_cast<size_t>(rows));
}

}  // namespace murmur::node
