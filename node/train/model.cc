#include "node/train/model.h"

#include <cmath>
#include <random>

#include "kernels/ops.h"

namespace murmur::node {

using kernels::ConstMatrixView;
using kernels::MatrixView;
using kernels::Transpose;

ModelSpec ModelSpec::Mlp(int64_t inputs, std::span<const int64_t> hidden, int64_t classes) {
  ModelSpec spec;
  spec.layer_sizes.push_back(inputs);
  spec.layer_sizes.insert(spec.layer_sizes.end(), hidden.begin(), hidden.end());
  spec.layer_sizes.push_back(classes);
  spec.loss = LossKind::kSoftmaxCrossEntropy;
  return spec;
}

ModelSpec ModelSpec::LinearRegression(int64_t features) {
  return ModelSpec{{features, 1}, LossKind::kMeanSquaredError};
}

ModelSpec ModelSpec::LogisticRegression(int64_t features) {
  return ModelSpec{{features, 1}, LossKind::kSigmoidCrossEntropy};
}

std::string ModelSpec::ToString() const {
  std::string out;
  for (size_t i = 0; i < layer_sizes.size(); ++i) {
    if (i) out += "-";
    out += std::to_string(layer_sizes[i]);
  }
  switch (loss) {
    case LossKind::kSoftmaxCrossEntropy: return out + " softmax-ce";
    case LossKind::kSigmoidCrossEntropy: return out + " logistic";
    case LossKind::kMeanSquaredError: return out + " mse";
  }
  return out;
}

template <typename T>
Model<T>::Model(ModelSpec spec, kernels::Device device)
    : spec_(std::move(spec)), device_(device) {
  for (size_t l = 0; l + 1 < spec_.layer_sizes.size(); ++l) {
    offsets_.push_back(num_params_);
    num_params_ += spec_.layer_sizes[l + 1] * spec_.layer_sizes[l] + spec_.layer_sizes[l + 1];
  }
  activations_.resize(NumLayers());
  deltas_.resize(NumLayers());
}

template <typename T>
StatusOr<Model<T>> Model<T>::Create(const ModelSpec& spec, kernels::Device device) {
  if (spec.layer_sizes.size() < 2) {
    return InvalidArgumentError("a model needs at least an input and an output size");
  }
  for (int64_t s : spec.layer_sizes) {
    if (s < 1) return InvalidArgumentError("layer sizes must be >= 1 (" + spec.ToString() + ")");
  }
  if (spec.loss != LossKind::kSoftmaxCrossEntropy && spec.layer_sizes.back() != 1) {
    return InvalidArgumentError("logistic and squared-error losses need one output (" +
                                spec.ToString() + ")");
  }
  if (spec.loss == LossKind::kSoftmaxCrossEntropy && spec.layer_sizes.back() < 2) {
    return InvalidArgumentError("softmax cross-entropy needs at least two classes (" +
                                spec.ToString() + ")");
  }
  return Model(spec, device);
}

template <typename T>
int64_t Model<T>::BiasOffset(size_t layer) const {
  return offsets_[layer] + spec_.layer_sizes[layer + 1] * spec_.layer_sizes[layer];
}

template <typename T>
void Model<T>::Initialize(std::span<T> params, uint64_t seed) const {
  std::mt19937_64 rng(seed);
  for (size_t l = 0; l < NumLayers(); ++l) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(spec_.layer_sizes[l]));
    std::uniform_real_distribution<double> u(-bound, bound);
    const int64_t end = l + 1 < NumLayers() ? offsets_[l + 1] : num_params_;
    for (int64_t i = offsets_[l]; i < end; ++i) params[static_cast<size_t>(i)] = static_cast<T>(u(rng));
  }
}

