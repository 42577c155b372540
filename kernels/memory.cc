#include "kernels/memory.h"

#include <sys/mman.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include "base/config.h"
#if MURMUR_WITH_CUDA
#include "kernels/cuda/cuda_ops.h"
#endif

namespace murmur::kernels {
namespace {

// Host allocations are 64-byte aligned (a cache line; AVX-512 loads). Large ones (a shard, a
// GPU-sized model on the CPU) are 2 MiB aligned and advised as transparent huge pages: first
// touching them then takes one fault per 2 MiB instead of per 4 KiB, which was most of a node's
// start-up on this VM.
constexpr size_t kHostAlignment = 64;
constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kHugeFrom = size_t{8} << 20;

size_t HostAlignment(size_t bytes) { return bytes >= kHugeFrom ? kHugePage : kHostAlignment; }

[[maybe_unused]] Status NoCuda(const Device& device) {
  return UnavailableError(device.ToString() +
                          ": this build has no CUDA backend (MURMUR_WITH_CUDA=OFF)");
}

std::atomic<uint64_t> gpu_allocated{0};
std::atomic<uint64_t> gpu_transferred{0};

}  // namespace

DeviceMemoryStats GetDeviceMemoryStats() {
  return {gpu_allocated.load(std::memory_order_relaxed),
          gpu_transferred.load(std::memory_order_relaxed)};
}

StatusOr<void*> AllocateBytes(const Device& device, size_t bytes) {
  if (bytes == 0) return static_cast<void*>(nullptr);
  if (device.is_cpu()) {
    void* p = ::operator new(bytes, std::align_val_t(HostAlignment(bytes)), std::nothrow);
    if (p == nullptr) {
      return ResourceExhaustedError("cpu: cannot allocate " + std::to_string(bytes) + " bytes");
    }
    if (bytes >= kHugeFrom) ::madvise(p, bytes / kHugePage * kHugePage, MADV_HUGEPAGE);  // a hint
    return p;
  }
#if MURMUR_WITH_CUDA
  StatusOr<void*> p = cuda::Allocate(device, bytes);
  if (p.ok()) gpu_allocated.fetch_add(bytes, std::memory_order_relaxed);
  return p;
#else
  return NoCuda(device);
#endif
}

void FreeBytes(const Device& device, void* pointer, size_t bytes) {
  if (pointer == nullptr) return;
  if (device.is_cpu()) {
    ::operator delete(pointer, std::align_val_t(HostAlignment(bytes)));
    return;
  }
#if MURMUR_WITH_CUDA
  cuda::Free(device, pointer);
  gpu_allocated.fetch_sub(bytes, std::memory_order_relaxed);
#endif
}

Status CopyBytes(const Device& dst_device, void* dst, const Device& src_device, const void* src,
                 size_t bytes) {
  if (bytes == 0) return OkStatus();
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    std::memmove(dst, src, bytes);
    return OkStatus();
  }
#if MURMUR_WITH_CUDA
  if (dst_device.is_cpu() != src_device.is_cpu()) {
    gpu_transferred.fetch_add(bytes, std::memory_order_relaxed);
  }
  return cuda::Copy(dst_device, dst, src_device, src, bytes);
#else
  return NoCuda(dst_device.is_cpu() ? src_device : dst_device);
#endif
}

Status ZeroBytes(const Device& device, void* pointer, size_t bytes) {
  if (bytes == 0) return OkStatus();
  if (device.is_cpu()) {
    std::memset(pointer, 0, bytes);
    return OkStatus();
  }
#if MURMUR_WITH_CUDA
  return cuda::Zero(device, pointer, bytes);
#else
  return NoCuda(device);
#endif
}

Status CheckMemoryOf(const Device& device, const void* pointer, size_t bytes) {
  if (device.is_cpu() || bytes == 0) return OkStatus();
#if MURMUR_WITH_CUDA
  // Both ends: a range that starts in one allocation may run past it into another device's.
  MURMUR_RETURN_IF_ERROR(cuda::CheckPointer(device, pointer));
  return cuda::CheckPointer(device, static_cast<const char*>(pointer) + bytes - 1);
#else
  (void)pointer;
  return NoCuda(device);
#endif
}

Status Synchronize(const Device& device) {
  if (device.is_cpu()) return OkStatus();
#if MURMUR_WITH_CUDA
  return cuda::Synchronize(device);
#else
  return NoCuda(device);
#endif
}

}  // namespace murmur::kernels
