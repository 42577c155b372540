#pragma once
// Where a kernel runs. Pointers passed with a CPU device are host memory; with a CUDA device they
// are device memory on that GPU. The CPU backend (Eigen) is always built; the CUDA backend exists
// when the build has MURMUR_WITH_CUDA.

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace murmur::kernels {

enum class DeviceKind { kCpu, kCuda };

struct Device {
  DeviceKind kind = DeviceKind::kCpu;
  int index = 0;  // GPU ordinal for kCuda
  // fp32 GEMMs may use TF32 tensor cores (10-bit mantissa inputs, fp32 accumulation): about
  // 1e-3 relative error per product instead of 1e-6. Ignored on the CPU.
  bool allow_tf32 = false;

  static Device Cpu() { return Device{}; }
  static Device Cuda(int index = 0) { return Device{DeviceKind::kCuda, index}; }
  bool is_cpu() const { return kind == DeviceKind::kCpu; }
  bool is_cuda() const { return kind == DeviceKind::kCuda; }
  // "cpu", "cuda:0", "cuda:0+tf32". Inline: the CUDA backend, linked after kernels/, uses it.
  std::string ToString() const {
    if (kind == DeviceKind::kCpu) return "cpu";
    return "cuda:" + std::to_string(index) + (allow_tf32 ? "+tf32" : "");
  }
  friend bool operator==(const Device&, const Device&) = default;
};

// Number of CUDA devices this process can use: 0 on a machine without a GPU or driver, and 0 in
// a build without CUDA. Never fails: a missing driver is the same as no device.
int CudaDeviceCount();

// Opens the GPU math libraries (cuBLAS) a CUDA device needs. They are opened on the first GPU
// context rather than at start, so a process that trains on the CPU never maps them. Once per
// process; kUnavailable naming where it looked and why when they are missing,
// kFailedPrecondition in a build without CUDA.
Status LoadGpuLibraries();

// A `--device` value as parsed, before the machine is asked: auto (a GPU when one is visible,
// else the CPU), cpu, cuda (any GPU: GPU 0 for one process, round-robin over the GPUs for
// murmur local's nodes) or cuda:N.
struct DeviceSpec {
  enum class Kind : uint8_t { kAuto, kCpu, kAnyCuda, kCuda };
  Kind kind = Kind::kAuto;
  int index = 0;  // kCuda's ordinal
  bool wants_gpu() const { return kind == Kind::kAnyCuda || kind == Kind::kCuda; }
  std::string ToString() const;  // as written: "auto", "cpu", "cuda", "cuda:N"
  friend bool operator==(const DeviceSpec&, const DeviceSpec&) = default;
};

// The spec a `--device` text names; kInvalidArgument for anything but auto, cpu, cuda, cuda:N.
StatusOr<DeviceSpec> ParseDeviceSpec(std::string_view text);

// The device a spec names on this machine: cpu; cuda (GPU 0) or cuda:N; auto (GPU 0 when a CUDA
// device is present, else cpu). kFailedPrecondition when CUDA is asked for and this build or
// machine has none, saying which.
StatusOr<Device> ResolveDevice(const DeviceSpec& spec);
// ParseDeviceSpec, then ResolveDevice.
StatusOr<Device> ResolveDevice(std::string_view text);

// --tf32 lets a GPU's tensor cores take fp32 GEMMs; on the CPU it would change nothing, so a run
// that trains there refuses it (kInvalidArgument saying where the run trains) rather than
// accepting a flag that does nothing.
Status CheckTf32(bool tf32, const Device& device);

}  // namespace murmur::kernels
