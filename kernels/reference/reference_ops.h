#pragma once
// Naive host versions of the REAL ops of kernels/ops.h (kernels/op_table.h), written for
// obviousness, used only by tests as the reference the fast backends are compared with (as CUTLASS
// util/reference/host). Shapes are assumed valid.

#include <cstdint>
#include <span>

#include "kernels/ops.h"
#include "kernels/tensor.h"

namespace murmur::kernels::reference {

#define MURMUR_KERNEL MURMUR_DECLARE_REFERENCE_KERNEL
#include "kernels/ops.inc"  // IWYU pragma: export

}  // namespace murmur::kernels::reference
