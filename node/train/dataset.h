#pragma once
// In-memory data sets: a float feature matrix plus labels (classification) or targets
// (regression). Loaders return these; sharding hands out row indices into them. The features are
// either dense floats or compact bytes (Fashion-MNIST: one byte per pixel, memory-mapped from the
// data cache and shared by every copy of the set and every process on the machine); a consumer
// reads rows through RowsInto / RowInto, which convert, so a node holds floats only for the rows
// it trains on.

#include <cmath>
#include <cstdint>
#include <memory>
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
  std::vector<float> features;    // rows * cols, row-major; empty when compact()
  std::vector<int32_t> labels;    // kMulticlass: one per row
  std::vector<float> targets;     // kBinary / kRegression: one per row
  // Compact features: rows * cols bytes, row-major; feature = PixelValue(byte), a multiply-add
  // that vectorizes and gives the same bits on every path of one build (a training step's
  // batch, an evaluation, a GPU's one-time copy).
  std::shared_ptr<const uint8_t> pixels;
  float pixel_scale = 1.0f;
  float pixel_offset = 0.0f;

  // byte × pixel_scale + pixel_offset, rounded once where the CPU has FMA; elsewhere through
  // double (the product is exact there), which a software fma per value would make slow.
  float PixelValue(uint8_t byte) const {
#ifdef __FMA__
    return std::fma(static_cast<float>(byte), pixel_scale, pixel_offset);
#else
    return static_cast<float>(static_cast<double>(byte) * pixel_scale + pixel_offset);
#endif
  }
  bool compact() const { return pixels != nullptr; }
  // REQUIRES !compact().
  kernels::ConstMatrixView<float> Features() const;
  // Rows [begin, begin + n) as floats into out (n * cols values).
  void RowsInto(int64_t begin, int64_t n, std::span<float> out) const;
  void RowInto(int64_t row, std::span<float> out) const { RowsInto(row, 1, out); }
  // Keeps the first `n` rows (all when n >= rows).
  void Truncate(int64_t n);
  // Converts compact rows to dense floats (no-op when dense): for a small set read often, such
  // as a periodic evaluation subset.
  void Densify();
};

// A training set and its held-out test set.
struct TrainTest {
  Dataset train;
  Dataset test;
};

}  // namespace murmur::node
