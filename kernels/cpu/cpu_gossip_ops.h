#pragma once
// The host versions of kernels/gossip_ops.h, `void Op(parameters)` for every entry of
// kernels/gossip_ops.inc: plain loops, the reference the CUDA versions are compared with. Shapes
// are checked by kernels/gossip_ops.cc. ConsensusStep runs in one pass over the vectors and
// leaves `scratch` alone.

#include <span>

#include "kernels/gossip_ops.h"

namespace murmur::kernels::cpu {

#define MURMUR_KERNEL MURMUR_DECLARE_HOST_KERNEL
#include "kernels/gossip_ops.inc"  // IWYU pragma: export

}  // namespace murmur::kernels::cpu
