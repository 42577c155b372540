#pragma once
// The kernel table: every op of ops.h, compress_ops.h and gossip_ops.h is listed once, in
// ops.inc, compress_ops.inc and gossip_ops.inc, as
//
//   MURMUR_KERNEL(Kind, Name, (parameters after the device), (their names))
//
// next to its contract. Each place that needs the ops defines MURMUR_KERNEL as one of the
// generators below and includes the lists, so the public declarations, the CPU, reference and
// CUDA backends' declarations, the checked dispatch and the explicit instantiations all come
// from that one entry (an X-macro list). Adding an op means one entry, its checks (Check<Name>
// in the family's .cc) and one definition per backend; adding a backend means one generator.
//
// Kind says which element types an op is instantiated for:
//   F32     not a template: float vectors (compression and gossip arithmetic);
//   REAL    template on T: float and double on the host, float on CUDA (double is for gradient
//           checks and runs on the CPU only; on a GPU it is kUnimplemented, never a silent host
//           fallback);
//   ROWS    template on T: float and int32_t (features and labels) on every backend;
//   LEVELS  template on T: int8_t and int16_t (quantization levels) on every backend.

#include <type_traits>

#define MURMUR_UNPAREN(...) __VA_ARGS__

#define MURMUR_KERNEL_HEAD_F32
#define MURMUR_KERNEL_HEAD_REAL template <typename T>
#define MURMUR_KERNEL_HEAD_ROWS template <typename T>
#define MURMUR_KERNEL_HEAD_LEVELS template <typename T>
#define MURMUR_KERNEL_TARGS_F32
#define MURMUR_KERNEL_TARGS_REAL <T>
#define MURMUR_KERNEL_TARGS_ROWS <T>
#define MURMUR_KERNEL_TARGS_LEVELS <T>

// `Status Name(const Device& device, parameters)`: the public ops and the CUDA backend's.
#define MURMUR_DECLARE_DEVICE_KERNEL(Kind, Name, Params, Args) \
  MURMUR_KERNEL_HEAD_##Kind Status Name(const Device& device, MURMUR_UNPAREN Params);

// `void Name(parameters)`: a host backend's (cpu/), whose arguments are already checked.
#define MURMUR_DECLARE_HOST_KERNEL(Kind, Name, Params, Args) \
  MURMUR_KERNEL_HEAD_##Kind void Name(MURMUR_UNPAREN Params);

// The naive reference (reference/) has the REAL ops only.
#define MURMUR_KERNEL_REAL_ONLY_F32(...)
#define MURMUR_KERNEL_REAL_ONLY_REAL(...) __VA_ARGS__
#define MURMUR_KERNEL_REAL_ONLY_ROWS(...)
#define MURMUR_KERNEL_REAL_ONLY_LEVELS(...)
#define MURMUR_DECLARE_REFERENCE_KERNEL(Kind, Name, Params, Args) \
  MURMUR_KERNEL_REAL_ONLY_##Kind(MURMUR_DECLARE_HOST_KERNEL(Kind, Name, Params, Args))

// Explicit instantiations, for the element types of the Kind.
#define MURMUR_KERNEL_INSTANTIATE(Name, U) template decltype(Name<U>) Name<U>;
#define MURMUR_KERNEL_HOST_TYPES_F32(Name)
#define MURMUR_KERNEL_HOST_TYPES_REAL(Name) \
  MURMUR_KERNEL_INSTANTIATE(Name, float) MURMUR_KERNEL_INSTANTIATE(Name, double)
#define MURMUR_KERNEL_HOST_TYPES_ROWS(Name) \
  MURMUR_KERNEL_INSTANTIATE(Name, float) MURMUR_KERNEL_INSTANTIATE(Name, int32_t)
#define MURMUR_KERNEL_HOST_TYPES_LEVELS(Name) \
  MURMUR_KERNEL_INSTANTIATE(Name, int8_t) MURMUR_KERNEL_INSTANTIATE(Name, int16_t)
#define MURMUR_KERNEL_CUDA_TYPES_F32(Name)
#define MURMUR_KERNEL_CUDA_TYPES_REAL(Name) MURMUR_KERNEL_INSTANTIATE(Name, float)
#define MURMUR_KERNEL_CUDA_TYPES_ROWS(Name) MURMUR_KERNEL_HOST_TYPES_ROWS(Name)
#define MURMUR_KERNEL_CUDA_TYPES_LEVELS(Name) MURMUR_KERNEL_HOST_TYPES_LEVELS(Name)
#define MURMUR_INSTANTIATE_HOST_KERNEL(Kind, Name, Params, Args) \
  MURMUR_KERNEL_HOST_TYPES_##Kind(Name)
#define MURMUR_INSTANTIATE_REFERENCE_KERNEL(Kind, Name, Params, Args) \
  MURMUR_KERNEL_REAL_ONLY_##Kind(MURMUR_KERNEL_HOST_TYPES_##Kind(Name))
#define MURMUR_INSTANTIATE_CUDA_KERNEL(Kind, Name, Params, Args) \
  MURMUR_KERNEL_CUDA_TYPES_##Kind(Name)

// Whether the CUDA backend runs the op for the element type in hand.
#define MURMUR_KERNEL_ON_CUDA_F32 true
#define MURMUR_KERNEL_ON_CUDA_REAL (!std::is_same_v<T, double>)
#define MURMUR_KERNEL_ON_CUDA_ROWS true
#define MURMUR_KERNEL_ON_CUDA_LEVELS true

// The checked dispatch (ops.cc, compress_ops.cc, gossip_ops.cc): the op's own checks, defined
// before the list as `Status Check<Name>(const char* op, const Device&, parameters)` (a template
// for the template kinds), then the CPU backend or the CUDA backend. MURMUR_KERNEL_CUDA_CALL and
// KernelNotOnCuda are the dispatcher's (kernels/op_dispatch.h).
#define MURMUR_DISPATCH_KERNEL(Kind, Name, Params, Args)                               \
  MURMUR_KERNEL_HEAD_##Kind Status Name(const Device& device, MURMUR_UNPAREN Params) { \
    MURMUR_RETURN_IF_ERROR(                                                            \
        Check##Name MURMUR_KERNEL_TARGS_##Kind(#Name, device, MURMUR_UNPAREN Args));   \
    if (device.is_cpu()) {                                                             \
      cpu::Name MURMUR_KERNEL_TARGS_##Kind Args;                                       \
      return OkStatus();                                                               \
    }                                                                                  \
    if constexpr (MURMUR_KERNEL_ON_CUDA_##Kind) {                                      \
      return MURMUR_KERNEL_CUDA_CALL(Name, MURMUR_KERNEL_TARGS_##Kind, Args);          \
    } else {                                                                           \
      return KernelNotOnCuda(#Name, device, "double runs on the CPU only");            \
    }                                                                                  \
  }
