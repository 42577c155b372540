#include "node/train/partial_gradient.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "kernels/compress_ops.h"

namespace murmur::node {
namespace {

constexpr int64_t kComputeChunk = 4096;  // rows per forward/backward call

}  // namespace

PartialGradient::PartialGradient(Model<float>& model, const Dataset& train, int64_t global_batch,
                                 uint64_t seed)
    : model_(model),
      train_(train),
      global_batch_(global_batch),
      batch_(global_batch > 0 ? global_batch : train.rows),
      seed_(seed) {}

template <typename T>
Status PartialGradient::Put(std::span<const T> host, kernels::Buffer<T>& buffer) {
  if (buffer.size() != host.size()) {
    MURMUR_ASSIGN_OR_RETURN(buffer, kernels::Buffer<T>::Create(model_.device(), host.size()));
  }
  return buffer.CopyFromHost(host);
}

int64_t PartialGradient::SampleAt(uint64_t iteration, int64_t position) {
  if (global_batch_ <= 0) return position;  // full batch: the identity
  const auto m = static_cast<uint64_t>(train_.rows);
  const uint64_t k = iteration * static_cast<uint64_t>(batch_) + static_cast<uint64_t>(position);
  const uint64_t epoch = k / m;
  if (epoch != perm_epoch_) {
    perm_.resize(m);
    std::iota(perm_.begin(), perm_.end(), int64_t{0});
    std::mt19937_64 rng(seed_ * 1000003 + epoch);
    std::shuffle(perm_.begin(), perm_.end(), rng);
    perm_epoch_ = epoch;
  }
  return perm_[k % m];
}

StatusOr<std::span<const float>> PartialGradient::Compute(
    uint64_t iteration, std::span<const coding::WeightedSample> own, std::span<const float> params) {
  const auto d = static_cast<size_t>(model_.NumParams());
  if (params.size() != d) {
    return InvalidArgumentError("the model has " + std::to_string(d) + " parameters, got " +
                                std::to_string(params.size()));
  }
  const kernels::Device& device = model_.device();
  if (out_dev_.size() != d) {
    MURMUR_ASSIGN_OR_RETURN(grad_dev_, kernels::Buffer<float>::Create(device, d));
    MURMUR_ASSIGN_OR_RETURN(out_dev_, kernels::Buffer<float>::Create(device, d));
  }
  MURMUR_RETURN_IF_ERROR(out_dev_.Zero());
  if (own.empty()) return std::span<const float>(out_dev_.span());
  const int64_t cols = train_.cols;
  const bool classes = train_.task == TaskKind::kMulticlass;
  if (!gathered_ || global_batch_ > 0) {
    const size_t rows = own.size();
    x_.resize(rows * static_cast<size_t>(cols));
    weights_.resize(rows);
    labels_.resize(classes ? rows : 0);
    targets_.resize(classes ? 0 : rows);
    for (size_t i = 0; i < rows; ++i) {
      const int64_t sample = SampleAt(iteration, own[i].sample);
      train_.RowInto(sample, std::span<float>(x_).subspan(i * static_cast<size_t>(cols),
                                                          static_cast<size_t>(cols)));
      weights_[i] = static_cast<float>(own[i].weight);
      if (classes) {
        labels_[i] = train_.labels[static_cast<size_t>(sample)];
      } else {
        targets_[i] = train_.targets[static_cast<size_t>(sample)];
      }
    }
    MURMUR_RETURN_IF_ERROR(Put<float>(x_, x_dev_));
    MURMUR_RETURN_IF_ERROR(Put<float>(weights_, weights_dev_));
    MURMUR_RETURN_IF_ERROR(Put<int32_t>(labels_, labels_dev_));
    MURMUR_RETURN_IF_ERROR(Put<float>(targets_, targets_dev_));
    gathered_ = true;
  }
  const auto rows = static_cast<int64_t>(own.size());
  for (int64_t begin = 0; begin < rows; begin += kComputeChunk) {
    const int64_t count = std::min(kComputeChunk, rows - begin);
    const auto first = static_cast<size_t>(begin), n = static_cast<size_t>(count);
    Batch<float> b;
    b.x = kernels::ConstMatrixView<float>(x_dev_.data() + begin * cols, count, cols);
    b.weights = weights_dev_.span().subspan(first, n);
    if (classes) {
      b.labels = labels_dev_.span().subspan(first, n);
    } else {
      b.targets = targets_dev_.span().subspan(first, n);
    }
    MURMUR_RETURN_IF_ERROR(model_.LossAndGradient(params, b, grad_dev_.span()).status());
    // The loss is a mean over the chunk: scale back to a sum of weighted per-sample gradients.
    MURMUR_RETURN_IF_ERROR(
        kernels::Axpy(device, static_cast<float>(count), grad_dev_.span(), out_dev_.span()));
  }
  return std::span<const float>(out_dev_.span());
}

}  // namespace murmur::node
