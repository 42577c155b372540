#include "kernels/cuda/cuda_device.h"

#include <cuda_runtime.h>

#include "kernels/cuda/cublas_loader.h"

namespace murmur::kernels::cuda {

int DeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error so later calls are not poisoned
    return 0;
  }
  return count;
}

Status LoadLibraries() { return LoadBlas().status(); }

}  // namespace murmur::kernels::cuda
