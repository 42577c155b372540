#pragma once
// The Eigen backend of kernels/ops.h. Same contracts, except that shapes are assumed valid:
// kernels/ops.cc checks them before dispatching here. Single-threaded by design: a node's
// parallelism is across peers, and the trainer owns the one compute thread.

#include <cstdint>
#include <span>

#include "kernels/ops.h"
#include "kernels/tensor.h"

namespace murmur::kernels::cpu {

#include "kernels/backend_ops.inc"  // IWYU pragma: export

template <typename U>
void GatherRows(ConstMatrixView<U> src, std::span<const int64_t> rows, MatrixView<U> dst);

}  // namespace murmur::kernels::cpu
