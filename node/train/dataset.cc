#include "node/train/dataset.h"

namespace murmur::node {

void Dataset::Truncate(int64_t n) {
  if (n >= rows || n < 0) return;
  rows = n;
  features.resize(static_cast<size_t>(rows * cols));
  if (!labels.empty()) labels.resize(static_cast<size_t>(rows));
  if (!targets.empty()) targets.resize(static_cast<size_t>(rows));
}

}  // namespace murmur::node
