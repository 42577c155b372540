#pragma once
// The vector arithmetic of CHOCO gossip (gossip/choco.h) on a device, so a GPU node keeps its
// model, its public copy x̂_i and its copies x̂_j of the peers' public copies in device memory
// and only compressed updates cross PCIe (issue 21).
//
// Same conventions as compress_ops.h: shapes first (kInvalidArgument, nothing written), memory
// of the device, scalar results in host memory. Element-wise results are bit for bit the same on
// every backend (one double or float expression per element, no fused multiply-add); sums over
// the vector (the `squares` results) are accumulated in double, in base/lane_sum.h's fixed order
// on the CPU and in an unspecified order on a GPU, so they agree to about 1e-15 relative.

#include <span>

#include "base/status.h"
#include "kernels/device.h"

namespace murmur::kernels {

// out_k = a_k − b_k. out may alias a.
Status Subtract(const Device& device, std::span<const float> a, std::span<const float> b,
                std::span<float> out);

// acc_k += w · (double(x_k) − base_k): one peer's term of the consensus step Σ_j w_ij (x̂_j − x̂_i).
Status AccumulateDifference(const Device& device, double w, std::span<const float> x,
                            std::span<const float> base, std::span<double> acc);

// acc_k += w · x_k: one term of a weighted average.
Status AccumulateScaled(const Device& device, double w, std::span<const float> x,
                        std::span<double> acc);

// x_k += float(gamma · acc_k), and *squares = Σ acc_k² (the consensus distance before γ).
Status ApplyScaled(const Device& device, double gamma, std::span<const double> acc,
                   std::span<float> x, double* squares);

// out_k = float(acc_k / divisor). REQUIRES divisor != 0.
Status DivideInto(const Device& device, std::span<const double> acc, double divisor,
                  std::span<float> out);

// *out = Σ (double(a_k) − b_k)².
Status SquaredDistance(const Device& device, std::span<const float> a, std::span<const float> b,
                       double* out);

// The outer optimizer's step (gossip/outer_optimizer.h), in float arithmetic with l = float(lr)
// and μ = float(momentum), one rounding per operation:
//   d_k = a_k ⊖ x_k;  v_k = (μ ⊗ v_k) ⊕ d_k;  s_k = nesterov ? d_k ⊕ (μ ⊗ v_k) : v_k;
//   a_k = a_k ⊖ (l ⊗ s_k);  x_k = a_k.
// `anchor` is a, `velocity` v (the outer momentum buffer), `x` the model after the round's mix.
Status OuterStep(const Device& device, double lr, double momentum, bool nesterov,
                 std::span<float> anchor, std::span<float> velocity, std::span<float> x);

// The consensus step of a CHOCO round (gossip/choco.h, step 5) and the norms the round reports,
// in float arithmetic with g = float(gamma) and w_j = float(weights_j):
//   x_k = x_k ⊕ (g ⊗ m_k),  m_k = (…((0 ⊕ w_1 ⊗ (c_1,k ⊖ p_k)) ⊕ w_2 ⊗ (c_2,k ⊖ p_k)) …)
// (c_j = copies_j, p = public_copy; each operation one float rounding, the copies in the order
// given, 0 ⊕ turning −0 into +0). The terms are small differences of close values, so float
// loses nothing the model keeps; in double, converting every operand made the step twice as
// slow (issue 22). Sets squares->mix = Σ m_k², ->public_copy = Σ p_k², ->residual =
// Σ (x_k − p_k)² of x after the step, in double. On the CPU one pass over the vectors (scratch
// unused, may be empty); a GPU sums the terms into `scratch` (REQUIRES scratch.size() == x.size()
// there).
struct ConsensusSquares {
  double mix = 0;          // Σ_k m_k²
  double public_copy = 0;  // Σ_k public_k²
  double residual = 0;     // Σ_k (x_k − public_k)², x after the step
};
Status ConsensusStep(const Device& device, double gamma,
                     std::span<const std::span<const float>> copies,
                     std::span<const double> weights, std::span<const float> public_copy,
                     std::span<float> x, std::span<float> scratch, ConsensusSquares* squares);

}  // namespace murmur::kernels
