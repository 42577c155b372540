#pragma once
// The numeric kernels the trainer uses, over MatrixView / std::span, on a chosen Device.
//
// Every function validates shapes first (CUTLASS's "can implement" step) and returns
// kInvalidArgument, touching no output, when they do not fit; a backend that lacks a kernel
// returns kUnimplemented. Outputs may alias inputs only where a comment says so.
// T is float or double; double exists for gradient checks and runs on the CPU only.
// With a CUDA device every pointer is device memory (kernels/memory.h), scalar results such as
// *loss are written to host memory, and labels are validated on the device (an out-of-range
// label is kInvalidArgument as on the CPU). Host-side failures are reported when the call
// returns; a kernel fault may surface at the next call that synchronizes.

#include <cstdint>
#include <span>

#include "base/status.h"
#include "kernels/device.h"
#include "kernels/tensor.h"

namespace murmur::kernels {

enum class Transpose { kNo, kYes };

// C = alpha * op(A) * op(B) + beta * C, where op(X) is X or its transpose.
// When beta == 0, C is not read (it may hold NaN).
template <typename T>
Status Gemm(const Device& device, Transpose trans_a, Transpose trans_b, T alpha,
            ConstMatrixView<T> a, ConstMatrixView<T> b, T beta, MatrixView<T> c);

// y(r, c) += bias[c] for every row r. REQUIRES bias.size() == y.cols.
template <typename T>
Status BiasAdd(const Device& device, std::span<const T> bias, MatrixView<T> y);

// y = max(y + bias, 0) in place: BiasAdd and ReluForward fused (one pass over y).
template <typename T>
Status BiasReluForward(const Device& device, std::span<const T> bias, MatrixView<T> y);

// dx = dy where y > 0, else 0, and db[c] = sum over rows of dx(r, c): ReluBackward and the
// BiasGrad of the layer below fused. dx may be dy (in place).
template <typename T>
Status ReluBackwardBiasGrad(const Device& device, ConstMatrixView<T> y, ConstMatrixView<T> dy,
                            MatrixView<T> dx, std::span<T> db);

// m(r, c) *= weights[r] (per-sample weights of gradient coding). REQUIRES weights.size() == rows.
template <typename T>
Status ScaleRows(const Device& device, std::span<const T> weights, MatrixView<T> m);

// dst row i = src row rows[i]; rows must lie in [0, src.rows). U is float or int32_t (labels,
// as a one-column matrix). Row indices are validated on the host for the CPU and on the device
// for CUDA.
template <typename U>
Status GatherRows(const Device& device, ConstMatrixView<U> src, std::span<const int64_t> rows,
                  MatrixView<U> dst);

// db[c] = sum over rows of dy(r, c): the gradient of BiasAdd.
template <typename T>
Status BiasGrad(const Device& device, ConstMatrixView<T> dy, std::span<T> db);

// y = max(x, 0). y may be x (in place).
template <typename T>
Status ReluForward(const Device& device, ConstMatrixView<T> x, MatrixView<T> y);

// dx = dy where y > 0, else 0; y is ReluForward's output. dx may be dy (in place).
template <typename T>
Status ReluBackward(const Device& device, ConstMatrixView<T> y, ConstMatrixView<T> dy,
                    MatrixView<T> dx);

// Softmax over each row of `logits` into `probs` (may alias logits) and the mean over rows of
// -log(probs(r, labels[r])) into *loss. Labels must lie in [0, logits.cols).
template <typename T>
Status SoftmaxCrossEntropyForward(const Device& device, ConstMatrixView<T> logits,
                                  std::span<const int32_t> labels, MatrixView<T> probs, T* loss);

// Gradient of the mean loss with respect to the logits: (probs - onehot(labels)) / rows.
// dlogits may alias probs.
template <typename T>
Status SoftmaxCrossEntropyBackward(const Device& device, ConstMatrixView<T> probs,
                                   std::span<const int32_t> labels, MatrixView<T> dlogits);

// Binary cross-entropy on logits z (one column): mean over rows of
// log(1 + exp(z)) - t * z, with targets t in {0, 1}; computed without overflow.
template <typename T>
Status SigmoidCrossEntropyForward(const Device& device, ConstMatrixView<T> logits,
                                  std::span<const T> targets, T* loss);
// d loss / d z = (sigmoid(z) - t) / rows.
template <typename T>
Status SigmoidCrossEntropyBackward(const Device& device, ConstMatrixView<T> logits,
                                   std::span<const T> targets, MatrixView<T> dlogits);

// Mean over rows of 0.5 * (y - t)^2 for a one-column prediction y.
template <typename T>
Status MeanSquaredErrorForward(const Device& device, ConstMatrixView<T> predictions,
                               std::span<const T> targets, T* loss);
// (y - t) / rows.
template <typename T>
Status MeanSquaredErrorBackward(const Device& device, ConstMatrixView<T> predictions,
                                std::span<const T> targets, MatrixView<T> dpredictions);

struct SgdOptions {
  double learning_rate = 0.01;
  double momentum = 0.0;      // 0 disables the velocity buffer
  double weight_decay = 0.0;  // L2 coefficient added to the gradient
  bool nesterov = false;      // REQUIRES momentum > 0
};

// PyTorch's SGD: g = grad + wd * p; v = m * v + g; step = nesterov ? g + m * v : v;
// p -= lr * step. `velocity` may be empty when momentum == 0.
template <typename T>
Status SgdStep(const Device& device, const SgdOptions& options, std::span<const T> grad,
               std::span<T> velocity, std::span<T> params);

}  // namespace murmur::kernels
