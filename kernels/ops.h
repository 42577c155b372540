#pragma once
// The numeric kernels the trainer uses, over MatrixView / std::span, on a chosen Device.
//
// Every function validates shapes first (CUTLASS's "can implement" step) and returns
// kInvalidArgument, touching no output, when they do not fit; a backend that lacks a kernel
// returns kUnimplemented. Outputs may alias inputs only where a comment says so.
// T is float or double; double exists for gradient checks and runs on the CPU only.
// With a CUDA device every pointer is device memory (kernels/memory.h), scalar results such as
// *loss are written to host memory, and labels are validated on the device (an out-of-range
// label is kInvalidArgument as on the CPU). Host-side failures are reported when the call
// returns; a kernel fault may surface at the next call that synchronizes.

#include <cstdint>
#include <span>

#include "base/status.h"
#include "kernels/device.h"
#include "kernels/op_table.h"
#include "kernels/tensor.h"

namespace murmur::kernels {

enum class Transpose { kNo, kYes };

struct SgdOptions {
  double learning_rate = 0.01;
  double momentum = 0.0;      // 0 disables the velocity buffer
  double weight_decay = 0.0;  // L2 coefficient added to the gradient
  bool nesterov = false;      // REQUIRES momentum > 0
};

// Status Gemm(const Device& device, ...) and the rest: each op and its contract in ops.inc.
#define MURMUR_KERNEL MURMUR_DECLARE_DEVICE_KERNEL
#include "kernels/ops.inc"  // IWYU pragma: export

}  // namespace murmur::kernels
