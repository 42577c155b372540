#include "kernels/gossip_ops.h"

#include <string>

#include "kernels/cpu/cpu_gossip_ops.h"
#include "kernels/op_dispatch.h"

namespace murmur::kernels {
namespace {

Status Mismatch(const char* op, size_t na, size_t nb) {
  return InvalidArgumentError(std::string(op) + ": operands of " + std::to_string(na) + " and " +
                              std::to_string(nb) + " elements");
}

Status SameSize(const char* op, size_t na, size_t nb) {
  return na == nb ? OkStatus() : Mismatch(op, na, nb);
}

Status NotNull(const char* op, const void* result) {
  if (result != nullptr) return OkStatus();
  return InvalidArgumentError(std::string(op) + ": result is null");
}

// The checks of each op of gossip_ops.inc, called with its op name, device and arguments before
// the dispatch.

Status CheckSubtract(const char* op, const Device&, std::span<const float> a,
                     std::span<const float> b, std::span<float> out) {
  MURMUR_RETURN_IF_ERROR(SameSize(op, a.size(), b.size()));
  return SameSize(op, a.size(), out.size());
}

Status CheckAccumulateDifference(const char* op, const Device&, double, std::span<const float> x,
                                 std::span<const float> base, std::span<double> acc) {
  MURMUR_RETURN_IF_ERROR(SameSize(op, x.size(), base.size()));
  return SameSize(op, x.size(), acc.size());
}

Status CheckAccumulateScaled(const char* op, const Device&, double, std::span<const float> x,
                             std::span<double> acc) {
  return SameSize(op, x.size(), acc.size());
}

Status CheckApplyScaled(const char* op, const Device&, double, std::span<const double> acc,
                        std::span<float> x, double* squares) {
  MURMUR_RETURN_IF_ERROR(NotNull(op, squares));
  return SameSize(op, acc.size(), x.size());
}

Status CheckDivideInto(const char* op, const Device&, std::span<const double> acc, double divisor,
                       std::span<float> out) {
  MURMUR_RETURN_IF_ERROR(SameSize(op, acc.size(), out.size()));
  if (divisor == 0) return InvalidArgumentError(std::string(op) + ": divisor is zero");
  return OkStatus();
}

Status CheckSquaredDistance(const char* op, const Device&, std::span<const float> a,
                            std::span<const float> b, double* out) {
  MURMUR_RETURN_IF_ERROR(NotNull(op, out));
  return SameSize(op, a.size(), b.size());
}

Status CheckOuterStep(const char* op, const Device&, double, double, bool, std::span<float> anchor,
                      std::span<float> velocity, std::span<float> x) {
  MURMUR_RETURN_IF_ERROR(SameSize(op, anchor.size(), velocity.size()));
  return SameSize(op, anchor.size(), x.size());
}

Status CheckConsensusStep(const char* op, const Device& device, double,
                          std::span<const std::span<const float>> copies,
                          std::span<const double> weights, std::span<const float> public_copy,
                          std::span<float> x, std::span<float> scratch, ConsensusSquares* squares) {
  MURMUR_RETURN_IF_ERROR(NotNull(op, squares));
  MURMUR_RETURN_IF_ERROR(SameSize(op, copies.size(), weights.size()));
  MURMUR_RETURN_IF_ERROR(SameSize(op, x.size(), public_copy.size()));
  for (std::span<const float> c : copies) MURMUR_RETURN_IF_ERROR(SameSize(op, c.size(), x.size()));
  if (device.is_cpu()) return OkStatus();
  return SameSize(op, scratch.size(), x.size());
}

}  // namespace

#define MURMUR_KERNEL MURMUR_DISPATCH_KERNEL
#include "kernels/gossip_ops.inc"

}  // namespace murmur::kernels
