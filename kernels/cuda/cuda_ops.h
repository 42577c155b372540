#pragma once
// The CUDA backend of kernels/ops.h and kernels/compress_ops.h, declared without CUDA types so
// kernels/ops.cc and kernels/compress_ops.cc can call it. fp32 only. Shapes are checked by the
// callers; these check what only the device can (label ranges, row indices) and turn CUDA and
// cuBLAS errors into Status (kInternal, naming the call and the device's error string).
// Everything runs on the legacy default stream of `device`, so calls are ordered without events.

#include <cstdint>
#include <span>

#include "base/config.h"
#include "base/status.h"
#include "kernels/device.h"
#include "kernels/gossip_ops.h"
#include "kernels/ops.h"
#include "kernels/tensor.h"
#if !MURMUR_WITH_CUDA
#error "kernels/cuda is built only with MURMUR_WITH_CUDA"
#endif

namespace murmur::kernels::cuda {

// Memory (kernels/memory.h).
StatusOr<void*> Allocate(const Device& device, size_t bytes);
void Free(const Device& device, void* pointer);
Status Copy(const Device& dst_device, void* dst, const Device& src_device, const void* src,
            size_t bytes);
Status Zero(const Device& device, void* pointer, size_t bytes);
Status Synchronize(const Device& device);
// kInvalidArgument unless `pointer` is device (or managed) memory of `device`.
Status CheckPointer(const Device& device, const void* pointer);

// kernels/ops.h
Status Gemm(const Device& device, Transpose trans_a, Transpose trans_b, float alpha,
            ConstMatrixView<float> a, ConstMatrixView<float> b, float beta, MatrixView<float> c);
Status BiasAdd(const Device& device, std::span<const float> bias, MatrixView<float> y);
Status BiasReluForward(const Device& device, std::span<const float> bias, MatrixView<float> y);
Status BiasGrad(const Device& device, ConstMatrixView<float> dy, std::span<float> db);
Status ReluForward(const Device& device, ConstMatrixView<float> x, MatrixView<float> y);
Status ReluBackward(const Device& device, ConstMatrixView<float> y, ConstMatrixView<float> dy,
                    MatrixView<float> dx);
Status ReluBackwardBiasGrad(const Device& device, ConstMatrixView<float> y,
                            ConstMatrixView<float> dy, MatrixView<float> dx, std::span<float> db);
Status ScaleRows(const Device& device, std::span<const float> weights, MatrixView<float> m);
template <typename U>
Status GatherRows(const Device& device, ConstMatrixView<U> src, std::span<const int64_t> rows,
                  MatrixView<U> dst);
Status SoftmaxCrossEntropyForward(const Device& device, ConstMatrixView<float> logits,
                                  std::span<const int32_t> labels, MatrixView<float> probs,
                                  float* loss);
Status SoftmaxCrossEntropyBackward(const Device& device, ConstMatrixView<float> probs,
                                   std::span<const int32_t> labels, MatrixView<float> dlogits);
Status SigmoidCrossEntropyForward(const Device& device, ConstMatrixView<float> logits,
                                  std::span<const float> targets, float* loss);
Status SigmoidCrossEntropyBackward(const Device& device, ConstMatrixView<float> logits,
                                   std::span<const float> targets, MatrixView<float> dlogits);
Status MeanSquaredErrorForward(const Device& device, ConstMatrixView<float> predictions,
                               std::span<const float> targets, float* loss);
Status MeanSquaredErrorBackward(const Device& device, ConstMatrixView<float> predictions,
                                std::span<const float> targets, MatrixView<float> dpredictions);
Status SgdStep(const Device& device, const SgdOptions& options, std::span<const float> grad,
               std::span<float> velocity, std::span<float> params);

// kernels/compress_ops.h
Status CountNonFinite(const Device& device, std::span<const float> v, int64_t* count);
Status Axpy(const Device& device, float alpha, std::span<const float> x, std::span<float> y);
Status SumOfSquares(const Device& device, std::span<const float> v, double* out);
Status MaxAbs(const Device& device, std::span<const float> v, float* out);
Status SelectAtLeast(const Device& device, std::span<const float> v, float tau,
                     std::span<uint32_t> indices, std::span<float> values, int64_t* total);
Status TopK(const Device& device, std::span<const float> v, int64_t k,
            std::span<uint32_t> indices, std::span<float> values, int64_t* count);
Status Gather(const Device& device, std::span<const float> v, std::span<const uint32_t> indices,
              std::span<float> values);
Status StridedGather(const Device& device, std::span<const float> v, int64_t start,
                     int64_t stride, std::span<float> out);
Status ScatterAdd(const Device& device, std::span<const uint32_t> indices,
                  std::span<const float> values, float alpha, std::span<float> x);
Status PackSigns(const Device& device, std::span<const float> v, std::span<uint32_t> words);
Status UnpackSigns(const Device& device, std::span<const uint32_t> words, float magnitude,
                   std::span<float> out);
template <typename L>
Status StochasticLevels(const Device& device, std::span<const float> v, double per_level,
                        uint32_t levels, uint64_t seed, std::span<L> out);
template <typename L>
Status LevelsToFloat(const Device& device, std::span<const L> level, float scale,
                     uint32_t levels, std::span<float> out);
Status FloatToHalf(const Device& device, std::span<const float> v, std::span<uint16_t> out);
Status HalfToFloat(const Device& device, std::span<const uint16_t> h, std::span<float> out);

// kernels/gossip_ops.h
Status Subtract(const Device& device, std::span<const float> a, std::span<const float> b,
                std::span<float> out);
Status AccumulateDifference(const Device& device, double w, std::span<const float> x,
                            std::span<const float> base, std::span<double> acc);
Status AccumulateScaled(const Device& device, double w, std::span<const float> x,
                        std::span<double> acc);
Status ApplyScaled(const Device& device, double gamma, std::span<const double> acc,
                   std::span<float> x, double* squares);
Status DivideInto(const Device& device, std::span<const double> acc, double divisor,
                  std::span<float> out);
Status SquaredDistance(const Device& device, std::span<const float> a, std::span<const float> b,
                       double* out);
Status OuterStep(const Device& device, double lr, double momentum, bool nesterov,
                 std::span<float> anchor, std::span<float> velocity, std::span<float> x);
Status ConsensusStep(const Device& device, double gamma,
                     std::span<const std::span<const float>> copies,
                     std::span<const double> weights, std::span<const float> public_copy,
                     std::span<float> x, std::span<float> scratch, ConsensusSquares* squares);

}  // namespace murmur::kernels::cuda
