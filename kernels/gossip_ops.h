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

// The consensus step of a CHOCO round (gossip/choco.h, step 5) and the norms the round reports:
//   x_k += float(gamma · m_k),  m_k = Σ_j weights_j · (double(copies_j,k) − public_k)
// with the sum over j in the order given, the same bits as zeroing an accumulator, one
// AccumulateDifference per copy and ApplyScaled. Sets squares->mix = Σ m_k², ->public_copy =
// Σ public_k², ->residual = Σ (x_k − public_k)² of x after the step. On the CPU one pass over the
// vectors (scratch unused, may be empty); other backends compose the steps above in `scratch`
// (REQUIRES scratch.size() == x.size() there).
struct ConsensusSquares {
  double mix = 0;          // Σ_k m_k²
  double public_copy = 0;  // Σ_k public_k²
  double residual = 0;     // Σ_k (x_k − public_k)², x after the step
};
Status ConsensusStep(const Device& device, double gamma,
                     std::span<const std::span<const float>> copies,
                     std::span<const double> weights, std::span<const float> public_copy,
                     std::span<float> x, std::span<double> scratch, ConsensusSquares* squares);

}  // namespace murmur::kernels
