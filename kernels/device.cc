#include "kernels/device.h"

#include "base/config.h"
#if MURMUR_WITH_CUDA
#include "kernels/cuda/cuda_device.h"
#endif

namespace murmur::kernels {

std::string Device::ToString() const {
  return kind == DeviceKind::kCpu ? "cpu" : "cuda:" + std::to_string(index);
}

int CudaDeviceCount() {
#if MURMUR_WITH_CUDA
  return cuda::DeviceCount();
#else
  return 0;
#endif
}

}  // namespace murmur::kernels