template <typename T>
Status Model<T>::EnsureScratch(int64_t batch) {
  if (batch <= scratch_rows_) return OkStatus();
  for (size_t l = 0; l < NumLayers(); ++l) {
    const auto n = static_cast<size_t>(batch * spec_.layer_sizes[l + 1]);
    MURMUR_ASSIGN_OR_RETURN(activations_[l], kernels::Buffer<T>::Create(device_, n));
    MURMUR_ASSIGN_OR_RETURN(deltas_[l], kernels::Buffer<T>::Create(device_, n));
  }
  scratch_rows_ = batch;
  return OkStatus();
}

template <typename T>
StatusOr<std::vector<T>> Model<T>::LastOutputsOnHost() const {
  std::vector<T> out(static_cast<size_t>(last_rows_ * NumOutputs()));
  if (out.empty()) return out;
  MURMUR_RETURN_IF_ERROR(kernels::CopyBytes(kernels::Device::Cpu(), out.data(), device_,
                                            activations_.back().data(), out.size() * sizeof(T)));
  return out;
}

template <typename T>
StatusOr<ConstMatrixView<T>> Model<T>::Forward(std::span<const T> params, ConstMatrixView<T> x) {
  if (static_cast<int64_t>(params.size()) != num_params_) {
    return InvalidArgumentError("model " + spec_.ToString() + " has " +
                                std::to_string(num_params_) + " parameters, got " +
                                std::to_string(params.size()));
  }
  if (x.cols != NumInputs()) {
    return InvalidArgumentError("model " + spec_.ToString() + " takes " +
                                std::to_string(NumInputs()) + " features, batch has " +
                                std::to_string(x.cols));
  }
  MURMUR_RETURN_IF_ERROR(EnsureScratch(x.rows));
  last_rows_ = x.rows;
  ConstMatrixView<T> input = x;
  for (size_t l = 0; l < NumLayers(); ++l) {
    const int64_t in = spec_.layer_sizes[l];
    const int64_t out = spec_.layer_sizes[l + 1];
    ConstMatrixView<T> w(params.data() + offsets_[l], out, in);
    std::span<const T> b(params.data() + BiasOffset(l), static_cast<size_t>(out));
    MatrixView<T> y(activations_[l].data(), x.rows, out);
    MURMUR_RETURN_IF_ERROR(
        kernels::Gemm<T>(device_, Transpose::kNo, Transpose::kYes, T(1), input, w, T(0), y));
    if (l + 1 < NumLayers()) {
      MURMUR_RETURN_IF_ERROR(kernels::BiasReluForward<T>(device_, b, y));
    } else {
      MURMUR_RETURN_IF_ERROR(kernels::BiasAdd<T>(device_, b, y));
    }
    input = y;
  }
  return input;
}

template <typename T>
StatusOr<T> Model<T>::Loss(ConstMatrixView<T> logits, const Batch<T>& batch, MatrixView<T> dlogits,
                           bool want_grad) {
  T loss = 0;
  switch (spec_.loss) {
    case LossKind::kSoftmaxCrossEntropy:
      // probs go straight into the delta buffer, then become the gradient in place.
      MURMUR_RETURN_IF_ERROR(kernels::SoftmaxCrossEntropyForward<T>(device_, logits, batch.labels,
                                                                    dlogits, &loss));
      if (want_grad) {
        MURMUR_RETURN_IF_ERROR(kernels::SoftmaxCrossEntropyBackward<T>(device_, dlogits,
                                                                       batch.labels, dlogits));
      }
      break;
    case LossKind::kSigmoidCrossEntropy:
      MURMUR_RETURN_IF_ERROR(
          kernels::SigmoidCrossEntropyForward<T>(device_, logits, batch.targets, &loss));
      if (want_grad) {
        MURMUR_RETURN_IF_ERROR(
            kernels::SigmoidCrossEntropyBackward<T>(device_, logits, batch.targets, dlogits));
      }
      break;
    case LossKind::kMeanSquaredError:
      MURMUR_RETURN_IF_ERROR(
          kernels::MeanSquaredErrorForward<T>(device_, logits, batch.targets, &loss));
      if (want_grad) {
        MURMUR_RETURN_IF_ERROR(
            kernels::MeanSquaredErrorBackward<T>(device_, logits, batch.targets, dlogits));
      }
      break;
  }
  return loss;
}

