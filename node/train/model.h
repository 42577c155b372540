#pragma once
// Models over one flat parameter vector. Updates, compression and gossip all work on that
// vector, so a model is only a shape (the layout of its parameters) plus forward/backward.
//
// A model is a stack of dense layers, ReLU between them, and a loss:
//   MLP (default 784-256-128-10, softmax cross-entropy), linear regression (d-1, squared error),
//   logistic regression (d-1, logistic loss).
// Layout of the flat vector, layer by layer: W (out x in, row-major, PyTorch's nn.Linear), then b.
//
// T is float for training; double exists for finite-difference gradient checks.
// Thread safety: a Model owns scratch buffers; use one Model per thread.
//
// Device: a Model computes on the device it was created for (kernels/device.h). Every span and
// view it takes or returns — parameters, gradient, batch, outputs — is memory of that device
// (kernels/memory.h); only the returned loss is a host value. Move-only.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/device.h"
#include "kernels/memory.h"
#include "kernels/tensor.h"

namespace murmur::node {

enum class LossKind { kSoftmaxCrossEntropy, kSigmoidCrossEntropy, kMeanSquaredError };

struct ModelSpec {
  std::vector<int64_t> layer_sizes;  // input, hidden..., output; at least two entries
  LossKind loss = LossKind::kSoftmaxCrossEntropy;

  static ModelSpec Mlp(int64_t inputs, std::span<const int64_t> hidden, int64_t classes);
  static ModelSpec LinearRegression(int64_t features);
  static ModelSpec LogisticRegression(int64_t features);
  // "784-256-128-10 softmax-ce"
  std::string ToString() const;
};

// One mini-batch. Exactly one of labels / targets is used, as the loss requires.
template <typename T>
struct Batch {
  kernels::ConstMatrixView<T> x;
  std::span<const int32_t> labels;  // kSoftmaxCrossEntropy
  std::span<const T> targets;       // kSigmoidCrossEntropy, kMeanSquaredError
  // Optional per-sample weights (gradient coding multiplies each sample's gradient by its code
  // coefficients): the gradient becomes (1/B) sum_i w_i grad loss_i. The returned loss stays the
  // unweighted mean.
  std::span<const T> weights;
};

template <typename T>
class Model {
 public:
  // kInvalidArgument for fewer than two layer sizes, a size < 1, or a loss whose output width
  // does not fit (sigmoid and squared error need one output).
  static StatusOr<Model> Create(const ModelSpec& spec,
                                kernels::Device device = kernels::Device::Cpu());

  const ModelSpec& spec() const { return spec_; }
  const kernels::Device& device() const { return device_; }
  int64_t NumParams() const { return num_params_; }
  int64_t NumInputs() const { return spec_.layer_sizes.front(); }
  int64_t NumOutputs() const { return spec_.layer_sizes.back(); }

  // Fills `params` as PyTorch's nn.Linear does: W and b uniform in +-1/sqrt(fan_in), seeded.
  // REQUIRES params.size() == NumParams().
  void Initialize(std::span<T> params, uint64_t seed) const;

  // Mean loss over the batch. When `grad` is non-empty it receives d loss / d params (it is
  // overwritten, not accumulated). kInvalidArgument when shapes or labels do not fit.
  StatusOr<T> LossAndGradient(std::span<const T> params, const Batch<T>& batch,
                              std::span<T> grad);

  // Outputs of the last layer (logits, or predictions for regression) for `x`. The view points
  // into scratch memory valid until the next call on this model.
  StatusOr<kernels::ConstMatrixView<T>> Forward(std::span<const T> params,
                                                kernels::ConstMatrixView<T> x);

  // Outputs of the last layer from the latest Forward or LossAndGradient call (the loss never
  // overwrites them), valid until the next call.
  kernels::ConstMatrixView<T> LastOutputs() const {
    return kernels::ConstMatrixView<T>(activations_.back().data(), last_rows_, NumOutputs());
  }
  // The same outputs copied to host memory (a plain view of them on the CPU).
  StatusOr<std::vector<T>> LastOutputsOnHost() const;

  // Bytes of the per-layer activations and deltas, sized by the largest batch seen.
  uint64_t ScratchBytes() const {
    uint64_t bytes = 0;
    for (const auto& a : activations_) bytes += a.size() * sizeof(T);
    for (const auto& d : deltas_) bytes += d.size() * sizeof(T);
    return bytes;
  }

  // Offsets of layer l's weights and bias in the flat vector.
  int64_t WeightOffset(size_t layer) const { return offsets_[layer]; }
  int64_t BiasOffset(size_t layer) const;

 private:
  // The loss of `logits` and, when `want_grad`, its gradient into `dlogits` (the last delta).
  StatusOr<T> Loss(kernels::ConstMatrixView<T> logits, const Batch<T>& batch,
                   kernels::MatrixView<T> dlogits, bool want_grad);
  // Back-propagation from the last delta into `grad` (weighted by the batch's sample weights).
  Status Backward(std::span<const T> params, const Batch<T>& batch, std::span<T> grad);
  Model(ModelSpec spec, kernels::Device device);
  size_t NumLayers() const { return spec_.layer_sizes.size() - 1; }
  Status EnsureScratch(int64_t batch);

  ModelSpec spec_;
  kernels::Device device_;
  int64_t num_params_ = 0;
  std::vector<int64_t> offsets_;               // per layer: start of W
  int64_t scratch_rows_ = 0;
  int64_t last_rows_ = 0;
  // On device_. Per layer: batch x out (post-ReLU if hidden), and the gradient wrt its output.
  std::vector<kernels::Buffer<T>> activations_;
  std::vector<kernels::Buffer<T>> deltas_;
};

// The seed of node `node_id`'s own initial model when every node draws its own (`init =
// per-node`) from the cluster's `seed`: the same on a real node and in the simulator.
inline uint64_t OwnInitSeed(uint64_t seed, uint64_t node_id) {
  return seed ^ (node_id * 0x9E3779B97F4A7C15ULL);
}

}  // namespace murmur::node
