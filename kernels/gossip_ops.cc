#include "kernels/gossip_ops.h"

#include <string>

#include "kernels/compress_ops.h"
#include "kernels/cpu/cpu_gossip_ops.h"
#include "kernels/gpu_call.h"

namespace murmur::kernels {
namespace {

Status Mismatch(const char* op, size_t na, size_t nb) {
  return InvalidArgumentError(std::string(op) + ": operands of " + std::to_string(na) + " and " +
                              std::to_string(nb) + " elements");
}

}  // namespace

Status Subtract(const Device& device, std::span<const float> a, std::span<const float> b,
                std::span<float> out) {
  [[maybe_unused]] constexpr const char* kOp = "Subtract";
  if (a.size() != b.size()) return Mismatch(kOp, a.size(), b.size());
  if (a.size() != out.size()) return Mismatch(kOp, a.size(), out.size());
  if (device.is_cpu()) {
    cpu::Subtract(a, b, out);
    return OkStatus();
  }
  MURMUR_GPU_CALL(Subtract(device, a, b, out));
}

Status AccumulateDifference(const Device& device, double w, std::span<const float> x,
                            std::span<const float> base, std::span<double> acc) {
  [[maybe_unused]] constexpr const char* kOp = "AccumulateDifference";
  if (x.size() != base.size()) return Mismatch(kOp, x.size(), base.size());
  if (x.size() != acc.size()) return Mismatch(kOp, x.size(), acc.size());
  if (device.is_cpu()) {
    cpu::AccumulateDifference(w, x, base, acc);
    return OkStatus();
  }
  MURMUR_GPU_CALL(AccumulateDifference(device, w, x, base, acc));
}

Status AccumulateScaled(const Device& device, double w, std::span<const float> x,
                        std::span<double> acc) {
  [[maybe_unused]] constexpr const char* kOp = "AccumulateScaled";
  if (x.size() != acc.size()) return Mismatch(kOp, x.size(), acc.size());
  if (device.is_cpu()) {
    cpu::AccumulateScaled(w, x, acc);
    return OkStatus();
  }
  MURMUR_GPU_CALL(AccumulateScaled(device, w, x, acc));
}

Status ApplyScaled(const Device& device, double gamma, std::span<const double> acc,
                   std::span<float> x, double* squares) {
  [[maybe_unused]] constexpr const char* kOp = "ApplyScaled";
  if (squares == nullptr) return InvalidArgumentError("ApplyScaled: result is null");
  if (x.size() != acc.size()) return Mismatch(kOp, acc.size(), x.size());
  if (device.is_cpu()) {
    *squares = cpu::ApplyScaled(gamma, acc, x);
    return OkStatus();
  }
  MURMUR_GPU_CALL(ApplyScaled(device, gamma, acc, x, squares));
}

Status DivideInto(const Device& device, std::span<const double> acc, double divisor,
                  std::span<float> out) {
  [[maybe_unused]] constexpr const char* kOp = "DivideInto";
  if (acc.size() != out.size()) return Mismatch(kOp, acc.size(), out.size());
  if (divisor == 0) return InvalidArgumentError("DivideInto: divisor is zero");
  if (device.is_cpu()) {
    cpu::DivideInto(acc, divisor, out);
    return OkStatus();
  }
  MURMUR_GPU_CALL(DivideInto(device, acc, divisor, out));
}

Status SquaredDistance(const Device& device, std::span<const float> a, std::span<const float> b,
                       double* out) {
  [[maybe_unused]] constexpr const char* kOp = "SquaredDistance";
  if (out == nullptr) return InvalidArgumentError("SquaredDistance: result is null");
  if (a.size() != b.size()) return Mismatch(kOp, a.size(), b.size());
  if (device.is_cpu()) {
    *out = cpu::SquaredDistance(a, b);
    return OkStatus();
  }
  MURMUR_GPU_CALL(SquaredDistance(device, a, b, out));
}

Status OuterStep(const Device& device, double lr, double momentum, bool nesterov,
                 std::span<float> anchor, std::span<float> velocity, std::span<float> x) {
  [[maybe_unused]] constexpr const char* kOp = "OuterStep";
  if (anchor.size() != velocity.size()) return Mismatch(kOp, anchor.size(), velocity.size());
  if (anchor.size() != x.size()) return Mismatch(kOp, anchor.size(), x.size());
  if (device.is_cpu()) {
    cpu::OuterStep(lr, momentum, nesterov, anchor, velocity, x);
    return OkStatus();
  }
  MURMUR_GPU_CALL(OuterStep(device, lr, momentum, nesterov, anchor, velocity, x));
}

Status ConsensusStep(const Device& device, double gamma,
                     std::span<const std::span<const float>> copies,
                     std::span<const double> weights, std::span<const float> public_copy,
                     std::span<float> x, std::span<float> scratch, ConsensusSquares* squares) {
  constexpr const char* kOp = "ConsensusStep";
  if (squares == nullptr) return InvalidArgumentError("ConsensusStep: result is null");
  if (copies.size() != weights.size()) return Mismatch(kOp, copies.size(), weights.size());
  if (x.size() != public_copy.size()) return Mismatch(kOp, x.size(), public_copy.size());
  for (std::span<const float> c : copies) {
    if (c.size() != x.size()) return Mismatch(kOp, c.size(), x.size());
  }
  if (device.is_cpu()) {
    *squares = cpu::ConsensusStep(gamma, copies, weights, public_copy, x);
    return OkStatus();
  }
  if (scratch.size() != x.size()) return Mismatch(kOp, scratch.size(), x.size());
  MURMUR_GPU_CALL(ConsensusStep(device, gamma, copies, weights, public_copy, x, scratch, squares));
}

}  // namespace murmur::kernels
