#pragma once
// Private to kernels/: how a dispatcher (compress_ops.cc, gossip_ops.cc) hands an op to the CUDA
// backend. Inside an op that defines `kOp` (its name) and has `device`:
// MURMUR_GPU_CALL(Op(device, ...)) returns cuda::Op(...), or kUnimplemented in a build without
// CUDA.

#include <string>

#include "base/config.h"
#include "base/status.h"
#if MURMUR_WITH_CUDA
#include "kernels/cuda/cuda_ops.h"
#endif

#if MURMUR_WITH_CUDA
#define MURMUR_GPU_CALL(call) return cuda::call
#else
#define MURMUR_GPU_CALL(call) \
  return UnimplementedError(std::string(kOp) + " on " + device.ToString() + ": no CUDA backend")
#endif
