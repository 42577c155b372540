#include "kernels/cuda/cuda_context.h"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/cublas_loader.h"
#include "kernels/cuda/cuda_ops.h"

namespace murmur::kernels::cuda {

Status Check(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return OkStatus();
  cudaGetLastError();  // clear a non-sticky error so the next call is not blamed for it
  return InternalError(std::string(what) + ": " + cudaGetErrorName(error) + " (" +
                       cudaGetErrorString(error) + ")");
}

Status CheckBlas(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return OkStatus();
  auto blas = LoadBlas();  // loaded: a status comes from a call into it
  if (!blas.ok()) return InternalError(std::string(what) + ": cuBLAS status " + std::to_string(status));
  return InternalError(std::string(what) + ": " + (*blas)->status_name(status) + " (" +
                       (*blas)->status_string(status) + ")");
}

Status CheckLaunch(const char* what) { return Check(cudaGetLastError(), what); }

StatusOr<Context*> GetContext(const Device& device) {
  thread_local std::vector<Context*> contexts;  // by ordinal; see the header on teardown
  if (device.index < 0) return InvalidArgumentError("negative CUDA ordinal");
  if (const cudaError_t error = cudaSetDevice(device.index); error != cudaSuccess) {
    cudaGetLastError();
    return UnavailableError(device.ToString() + ": no such CUDA device (" +
                            cudaGetErrorString(error) + ")");
  }
  const auto index = static_cast<size_t>(device.index);
  if (index < contexts.size() && contexts[index] != nullptr) return contexts[index];
  auto context = std::make_unique<Context>();
  context->device = device.index;
  MURMUR_ASSIGN_OR_RETURN(const Blas* blas, LoadBlas());
  context->gemm_ex = blas->gemm_ex;
  MURMUR_RETURN_IF_ERROR(CheckBlas(blas->create(&context->blas), "cublasCreate"));
  MURMUR_RETURN_IF_ERROR(Check(cudaDeviceGetAttribute(&context->multiprocessors,
                                                      cudaDevAttrMultiProcessorCount, device.index),
                               "cudaDeviceGetAttribute(multiprocessors)"));
  MURMUR_RETURN_IF_ERROR(
      Check(cudaMalloc(&context->device_scalars, sizeof(Scalars)), "cudaMalloc(scalars)"));
  MURMUR_RETURN_IF_ERROR(
      Check(cudaMallocHost(&context->host_scalars, sizeof(Scalars)), "cudaMallocHost(scalars)"));
  if (contexts.size() <= index) contexts.resize(index + 1, nullptr);
  contexts[index] = context.release();
  return contexts[index];
}

StatusOr<void*> Temp(Context& context, size_t bytes) {
  if (bytes <= context.temp_bytes) return context.temp;
  if (context.temp != nullptr) {
    MURMUR_RETURN_IF_ERROR(Check(cudaFree(context.temp), "cudaFree(temp)"));
    context.temp = nullptr;
    context.temp_bytes = 0;
  }
  const size_t grown = bytes + bytes / 4;
  MURMUR_RETURN_IF_ERROR(Check(cudaMalloc(&context.temp, grown), "cudaMalloc(temp)"));
  context.temp_bytes = grown;
  return context.temp;
}

Status ResetScalars(Context& context) {
  return Check(cudaMemsetAsync(context.device_scalars, 0, sizeof(Scalars)), "cudaMemsetAsync");
}

StatusOr<Scalars> ReadScalars(Context& context, const char* what) {
  MURMUR_RETURN_IF_ERROR(Check(cudaMemcpy(context.host_scalars, context.device_scalars,
                                          sizeof(Scalars), cudaMemcpyDeviceToHost),
                               what));
  return *context.host_scalars;
}

StatusOr<void*> Allocate(const Device& device, size_t bytes) {
  MURMUR_RETURN_IF_ERROR(GetContext(device).status());
  void* p = nullptr;
  const cudaError_t error = cudaMalloc(&p, bytes);
  if (error == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    return ResourceExhaustedError(device.ToString() + ": out of device memory allocating " +
                                  std::to_string(bytes) + " bytes");
  }
  if (error != cudaSuccess) {
    cudaGetLastError();
    return UnavailableError(device.ToString() + ": cudaMalloc of " + std::to_string(bytes) +
                            " bytes failed: " + cudaGetErrorString(error));
  }
  return p;
}

void Free(const Device& device, void* pointer) {
  if (cudaSetDevice(device.index) == cudaSuccess) cudaFree(pointer);
  cudaGetLastError();
}

Status Copy(const Device& dst_device, void* dst, const Device& src_device, const void* src,
            size_t bytes) {
  const Device& gpu = dst_device.is_cuda() ? dst_device : src_device;
  MURMUR_RETURN_IF_ERROR(GetContext(gpu).status());
  // cudaMemcpyDefault: unified addressing tells host from device pointers.
  if (dst_device.is_cuda() && src_device.is_cuda() && dst_device.index != src_device.index) {
    return Check(cudaMemcpyPeer(dst, dst_device.index, src, src_device.index, bytes),
                 "cudaMemcpyPeer");
  }
  return Check(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "cudaMemcpy");
}

Status Zero(const Device& device, void* pointer, size_t bytes) {
  MURMUR_RETURN_IF_ERROR(GetContext(device).status());
  return Check(cudaMemsetAsync(pointer, 0, bytes), "cudaMemsetAsync");
}

Status Synchronize(const Device& device) {
  MURMUR_RETURN_IF_ERROR(GetContext(device).status());
  return Check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

Status CheckPointer(const Device& device, const void* pointer) {
  MURMUR_RETURN_IF_ERROR(GetContext(device).status());
  char where[32];
  std::snprintf(where, sizeof(where), "%p", pointer);
  cudaPointerAttributes a{};
  const cudaError_t error = cudaPointerGetAttributes(&a, pointer);
  if (error != cudaSuccess) {
    cudaGetLastError();
    return InvalidArgumentError(std::string("the buffer at ") + where + " is not memory of " +
                                device.ToString() + ": " + cudaGetErrorString(error));
  }
  if (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged) {
    return InvalidArgumentError(std::string("the buffer at ") + where +
                                " is host memory, not memory of " + device.ToString());
  }
  if (a.device != device.index) {
    return InvalidArgumentError(std::string("the buffer at ") + where + " is memory of cuda:" +
                                std::to_string(a.device) + ", not of " + device.ToString());
  }
  return OkStatus();
}

}  // namespace murmur::kernels::cuda
