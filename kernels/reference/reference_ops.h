#pragma once
// Naive host versions of kernels/ops.h, written for obviousness, used only by tests as the
// reference the fast backends are compared with (as CUTLASS util/reference/host). Shapes are
// assumed valid.

#include <cstdint>
#include <span>

#include "kernels/ops.h"
#include "kernels/tensor.h"

namespace murmur::kernels::reference {

#include "kernels/backend_ops.inc"  // IWYU pragma: export

}  // namespace murmur::kernels::reference
