#include "kernels/compress_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "kernels/cpu/cpu_compress_ops.h"
#include "kernels/op_dispatch.h"

namespace murmur::kernels {
namespace {

Status Mismatch(const char* op, const char* a, size_t na, const char* b, size_t nb) {
  return InvalidArgumentError(std::string(op) + ": " + a + " has " + std::to_string(na) +
                              " elements, " + b + " has " + std::to_string(nb));
}

Status NotNull(const char* op, const void* result) {
  if (result != nullptr) return OkStatus();
  return InvalidArgumentError(std::string(op) + ": result is null");
}

Status CheckPairs(const char* op, std::span<const uint32_t> indices,
                  std::span<const float> values) {
  if (indices.size() == values.size()) return OkStatus();
  return Mismatch(op, "indices", indices.size(), "values", values.size());
}

// Indices live in device memory on a GPU: the host checks them only on the CPU.
Status CheckIndices(const char* op, const Device& device, std::span<const uint32_t> indices,
                    const char* name, size_t size) {
  if (!device.is_cpu()) return OkStatus();
  for (size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] >= size) {
      return InvalidArgumentError(std::string(op) + ": index " + std::to_string(indices[i]) +
                                  " is outside " + name + " of " + std::to_string(size));
    }
  }
  return OkStatus();
}

Status CheckAddressable(const char* op, std::span<const float> v) {
  if (v.size() <= UINT32_MAX) return OkStatus();
  return InvalidArgumentError(std::string(op) + ": v has 2^32 or more elements");
}

// The checks of each op of compress_ops.inc, called with its op name, device and arguments
// before the dispatch.

Status CheckCountNonFinite(const char* op, const Device&, std::span<const float>, int64_t* count) {
  return NotNull(op, count);
}

Status CheckAxpy(const char* op, const Device&, float, std::span<const float> x,
                 std::span<float> y) {
  if (x.size() != y.size()) return Mismatch(op, "x", x.size(), "y", y.size());
  return OkStatus();
}

Status CheckSumOfSquares(const char* op, const Device&, std::span<const float>, double* out) {
  return NotNull(op, out);
}

Status CheckMaxAbs(const char* op, const Device&, std::span<const float>, float* out) {
  return NotNull(op, out);
}

Status CheckSelectAtLeast(const char* op, const Device&, std::span<const float> v, float tau,
                          std::span<uint32_t> indices, std::span<float> values, int64_t* total) {
  MURMUR_RETURN_IF_ERROR(NotNull(op, total));
  if (!(tau > 0)) return InvalidArgumentError(std::string(op) + ": tau must be > 0");
  MURMUR_RETURN_IF_ERROR(CheckPairs(op, indices, values));
  return CheckAddressable(op, v);
}

Status CheckTopK(const char* op, const Device&, std::span<const float> v, int64_t k,
                 std::span<uint32_t> indices, std::span<float> values, int64_t* count) {
  MURMUR_RETURN_IF_ERROR(NotNull(op, count));
  if (k < 0) return InvalidArgumentError(std::string(op) + ": k is negative");
  MURMUR_RETURN_IF_ERROR(CheckPairs(op, indices, values));
  const int64_t want = std::min<int64_t>(k, static_cast<int64_t>(v.size()));
  if (static_cast<int64_t>(indices.size()) < want) {
    return InvalidArgumentError(std::string(op) + ": room for " + std::to_string(indices.size()) +
                                " results, k = " + std::to_string(k));
  }
  return CheckAddressable(op, v);
}

Status CheckGather(const char* op, const Device& device, std::span<const float> v,
                   std::span<const uint32_t> indices, std::span<float> values) {
  MURMUR_RETURN_IF_ERROR(CheckPairs(op, indices, values));
  return CheckIndices(op, device, indices, "v", v.size());
}

Status CheckStridedGather(const char* op, const Device&, std::span<const float> v, int64_t start,
                          int64_t stride, std::span<float> out) {
  if (stride < 1 || start < 0) {
    return InvalidArgumentError(std::string(op) + ": stride < 1 or start < 0");
  }
  if (!out.empty() &&
      start + static_cast<int64_t>(out.size() - 1) * stride >= static_cast<int64_t>(v.size())) {
    return InvalidArgumentError(std::string(op) + ": " + std::to_string(out.size()) +
                                " samples of stride " + std::to_string(stride) + " from " +
                                std::to_string(start) + " run past v of " +
                                std::to_string(v.size()));
  }
  return OkStatus();
}

Status CheckScatterAdd(const char* op, const Device& device, std::span<const uint32_t> indices,
                       std::span<const float> values, float, std::span<float> x) {
  MURMUR_RETURN_IF_ERROR(CheckPairs(op, indices, values));
  return CheckIndices(op, device, indices, "x", x.size());
}

Status CheckPackSigns(const char* op, const Device&, std::span<const float> v,
                      std::span<uint32_t> words) {
  if (words.size() == (v.size() + 31) / 32) return OkStatus();
  return Mismatch(op, "v", v.size(), "words (want ceil(n/32))", words.size());
}

Status CheckUnpackSigns(const char* op, const Device&, std::span<const uint32_t> words, float,
                        std::span<float> out) {
  if (words.size() == (out.size() + 31) / 32) return OkStatus();
  return Mismatch(op, "out", out.size(), "words (want ceil(n/32))", words.size());
}

template <typename T>
Status CheckStochasticLevels(const char* op, const Device&, std::span<const float> v,
                             double per_level, uint32_t levels, uint64_t, std::span<T> out) {
  if (v.size() != out.size()) return Mismatch(op, "v", v.size(), "out", out.size());
  if (levels < 1 || levels > static_cast<uint32_t>(std::numeric_limits<T>::max())) {
    return InvalidArgumentError(std::string(op) + ": " + std::to_string(levels) +
                                " levels do not fit the output type (max " +
                                std::to_string(std::numeric_limits<T>::max()) + ")");
  }
  if (!(per_level >= 0 && std::isfinite(per_level))) {
    return InvalidArgumentError(std::string(op) + ": per_level must be finite and >= 0");
  }
  return OkStatus();
}

template <typename T>
Status CheckLevelsToFloat(const char* op, const Device&, std::span<const T> level, float,
                          uint32_t levels, std::span<float> out) {
  if (level.size() != out.size()) return Mismatch(op, "level", level.size(), "out", out.size());
  if (levels < 1) return InvalidArgumentError(std::string(op) + ": levels must be >= 1");
  return OkStatus();
}

Status CheckFloatToHalf(const char* op, const Device&, std::span<const float> v,
                        std::span<uint16_t> out) {
  if (v.size() == out.size()) return OkStatus();
  return Mismatch(op, "v", v.size(), "out", out.size());
}

Status CheckHalfToFloat(const char* op, const Device&, std::span<const uint16_t> h,
                        std::span<float> out) {
  if (h.size() == out.size()) return OkStatus();
  return Mismatch(op, "h", h.size(), "out", out.size());
}

}  // namespace

#define MURMUR_KERNEL MURMUR_DISPATCH_KERNEL
#include "kernels/compress_ops.inc"
#define MURMUR_KERNEL MURMUR_INSTANTIATE_HOST_KERNEL
#include "kernels/compress_ops.inc"

}  // namespace murmur::kernels
