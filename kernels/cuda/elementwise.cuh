#pragma once
// Internal to kernels/cuda: the grid-stride loop and the launch helper every element-wise kernel
// uses, and a warp sum for reductions.

#include <cstdint>

#include "base/status.h"
#include "kernels/cuda/cuda_context.h"
#include "kernels/device.h"

namespace murmur::kernels::cuda {

#define MURMUR_FOR_EACH(i, n) \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

template <typename F>
__global__ void ForEachKernel(int64_t n, F f) {
  MURMUR_FOR_EACH(i, n) { f(i); }
}

// f(i) for every i < n, queued on `device`'s default stream.
template <typename F>
Status ForEach(const Device& device, int64_t n, F f, const char* what) {
  if (n == 0) return OkStatus();
  MURMUR_RETURN_IF_ERROR(GetContext(device).status());
  ForEachKernel<<<Blocks(n), kThreads>>>(n, f);
  return CheckLaunch(what);
}

__device__ inline double WarpSum(double v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

}  // namespace murmur::kernels::cuda
