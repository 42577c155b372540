#pragma once
// The CUDA backend's entry points, declared without CUDA types so kernels/ can call them.
// Only files in kernels/cuda/ include CUDA headers. The GPU backend issue adds the kernels of
// kernels/ops.h here (cuBLAS GEMM, fused bias/ReLU, losses, SGD, compression kernels).

#include "base/config.h"
#include "base/status.h"
#if !MURMUR_WITH_CUDA
#error "kernels/cuda is built only with MURMUR_WITH_CUDA"
#endif

namespace murmur::kernels::cuda {

// Devices visible to this process; 0 when there is no driver or no GPU (never an error: a
// CPU-only machine is a normal place to run).
int DeviceCount();

// Opens the libraries a GPU context needs (cuBLAS; cublas_loader.h), once per process.
Status LoadLibraries();

}  // namespace murmur::kernels::cuda
