#pragma once
// Internal to kernels/cuda: per-thread, per-GPU state (the cuBLAS handle, scratch for scalar
// results and for CUB's temporary storage) and the conversion of CUDA errors into Status.

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "kernels/cuda/cublas_loader.h"
#include "kernels/device.h"

namespace murmur::kernels::cuda {

// Threads per block for the element-wise kernels, and the grid size for n elements with a
// grid-stride loop (capped so huge n reuse threads rather than launch millions of blocks).
inline constexpr int kThreads = 256;
inline unsigned Blocks(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 65535 * 4 ? 65535 * 4 : blocks));
}

// Scalars a kernel reports back (losses, counts, flags), in one small device block and its
// pinned host mirror.
struct Scalars {
  double sum = 0;                  // a loss or Σ v²
  unsigned long long count = 0;    // a count (selected, non-finite)
  unsigned long long bad = 0;      // invalid inputs seen on the device (labels, row indices)
  unsigned int max_key = 0;        // max |v| as magnitude bits
  unsigned int pad = 0;
};

struct Context {
  int device = 0;
  int multiprocessors = 1;
  cublasHandle_t blas = nullptr;
  GemmExFn gemm_ex = nullptr;  // from the loaded cuBLAS
  Scalars* device_scalars = nullptr;
  Scalars* host_scalars = nullptr;  // pinned
  void* temp = nullptr;             // CUB temporary storage and other scratch, grows
  size_t temp_bytes = 0;
};

// This thread's context for `device`, creating it on first use; makes `device` current. Contexts
// live as long as the thread and are not torn down at exit (freeing after the CUDA runtime's own
// teardown can fault; the driver reclaims everything).
StatusOr<Context*> GetContext(const Device& device);

// At least `bytes` of device scratch (contents undefined), valid until the next Temp call on
// this context.
StatusOr<void*> Temp(Context& context, size_t bytes);

// kInternal naming `what` and CUDA's error string; OK for cudaSuccess.
Status Check(cudaError_t error, const char* what);
Status CheckBlas(cublasStatus_t status, const char* what);
// The launch error of the kernel just queued, if any.
Status CheckLaunch(const char* what);

// The grid for kernels that end in atomics on a few addresses (reductions, histograms): at most
// one full wave of resident blocks, each thread looping over many elements. Blocks(n) launches up
// to 262,140 blocks, and their per-block atomics on one address serialize in L2, far beyond
// the pass's memory time.
inline unsigned ResidentBlocks(const Context& context, int64_t n) {
  const int64_t wave = static_cast<int64_t>(context.multiprocessors) * (2048 / kThreads);
  const unsigned blocks = Blocks(n);
  return static_cast<int64_t>(blocks) > wave ? static_cast<unsigned>(wave) : blocks;
}

// Zeroes the device scalars (queued), and copies them to the host mirror and waits.
Status ResetScalars(Context& context);
StatusOr<Scalars> ReadScalars(Context& context, const char* what);

}  // namespace murmur::kernels::cuda
