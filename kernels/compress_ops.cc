#include "kernels/compress_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "kernels/cpu/cpu_compress_ops.h"
#include "kernels/gpu_call.h"

namespace murmur::kernels {
namespace {

Status Mismatch(const char* op, const char* a, size_t na, const char* b, size_t nb) {
  return InvalidArgumentError(std::string(op) + ": " + a + " has " + std::to_string(na) +
                              " elements, " + b + " has " + std::to_string(nb));
}

Status NullOut(const char* op) { return InvalidArgumentError(std::string(op) + ": result is null"); }

}  // namespace

Status CountNonFinite(const Device& device, std::span<const float> v, int64_t* count) {
  [[maybe_unused]] constexpr const char* kOp = "CountNonFinite";
  if (count == nullptr) return NullOut(kOp);
  if (device.is_cpu()) {
    *count = cpu::CountNonFinite(v);
    return OkStatus();
  }
  MURMUR_GPU_CALL(CountNonFinite(device, v, count));
}

Status Axpy(const Device& device, float alpha, std::span<const float> x, std::span<float> y) {
  [[maybe_unused]] constexpr const char* kOp = "Axpy";
  if (x.size() != y.size()) return Mismatch(kOp, "x", x.size(), "y", y.size());
  if (device.is_cpu()) {
    cpu::Axpy(alpha, x, y);
    return OkStatus();
  }
  MURMUR_GPU_CALL(Axpy(device, alpha, x, y));
}

Status SumOfSquares(const Device& device, std::span<const float> v, double* out) {
  [[maybe_unused]] constexpr const char* kOp = "SumOfSquares";
  if (out == nullptr) return NullOut(kOp);
  if (device.is_cpu()) {
    *out = cpu::SumOfSquares(v);
    return OkStatus();
  }
  MURMUR_GPU_CALL(SumOfSquares(device, v, out));
}

Status MaxAbs(const Device& device, std::span<const float> v, float* out) {
  [[maybe_unused]] constexpr const char* kOp = "MaxAbs";
  if (out == nullptr) return NullOut(kOp);
  if (device.is_cpu()) {
    *out = cpu::MaxAbs(v);
    return OkStatus();
  }
  MURMUR_GPU_CALL(MaxAbs(device, v, out));
}

Status SelectAtLeast(const Device& device, std::span<const float> v, float tau,
                     std::span<uint32_t> indices, std::span<float> values, int64_t* total) {
  [[maybe_unused]] constexpr const char* kOp = "SelectAtLeast";
  if (total == nullptr) return NullOut(kOp);
  if (!(tau > 0)) return InvalidArgumentError("SelectAtLeast: tau must be > 0");
  if (indices.size() != values.size()) {
    return Mismatch(kOp, "indices", indices.size(), "values", values.size());
  }
  if (v.size() > UINT32_MAX) return InvalidArgumentError("SelectAtLeast: v has 2^32 or more elements");
  if (device.is_cpu()) {
    *total = cpu::SelectAtLeast(v, tau, indices, values);
    return OkStatus();
  }
  MURMUR_GPU_CALL(SelectAtLeast(device, v, tau, indices, values, total));
}

Status TopK(const Device& device, std::span<const float> v, int64_t k,
            std::span<uint32_t> indices, std::span<float> values, int64_t* count) {
  [[maybe_unused]] constexpr const char* kOp = "TopK";
  if (count == nullptr) return NullOut(kOp);
  if (k < 0) return InvalidArgumentError("TopK: k is negative");
  if (indices.size() != values.size()) {
    return Mismatch(kOp, "indices", indices.size(), "values", values.size());
  }
  const int64_t want = std::min<int64_t>(k, static_cast<int64_t>(v.size()));
  if (static_cast<int64_t>(indices.size()) < want) {
    return InvalidArgumentError("TopK: room for " + std::to_string(indices.size()) +
                                " results, k = " + std::to_string(k));
  }
  if (v.size() > UINT32_MAX) return InvalidArgumentError("TopK: v has 2^32 or more elements");
  if (device.is_cpu()) {
    *count = cpu::TopK(v, k, indices, values);
    return OkStatus();
  }
  MURMUR_GPU_CALL(TopK(device, v, k, indices, values, count));
}

Status Gather(const Device& device, std::span<const float> v, std::span<const uint32_t> indices,
              std::span<float> values) {
  [[maybe_unused]] constexpr const char* kOp = "Gather";
  if (indices.size() != values.size()) {
    return Mismatch(kOp, "indices", indices.size(), "values", values.size());
  }
  if (device.is_cpu()) {
    for (size_t i = 0; i < indices.size(); ++i) {
      if (indices[i] >= v.size()) {
        return InvalidArgumentError("Gather: index " + std::to_string(indices[i]) +
                                    " is outside v of " + std::to_string(v.size()));
      }
    }
    cpu::Gather(v, indices, values);
    return OkStatus();
  }
  MURMUR_GPU_CALL(Gather(device, v, indices, values));
}

Status StridedGather(const Device& device, std::span<const float> v, int64_t start,
                     int64_t stride, std::span<float> out) {
  [[maybe_unused]] constexpr const char* kOp = "StridedGather";
  if (stride < 1 || start < 0) return InvalidArgumentError("StridedGather: stride < 1 or start < 0");
  if (!out.empty() &&
      start + static_cast<int64_t>(out.size() - 1) * stride >= static_cast<int64_t>(v.size())) {
    return InvalidArgumentError("StridedGather: " + std::to_string(out.size()) +
                                " samples of stride " + std::to_string(stride) + " from " +
                                std::to_string(start) + " run past v of " +
                                std::to_string(v.size()));
  }
  if (device.is_cpu()) {
    cpu::StridedGather(v, start, stride, out);
    return OkStatus();
  }
  MURMUR_GPU_CALL(StridedGather(device, v, start, stride, out));
}

Status ScatterAdd(const Device& device, std::span<const uint32_t> indices,
                  std::span<const float> values, float alpha, std::span<float> x) {
  [[maybe_unused]] constexpr const char* kOp = "ScatterAdd";
  if (indices.size() != values.size()) {
    return Mismatch(kOp, "indices", indices.size(), "values", values.size());
  }
  if (device.is_cpu()) {
    for (size_t i = 0; i < indices.size(); ++i) {
      if (indices[i] >= x.size()) {
        return InvalidArgumentError("ScatterAdd: index " + std::to_string(indices[i]) +
                                    " is outside x of " + std::to_string(x.size()));
      }
    }
    cpu::ScatterAdd(indices, values, alpha, x);
    return OkStatus();
  }
  MURMUR_GPU_CALL(ScatterAdd(device, indices, values, alpha, x));
}

Status PackSigns(const Device& device, std::span<const float> v, std::span<uint32_t> words) {
  [[maybe_unused]] constexpr const char* kOp = "PackSigns";
  if (words.size() != (v.size() + 31) / 32) {
    return Mismatch(kOp, "v", v.size(), "words (want ceil(n/32))", words.size());
  }
  if (device.is_cpu()) {
    cpu::PackSigns(v, words);
    return OkStatus();
  }
  MURMUR_GPU_CALL(PackSigns(device, v, words));
}

Status UnpackSigns(const Device& device, std::span<const uint32_t> words, float magnitude,
                   std::span<float> out) {
  [[maybe_unused]] constexpr const char* kOp = "UnpackSigns";
  if (words.size() != (out.size() + 31) / 32) {
    return Mismatch(kOp, "out", out.size(), "words (want ceil(n/32))", words.size());
  }
  if (device.is_cpu()) {
    cpu::UnpackSigns(words, magnitude, out);
    return OkStatus();
  }
  MURMUR_GPU_CALL(UnpackSigns(device, words, magnitude, out));
}

template <typename L>
Status StochasticLevels(const Device& device, std::span<const float> v, double per_level,
                        uint32_t levels, uint64_t seed, std::span<L> out) {
  [[maybe_unused]] constexpr const char* kOp = "StochasticLevels";
  if (v.size() != out.size()) return Mismatch(kOp, "v", v.size(), "out", out.size());
  if (levels < 1 || levels > static_cast<uint32_t>(std::numeric_limits<L>::max())) {
    return InvalidArgumentError("StochasticLevels: " + std::to_string(levels) +
                                " levels do not fit the output type (max " +
                                std::to_string(std::numeric_limits<L>::max()) + ")");
  }
  if (!(per_level >= 0 && std::isfinite(per_level))) {
    return InvalidArgumentError("StochasticLevels: per_level must be finite and >= 0");
  }
  if (device.is_cpu()) {
    cpu::StochasticLevels<L>(v, per_level, levels, seed, out);
    return OkStatus();
  }
  MURMUR_GPU_CALL(StochasticLevels<L>(device, v, per_level, levels, seed, out));
}

template <typename L>
Status LevelsToFloat(const Device& device, std::span<const L> level, float scale,
                     uint32_t levels, std::span<float> out) {
  [[maybe_unused]] constexpr const char* kOp = "LevelsToFloat";
  if (level.size() != out.size()) return Mismatch(kOp, "level", level.size(), "out", out.size());
  if (levels < 1) return InvalidArgumentError("LevelsToFloat: levels must be >= 1");
  if (device.is_cpu()) {
    cpu::LevelsToFloat<L>(level, scale, levels, out);
    return OkStatus();
  }
  MURMUR_GPU_CALL(LevelsToFloat<L>(device, level, scale, levels, out));
}

template Status StochasticLevels<int8_t>(const Device&, std::span<const float>, double, uint32_t,
                                         uint64_t, std::span<int8_t>);
template Status StochasticLevels<int16_t>(const Device&, std::span<const float>, double, uint32_t,
                                          uint64_t, std::span<int16_t>);
template Status LevelsToFloat<int8_t>(const Device&, std::span<const int8_t>, float, uint32_t,
                                      std::span<float>);
template Status LevelsToFloat<int16_t>(const Device&, std::span<const int16_t>, float, uint32_t,
                                       std::span<float>);

Status FloatToHalf(const Device& device, std::span<const float> v, std::span<uint16_t> out) {
  [[maybe_unused]] constexpr const char* kOp = "FloatToHalf";
  if (v.size() != out.size()) return Mismatch(kOp, "v", v.size(), "out", out.size());
  if (device.is_cpu()) {
    cpu::FloatToHalf(v, out);
    return OkStatus();
  }
  MURMUR_GPU_CALL(FloatToHalf(device, v, out));
}

Status HalfToFloat(const Device& device, std::span<const uint16_t> h, std::span<float> out) {
  [[maybe_unused]] constexpr const char* kOp = "HalfToFloat";
  if (h.size() != out.size()) return Mismatch(kOp, "h", h.size(), "out", out.size());
  if (device.is_cpu()) {
    cpu::HalfToFloat(h, out);
    return OkStatus();
  }
  MURMUR_GPU_CALL(HalfToFloat(device, h, out));
}

}  // namespace murmur::kernels
