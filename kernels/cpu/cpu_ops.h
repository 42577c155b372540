#pragma once
// The Eigen backend of kernels/ops.h. Same contracts, except that shapes are assumed valid:
// kernels/ops.cc checks them before dispatching here. Single-threaded by design: a node's
// parallelism is across peers, and the trainer owns the one compute thread.

#include <cstdint>
#include <span>

#include "kernels/ops.h"
#include "kernels/tensor.h"

namespace murmur::kernels::cpu {

template <typename T>
void Gemm(Transpose trans_a, Transpose trans_b, T alpha, ConstMatrixView<T> a,
          ConstMatrixView<T> b, T beta, MatrixView<T> c);
template <typename T>
void BiasAdd(std::span<const T> bias, MatrixView<T> y);
template <typename T>
void BiasGrad(ConstMatrixView<T> dy, std::span<T> db);
template <typename T>
void ReluForward(ConstMatrixView<T> x, MatrixView<T> y);
template <typename T>
void ReluBackward(ConstMatrixView<T> y, ConstMatrixView<T> dy, MatrixView<T> dx);
template <typename T>
void SoftmaxCrossEntropyForward(ConstMatrixView<T> logits, std::span<const int32_t> labels,
                                MatrixView<T> probs, T* loss);
template <typename T>
void SoftmaxCrossEntropyBackward(ConstMatrixView<T> probs, std::span<const int32_t> labels,
                                 MatrixView<T> dlogits);
template <typename T>
void SigmoidCrossEntropyForward(ConstMatrixView<T> logits, std::span<const T> targets, T* loss);
template <typename T>
void SigmoidCrossEntropyBackward(ConstMatrixView<T> logits, std::span<const T> targets,
                                 MatrixView<T> dlogits);
template <typename T>
void MeanSquaredErrorForward(ConstMatrixView<T> predictions, std::span<const T> targets, T* loss);
template <typename T>
void MeanSquaredErrorBackward(ConstMatrixView<T> predictions, std::span<const T> targets,
                              MatrixView<T> dpredictions);
template <typename T>
void SgdStep(const SgdOptions& options, std::span<const T> grad, std::span<T> velocity,
             std::span<T> params);

}  // namespace murmur::kernels::cpu
