#pragma once
// Where a kernel runs. Pointers passed with a CPU device are host memory; with a CUDA device they
// are device memory on that GPU. The CPU backend (Eigen) is always built; the CUDA backend exists
// when the build has MURMUR_WITH_CUDA.

#include <string>

#include "base/status.h"

namespace murmur::kernels {

enum class DeviceKind { kCpu, kCuda };

struct Device {
  DeviceKind kind = DeviceKind::kCpu;
  int index = 0;  // GPU ordinal for kCuda

  static Device Cpu() { return Device{}; }
  static Device Cuda(int index = 0) { return Device{DeviceKind::kCuda, index}; }
  std::string ToString() const;
};

// Number of CUDA devices this process can use: 0 on a machine without a GPU or driver, and 0 in
// a build without CUDA. Never fails: a missing driver is the same as no device.
int CudaDeviceCount();

}  // namespace murmur::kernels
