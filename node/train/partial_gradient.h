#pragma once
// One rank's part of a synchronous iteration (coded-tree, tree, gc, ring; gossip/sync_node.h):
// Σ_{(p, w) ∈ own} w · ∇ℓ(params; row(t, p)), the per-sample-weighted gradient sum of gradient
// coding (docs/algorithms.md §2.3), computed on the model's device. Position p of iteration t is row
// p with a full batch, else row perm_e[(t·B + p) mod m] of epoch e = ⌊(t·B + p) / m⌋'s seeded
// permutation, so every rank of a run maps positions to the same rows. The rank's rows, weights
// and labels go up to the device once per iteration (once per run with a full batch); the model
// and the result stay in device memory.
// Thread safety: none.

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "coding/coded_tree.h"
#include "kernels/memory.h"
#include "node/train/dataset.h"
#include "node/train/model.h"

namespace murmur::node {

class PartialGradient {
 public:
  // `model` and `train` must outlive this. global_batch <= 0: a full batch (B = train.rows).
  PartialGradient(Model<float>& model, const Dataset& train, int64_t global_batch, uint64_t seed);

  // The weighted sum for `own` (the same pairs on every call of a run) at `params` (device
  // memory, model.NumParams() values). The result is in device memory, valid until the next
  // call; zeros when `own` is empty.
  StatusOr<std::span<const float>> Compute(uint64_t iteration,
                                           std::span<const coding::WeightedSample> own,
                                           std::span<const float> params);
  // The row of position `position` at `iteration`.
  int64_t SampleAt(uint64_t iteration, int64_t position);
  int64_t batch() const { return batch_; }

 private:
  template <typename T>
  Status Put(std::span<const T> host, kernels::Buffer<T>& buffer);

  Model<float>& model_;
  const Dataset& train_;
  const int64_t global_batch_;
  const int64_t batch_;
  const uint64_t seed_;
  bool gathered_ = false;
  std::vector<float> x_, targets_, weights_;
  std::vector<int32_t> labels_;
  uint64_t perm_epoch_ = ~uint64_t{0};
  std::vector<int64_t> perm_;
  kernels::Buffer<float> x_dev_, weights_dev_, targets_dev_, grad_dev_, out_dev_;
  kernels::Buffer<int32_t> labels_dev_;
};

}  // namespace murmur::node
