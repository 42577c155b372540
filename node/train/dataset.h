#pragma once
// In-memory data sets: a dense float feature matrix plus labels (classification) or targets
// (regression). Loaders return these; sharding hands out row indices into them.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/tensor.h"

namespace murmur::node {

enum class TaskKind {
  kMulticlass,  // labels in [0, num_classes), softmax cross-entropy
  kBinary,      // targets in {0, 1}, logistic loss
  kRegression,  // real targets, squared error
};

struct Dataset {
  std::string name;
  TaskKind task = TaskKind::kMulticlass;
  int64_t rows = 0;
  int64_t cols = 0;
  int num_classes = 0;            // kMulticlass only
  std::vector<float> features;    // rows * cols, row-major
  std::vector<int32_t> labels;    // kMulticlass: one per row
  std::vector<float> targets;     // kBinary / kRegression: one per row

  kernels::ConstMatrixView<float> Features() const {
    return kernels::ConstMatrixView<float>(features.data(), rows, cols);
  }
  // Keeps the first `n` rows (all when n >= rows).
  void Truncate(int64_t n);
};

// A training set and its held-out test set.
struct TrainTest {
  Dataset train;
  Dataset test;
};

}  // namespace murmur::node