template <typename T>
Status Model<T>::Backward(std::span<const T> params, const Batch<T>& batch, std::span<T> grad) {
  const int64_t rows = batch.x.rows;
  const size_t last = NumLayers() - 1;
  MatrixView<T> dlogits(deltas_[last].data(), rows, spec_.layer_sizes.back());
  if (!batch.weights.empty()) {
    if (static_cast<int64_t>(batch.weights.size()) != rows) {
      return InvalidArgumentError("batch has " + std::to_string(rows) + " rows and " +
                                  std::to_string(batch.weights.size()) + " sample weights");
    }
    MURMUR_RETURN_IF_ERROR(kernels::ScaleRows<T>(device_, batch.weights, dlogits));
  }
  // The last layer's bias gradient; each hidden layer's comes fused with its ReLU backward.
  MURMUR_RETURN_IF_ERROR(kernels::BiasGrad<T>(
      device_, ConstMatrixView<T>(dlogits),
      std::span<T>(grad.data() + BiasOffset(last), static_cast<size_t>(spec_.layer_sizes.back()))));
  for (size_t l = NumLayers(); l-- > 0;) {
    const int64_t in = spec_.layer_sizes[l];
    const int64_t out = spec_.layer_sizes[l + 1];
    ConstMatrixView<T> delta(deltas_[l].data(), rows, out);
    ConstMatrixView<T> input =
        l == 0 ? batch.x : ConstMatrixView<T>(activations_[l - 1].data(), rows, in);
    MatrixView<T> dw(grad.data() + offsets_[l], out, in);
    // dW = delta^T * input.
    MURMUR_RETURN_IF_ERROR(
        kernels::Gemm<T>(device_, Transpose::kYes, Transpose::kNo, T(1), delta, input, T(0), dw));
    if (l == 0) break;  // no gradient wrt the data
    // d input = delta * W, then through the ReLU that produced `input`, with the layer below's
    // bias gradient (column sums of its delta) in the same pass.
    ConstMatrixView<T> w(params.data() + offsets_[l], out, in);
    MatrixView<T> dinput(deltas_[l - 1].data(), rows, in);
    MURMUR_RETURN_IF_ERROR(
        kernels::Gemm<T>(device_, Transpose::kNo, Transpose::kNo, T(1), delta, w, T(0), dinput));
    std::span<T> db_below(grad.data() + BiasOffset(l - 1), static_cast<size_t>(in));
    MURMUR_RETURN_IF_ERROR(
        kernels::ReluBackwardBiasGrad<T>(device_, input, dinput, dinput, db_below));
  }
  return OkStatus();
}

template <typename T>
StatusOr<T> Model<T>::LossAndGradient(std::span<const T> params, const Batch<T>& batch,
                                      std::span<T> grad) {
  const bool want_grad = !grad.empty();
  if (want_grad && static_cast<int64_t>(grad.size()) != num_params_) {
    return InvalidArgumentError("gradient has " + std::to_string(grad.size()) +
                                " entries, model has " + std::to_string(num_params_));
  }
  MURMUR_ASSIGN_OR_RETURN(ConstMatrixView<T> logits, Forward(params, batch.x));
  MatrixView<T> dlogits(deltas_[NumLayers() - 1].data(), logits.rows, logits.cols);
  MURMUR_ASSIGN_OR_RETURN(T loss, Loss(logits, batch, dlogits, want_grad));
  if (want_grad) MURMUR_RETURN_IF_ERROR(Backward(params, batch, grad));
  return loss;
}

template class Model<float>;
template class Model<double>;

}  // namespace murmur::node
