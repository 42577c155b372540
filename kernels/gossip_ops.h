#pragma once
// The vector arithmetic of CHOCO gossip (gossip/choco.h) on a device, so a GPU node keeps its
// model, its public copy x̂_i and its copies x̂_j of the peers' public copies in device memory
// and only compressed updates cross PCIe.
//
// Same conventions as compress_ops.h: shapes first (kInvalidArgument, nothing written), memory
// of the device, scalar results in host memory. Element-wise results are bit for bit the same on
// every backend (one double or float expression per element, no fused multiply-add); sums over
// the vector (the `squares` results) are accumulated in double, in base/lane_sum.h's fixed order
// on the CPU and in an unspecified order on a GPU, so they agree to about 1e-15 relative.

#include <span>

#include "base/status.h"
#include "kernels/device.h"
#include "kernels/op_table.h"

namespace murmur::kernels {

// What ConsensusStep reports of a CHOCO round, in double.
struct ConsensusSquares {
  double mix = 0;          // Σ_k m_k²
  double public_copy = 0;  // Σ_k public_k²
  double residual = 0;     // Σ_k (x_k − public_k)², x after the step
};

// Status Subtract(const Device& device, ...) and the rest: each op and its contract in
// gossip_ops.inc.
#define MURMUR_KERNEL MURMUR_DECLARE_DEVICE_KERNEL
#include "kernels/gossip_ops.inc"  // IWYU pragma: export

}  // namespace murmur::kernels
