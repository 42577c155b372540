#pragma once
// Memory on a Device, without CUDA types. With a CPU device these are plain host allocations and
// memcpy; with a CUDA device, cudaMalloc'd device memory and cudaMemcpy (kernels/cuda). Copies
// are complete when the call returns, so a host buffer may be reused at once; kernels queued
// earlier on the same device finish before a copy reads their output.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>

#include "base/status.h"
#include "kernels/device.h"

namespace murmur::kernels {

// `bytes` of uninitialized memory on `device`; a zero-byte request returns null. kUnavailable
// when the device does not exist (or the build has no CUDA backend), kResourceExhausted when it
// is full; both name the device and the size.
StatusOr<void*> AllocateBytes(const Device& device, size_t bytes);
// Frees what AllocateBytes returned on the same device for `bytes`; null is a no-op.
void FreeBytes(const Device& device, void* pointer, size_t bytes);
// Copies `bytes` from `src` (memory of `src_device`) to `dst` (memory of `dst_device`).
Status CopyBytes(const Device& dst_device, void* dst, const Device& src_device, const void* src,
                 size_t bytes);
// Sets `bytes` bytes at `pointer` to zero.
Status ZeroBytes(const Device& device, void* pointer, size_t bytes);
// Whether `bytes` at `pointer`, memory someone else allocated (a caller's model), is memory of
// `device`: kInvalidArgument naming where it is instead (host memory, another GPU, not a CUDA
// allocation). A CPU device accepts any pointer: host memory cannot be told from a stray one.
// kUnavailable for a CUDA device in a build without CUDA.
Status CheckMemoryOf(const Device& device, const void* pointer, size_t bytes);
// Waits for everything queued on `device` by this thread; reports an asynchronous kernel fault.
Status Synchronize(const Device& device);

// What this process does with GPU memory, over all GPUs and threads (0 on a CPU-only run): the
// bytes it holds through AllocateBytes now, and the bytes CopyBytes moved between the host and a
// GPU since the process started, both ways (the metrics' murmur_device_memory_bytes and
// murmur_host_device_bytes_total).
struct DeviceMemoryStats {
  uint64_t allocated_bytes = 0;
  uint64_t transferred_bytes = 0;
};
DeviceMemoryStats GetDeviceMemoryStats();

// An owning array of T on one device. Move-only. Create's contents start as zeros.
template <typename T>
class Buffer {
 public:
  Buffer() = default;
  static StatusOr<Buffer> Create(const Device& device, size_t size) {
    MURMUR_ASSIGN_OR_RETURN(Buffer b, Uninitialized(device, size));
    MURMUR_RETURN_IF_ERROR(ZeroBytes(device, b.data(), size * sizeof(T)));
    return b;
  }
  // Contents unspecified: for a buffer the caller overwrites whole before reading it (no pass
  // writes zeros that are then overwritten; at start-up, a shard's features are tens of MB).
  static StatusOr<Buffer> Uninitialized(const Device& device, size_t size) {
    MURMUR_ASSIGN_OR_RETURN(void* p, AllocateBytes(device, size * sizeof(T)));
    return Buffer(device, static_cast<T*>(p), size);
  }
  // A copy of `host` on `device`.
  static StatusOr<Buffer> FromHost(const Device& device, std::span<const T> host) {
    MURMUR_ASSIGN_OR_RETURN(Buffer b, Uninitialized(device, host.size()));
    MURMUR_RETURN_IF_ERROR(b.CopyFromHost(host));
    return b;
  }
  Buffer(Buffer&& o) noexcept
      : device_(o.device_),
        data_(std::exchange(o.data_, nullptr)),
        size_(std::exchange(o.size_, 0)) {}
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      FreeBytes(device_, data_, size_ * sizeof(T));
      device_ = o.device_;
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { FreeBytes(device_, data_, size_ * sizeof(T)); }

  const Device& device() const { return device_; }
  T* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::span<T> span() const { return {data_, size_}; }

  // REQUIRES host.size() == size() (kInvalidArgument otherwise).
  Status CopyFromHost(std::span<const T> host) {
    if (host.size() != size_) return SizeMismatch(host.size());
    return CopyBytes(device_, data_, Device::Cpu(), host.data(), size_ * sizeof(T));
  }
  Status CopyToHost(std::span<T> host) const {
    if (host.size() != size_) return SizeMismatch(host.size());
    return CopyBytes(Device::Cpu(), host.data(), device_, data_, size_ * sizeof(T));
  }
  Status Zero() { return ZeroBytes(device_, data_, size_ * sizeof(T)); }

 private:
  Buffer(const Device& device, T* data, size_t size) : device_(device), data_(data), size_(size) {}
  Status SizeMismatch(size_t got) const {
    return InvalidArgumentError("buffer on " + device_.ToString() + " holds " +
                                std::to_string(size_) + " elements, host span has " +
                                std::to_string(got));
  }

  Device device_;
  T* data_ = nullptr;
  size_t size_ = 0;
};

// Copies between spans on possibly different devices. REQUIRES equal sizes.
template <typename T>
Status Copy(const Device& dst_device, std::span<T> dst, const Device& src_device,
            std::span<const T> src) {
  if (dst.size() != src.size()) {
    return InvalidArgumentError("copy of " + std::to_string(src.size()) + " elements into " +
                                std::to_string(dst.size()));
  }
  return CopyBytes(dst_device, dst.data(), src_device, src.data(), src.size_bytes());
}

}  // namespace murmur::kernels
