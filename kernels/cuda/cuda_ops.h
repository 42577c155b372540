#pragma once
// The CUDA backend of kernels/ops.h and kernels/compress_ops.h, declared without CUDA types so
// kernels/ops.cc and kernels/compress_ops.cc can call it. fp32 only. Shapes are checked by the
// callers; these check what only the device can (label ranges, row indices) and turn CUDA and
// cuBLAS errors into Status (kInternal, naming the call and the device's error string).
// Everything runs on the legacy default stream of `device`, so calls are ordered without events.

#include <cstdint>
#include <span>

#include "base/config.h"
#include "base/status.h"
#include "kernels/compress_ops.h"
#include "kernels/device.h"
#include "kernels/gossip_ops.h"
#include "kernels/ops.h"
#include "kernels/tensor.h"
#if !MURMUR_WITH_CUDA
#error "kernels/cuda is built only with MURMUR_WITH_CUDA"
#endif

namespace murmur::kernels::cuda {

// Memory (kernels/memory.h).
StatusOr<void*> Allocate(const Device& device, size_t bytes);
void Free(const Device& device, void* pointer);
Status Copy(const Device& dst_device, void* dst, const Device& src_device, const void* src,
            size_t bytes);
Status Zero(const Device& device, void* pointer, size_t bytes);
Status Synchronize(const Device& device);
// kInvalidArgument unless `pointer` is device (or managed) memory of `device`.
Status CheckPointer(const Device& device, const void* pointer);

// Every op of kernels/ops.inc, compress_ops.inc and gossip_ops.inc, as
// `Status Op(const Device& device, parameters)`: the REAL ops for float only.
#define MURMUR_KERNEL MURMUR_DECLARE_DEVICE_KERNEL
#include "kernels/ops.inc"  // IWYU pragma: export
#define MURMUR_KERNEL MURMUR_DECLARE_DEVICE_KERNEL
#include "kernels/compress_ops.inc"  // IWYU pragma: export
#define MURMUR_KERNEL MURMUR_DECLARE_DEVICE_KERNEL
#include "kernels/gossip_ops.inc"  // IWYU pragma: export

}  // namespace murmur::kernels::cuda
