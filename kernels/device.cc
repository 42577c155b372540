#include "kernels/device.h"


#include "base/config.h"
#include "base/spec.h"
#if MURMUR_WITH_CUDA
#include "kernels/cuda/cuda_device.h"
#endif

namespace murmur::kernels {

int CudaDeviceCount() {
#if MURMUR_WITH_CUDA
  return cuda::DeviceCount();
#else
  return 0;
#endif
}

Status LoadGpuLibraries() {
#if MURMUR_WITH_CUDA
  return cuda::LoadLibraries();
#else
  return FailedPreconditionError("this build has no CUDA backend (MURMUR_WITH_CUDA=OFF)");
#endif
}

Status CheckTf32(bool tf32, const Device& device) {
  if (!tf32 || device.is_cuda()) return OkStatus();
  return InvalidArgumentError(
      "tf32: TF32 is a mode of a GPU's tensor cores, and this run trains on the CPU (--device "
      "cuda, or leave --tf32 out)");
}

StatusOr<Device> ResolveDevice(std::string_view spec) {
  if (spec == "cpu") return Device::Cpu();
  const int count = CudaDeviceCount();
  if (spec == "auto") return count > 0 ? Device::Cuda(0) : Device::Cpu();
  int index = 0;
  if (spec.starts_with("cuda:")) {
    std::string_view digits = spec.substr(5);
    const StatusOr<int> parsed = ParseNumber<int>(digits, "device");
    if (parsed.ok()) index = *parsed;
    if (!parsed.ok() || index < 0) {
      return InvalidArgumentError("device '" + std::string(spec) +
                                  "': expected cuda:N with N a GPU ordinal");
    }
  } else if (spec != "cuda") {
    return InvalidArgumentError("device '" + std::string(spec) +
                                "' is not one of auto, cpu, cuda, cuda:N");
  }
  if (!MURMUR_WITH_CUDA) {
    return FailedPreconditionError("device '" + std::string(spec) +
                                   "': this build has no CUDA backend (built without nvcc, "
                                   "MURMUR_WITH_CUDA=OFF); use --device cpu");
  }
  if (count == 0) {
    return FailedPreconditionError("device '" + std::string(spec) +
                                   "': no CUDA device is visible to this process (no GPU, no "
                                   "driver, or CUDA_VISIBLE_DEVICES hides it); use --device cpu "
                                   "or auto");
  }
  if (index >= count) {
    return FailedPreconditionError("device '" + std::string(spec) + "': only " +
                                   std::to_string(count) + " CUDA device(s) visible");
  }
  return Device::Cuda(index);
}

}  // namespace murmur::kernels
