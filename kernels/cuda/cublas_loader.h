#pragma once
// Internal to kernels/cuda: cuBLAS, loaded the first time a GPU context is made (dlopen), so a
// process that never uses a GPU — every CPU node, `murmur local`'s parent — does not map
// libcublas and libcublasLt (their resident size and start-up relocations). Only the entry
// points kernels/cuda calls.

#include <cublas_v2.h>

#include "base/status.h"

namespace murmur::kernels::cuda {

// cublasGemmEx's C entry point (the header adds a C++ overload taking a cudaDataType compute type).
using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                    int, const void*, const void*, cudaDataType, int, const void*,
                                    cudaDataType, int, const void*, void*, cudaDataType, int,
                                    cublasComputeType_t, cublasGemmAlgo_t);

struct Blas {
  decltype(&cublasCreate_v2) create = nullptr;
  GemmExFn gemm_ex = nullptr;
  decltype(&cublasGetStatusName) status_name = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
};

// The loaded library (once per process; later calls return the same result). kUnavailable
// naming every place tried and dlerror's reason when the library or a symbol is missing.
StatusOr<const Blas*> LoadBlas();

}  // namespace murmur::kernels::cuda
