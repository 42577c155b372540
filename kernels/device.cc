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

std::string DeviceSpec::ToString() const {
  switch (kind) {
    case Kind::kAuto:
      return "auto";
    case Kind::kCpu:
      return "cpu";
    case Kind::kAnyCuda:
      return "cuda";
    case Kind::kCuda:
      return "cuda:" + std::to_string(index);
  }
  return "auto";
}

StatusOr<DeviceSpec> ParseDeviceSpec(std::string_view text) {
  if (text == "auto") return DeviceSpec{};
  if (text == "cpu") return DeviceSpec{DeviceSpec::Kind::kCpu};
  if (text == "cuda") return DeviceSpec{DeviceSpec::Kind::kAnyCuda};
  if (!text.starts_with("cuda:")) {
    return InvalidArgumentError("device '" + std::string(text) +
                                "' is not one of auto, cpu, cuda, cuda:N");
  }
  const StatusOr<int> index = ParseNumber<int>(text.substr(5), "device");
  if (!index.ok() || *index < 0) {
    return InvalidArgumentError("device '" + std::string(text) +
                                "': expected cuda:N with N a GPU ordinal");
  }
  return DeviceSpec{DeviceSpec::Kind::kCuda, *index};
}

StatusOr<Device> ResolveDevice(std::string_view text) {
  MURMUR_ASSIGN_OR_RETURN(const DeviceSpec spec, ParseDeviceSpec(text));
  return ResolveDevice(spec);
}

StatusOr<Device> ResolveDevice(const DeviceSpec& spec) {
  if (spec.kind == DeviceSpec::Kind::kCpu) return Device::Cpu();
  const int count = CudaDeviceCount();
  if (spec.kind == DeviceSpec::Kind::kAuto) return count > 0 ? Device::Cuda(0) : Device::Cpu();
  const int index = spec.kind == DeviceSpec::Kind::kCuda ? spec.index : 0;
  const std::string named = spec.ToString();
  if (!MURMUR_WITH_CUDA) {
    return FailedPreconditionError("device '" + named +
                                   "': this build has no CUDA backend (built without nvcc, "
                                   "MURMUR_WITH_CUDA=OFF); use --device cpu");
  }
  if (count == 0) {
    return FailedPreconditionError("device '" + named +
                                   "': no CUDA device is visible to this process (no GPU, no "
                                   "driver, or CUDA_VISIBLE_DEVICES hides it); use --device cpu "
                                   "or auto");
  }
  if (index >= count) {
    return FailedPreconditionError("device '" + named + "': only " + std::to_string(count) +
                                   " CUDA device(s) visible");
  }
  return Device::Cuda(index);
}

}  // namespace murmur::kernels
