#pragma once
// The Eigen backend of kernels/ops.h: `void Op(parameters)` for every entry of kernels/ops.inc.
// Same contracts, except that shapes are assumed valid: kernels/ops.cc checks them before
// dispatching here. Single-threaded by design: a node's parallelism is across peers, and the
// trainer owns the one compute thread.

#include <cstdint>
#include <span>

#include "kernels/ops.h"
#include "kernels/tensor.h"

namespace murmur::kernels::cpu {

#define MURMUR_KERNEL MURMUR_DECLARE_HOST_KERNEL
#include "kernels/ops.inc"  // IWYU pragma: export

}  // namespace murmur::kernels::cpu
