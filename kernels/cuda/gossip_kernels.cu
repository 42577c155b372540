// The CHOCO vector kernels of kernels/gossip_ops.h on the GPU. Element-wise results use the
// explicitly rounded intrinsics (__dmul_rn, __dadd_rn, __fadd_rn: never contracted into a fused
// multiply-add), so they equal the CPU versions (built with -ffp-contract=off) bit for bit; sums
// go through a warp sum and one double atomic per warp.
#include <algorithm>

#include "kernels/cuda/cuda_context.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/elementwise.cuh"

namespace murmur::kernels::cuda {
namespace {

// *out += Σ f(i)² over i < n, f(i) a double.
template <typename F>
__global__ void SumSquaresKernel(int64_t n, F f, double* out) {
  double sum = 0;
  MURMUR_FOR_EACH(i, n) {
    const double v = f(i);
    sum = __dadd_rn(sum, __dmul_rn(v, v));
  }
  sum = WarpSum(sum);
  if (threadIdx.x % 32 == 0) atomicAdd(out, sum);
}

template <typename F>
StatusOr<double> SumSquares(const Device& device, int64_t n, F f, const char* what) {
  MURMUR_ASSIGN_OR_RETURN(Context * context, GetContext(device));
  MURMUR_RETURN_IF_ERROR(ResetScalars(*context));
  if (n > 0) {
    SumSquaresKernel<<<ResidentBlocks(*context, n), kThreads>>>(n, f,
                                                                &context->device_scalars->sum);
    MURMUR_RETURN_IF_ERROR(CheckLaunch(what));
  }
  MURMUR_ASSIGN_OR_RETURN(Scalars s, ReadScalars(*context, what));
  return s.sum;
}

}  // namespace

Status Subtract(const Device& device, std::span<const float> a, std::span<const float> b,
                std::span<float> out) {
  const float* pa = a.data();
  const float* pb = b.data();
  float* po = out.data();
  return ForEach(
      device, static_cast<int64_t>(a.size()),
      [=] __device__(int64_t k) { po[k] = __fsub_rn(pa[k], pb[k]); }, "Subtract");
}

Status AccumulateDifference(const Device& device, double w, std::span<const float> x,
                            std::span<const float> base, std::span<double> acc) {
  const float* px = x.data();
  const float* pb = base.data();
  double* pa = acc.data();
  return ForEach(
      device, static_cast<int64_t>(x.size()),
      [=] __device__(int64_t k) {
        const double d = __dsub_rn(static_cast<double>(px[k]), static_cast<double>(pb[k]));
        pa[k] = __dadd_rn(pa[k], __dmul_rn(w, d));
      },
      "AccumulateDifference");
}

Status AccumulateScaled(const Device& device, double w, std::span<const float> x,
                        std::span<double> acc) {
  const float* px = x.data();
  double* pa = acc.data();
  return ForEach(
      device, static_cast<int64_t>(x.size()),
      [=] __device__(int64_t k) {
        pa[k] = __dadd_rn(pa[k], __dmul_rn(w, static_cast<double>(px[k])));
      },
      "AccumulateScaled");
}

Status ApplyScaled(const Device& device, double gamma, std::span<const double> acc,
                   std::span<float> x, double* squares) {
  const double* pa = acc.data();
  float* px = x.data();
  MURMUR_RETURN_IF_ERROR(ForEach(
      device, static_cast<int64_t>(x.size()),
      [=] __device__(int64_t k) {
        px[k] = __fadd_rn(px[k], static_cast<float>(__dmul_rn(gamma, pa[k])));
      },
      "ApplyScaled"));
  MURMUR_ASSIGN_OR_RETURN(
      *squares, SumSquares(
                    device, static_cast<int64_t>(acc.size()),
                    [=] __device__(int64_t k) { return pa[k]; }, "ApplyScaled"));
  return OkStatus();
}

Status DivideInto(const Device& device, std::span<const double> acc, double divisor,
                  std::span<float> out) {
  const double* pa = acc.data();
  float* po = out.data();
  return ForEach(
      device, static_cast<int64_t>(out.size()),
      [=] __device__(int64_t k) { po[k] = static_cast<float>(__ddiv_rn(pa[k], divisor)); },
      "DivideInto");
}

Status SquaredDistance(const Device& device, std::span<const float> a, std::span<const float> b,
                       double* out) {
  const float* pa = a.data();
  const float* pb = b.data();
  MURMUR_ASSIGN_OR_RETURN(
      *out, SumSquares(
                device, static_cast<int64_t>(a.size()),
                [=] __device__(int64_t k) {
                  return __dsub_rn(static_cast<double>(pa[k]), static_cast<double>(pb[k]));
                },
                "SquaredDistance"));
  return OkStatus();
}

Status OuterStep(const Device& device, double lr, double momentum, bool nesterov,
                 std::span<float> anchor, std::span<float> velocity, std::span<float> x) {
  const auto l = static_cast<float>(lr);
  const auto mu = static_cast<float>(momentum);
  float* pa = anchor.data();
  float* pv = velocity.data();
  float* px = x.data();
  return ForEach(
      device, static_cast<int64_t>(anchor.size()),
      [=] __device__(int64_t k) {
        const float d = __fsub_rn(pa[k], px[k]);
        const float v = __fadd_rn(__fmul_rn(mu, pv[k]), d);
        pv[k] = v;
        const float step = nesterov ? __fadd_rn(d, __fmul_rn(mu, v)) : v;
        const float a = __fsub_rn(pa[k], __fmul_rn(l, step));
        pa[k] = a;
        px[k] = a;
      },
      "OuterStep");
}

Status ConsensusStep(const Device& device, double gamma,
                     std::span<const std::span<const float>> copies,
                     std::span<const double> weights, std::span<const float> public_copy,
                     std::span<float> x, std::span<float> scratch, ConsensusSquares* squares) {
  const auto n = static_cast<int64_t>(x.size());
  const float* pp = public_copy.data();
  float* pm = scratch.data();
  float* px = x.data();
  // m_k into scratch, a copy at a time in the order given; the first term is added to +0, as
  // the definition's zeroed sum (with no copies, m is +0).
  for (size_t j = 0; j < std::max<size_t>(copies.size(), 1); ++j) {
    const bool first = j == 0;
    const float* pc = copies.empty() ? nullptr : copies[j].data();
    const float w = copies.empty() ? 0.0f : static_cast<float>(weights[j]);
    MURMUR_RETURN_IF_ERROR(ForEach(
        device, n,
        [=] __device__(int64_t k) {
          const float before = first ? 0.0f : pm[k];
          pm[k] = pc == nullptr ? 0.0f
                                : __fadd_rn(before, __fmul_rn(w, __fsub_rn(pc[k], pp[k])));
        },
        "ConsensusStep"));
  }
  const auto g = static_cast<float>(gamma);
  MURMUR_RETURN_IF_ERROR(ForEach(
      device, n, [=] __device__(int64_t k) { px[k] = __fadd_rn(px[k], __fmul_rn(g, pm[k])); },
      "ConsensusStep"));
  MURMUR_ASSIGN_OR_RETURN(
      squares->mix,
      SumSquares(
          device, n, [=] __device__(int64_t k) { return static_cast<double>(pm[k]); },
          "ConsensusStep"));
  // Qualified: the kernels:: dispatchers of the same names are found through Device too.
  MURMUR_RETURN_IF_ERROR(cuda::SumOfSquares(device, public_copy, &squares->public_copy));
  return cuda::SquaredDistance(device, x, public_copy, &squares->residual);
}

}  // namespace murmur::kernels::cuda
