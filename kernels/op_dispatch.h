#pragma once
// Private to kernels/: what the checked dispatch of op_table.h needs in ops.cc, compress_ops.cc
// and gossip_ops.cc: the CUDA backend's declarations when it is built, and the refusal when an
// op cannot run on the device asked for.

#include "base/config.h"
#include "base/status.h"
#include "kernels/device.h"
#include "kernels/op_table.h"
#if MURMUR_WITH_CUDA
#include "kernels/cuda/cuda_ops.h"
#endif

namespace murmur::kernels {

// kUnimplemented: "<op> on <device>: <why>".
Status KernelNotOnCuda(const char* op, const Device& device, const char* why);

}  // namespace murmur::kernels

#if MURMUR_WITH_CUDA
#define MURMUR_KERNEL_CUDA_CALL(Name, TArgs, Args) cuda::Name TArgs(device, MURMUR_UNPAREN Args)
#else
#define MURMUR_KERNEL_CUDA_CALL(Name, TArgs, Args) \
  KernelNotOnCuda(#Name, device, "this build has no CUDA backend (MURMUR_WITH_CUDA=OFF)")
#endif
