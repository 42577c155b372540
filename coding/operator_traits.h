#pragma once
// Which options an operator takes (internal to coding/: the compressor and its spec parser).

#include <algorithm>
#include <cmath>
#include <limits>

#include "coding/update.h"

namespace murmur::coding::internal {

// The selections: topk, dgc, threshold, onebit (a residual clip is relative to their threshold).
inline bool HasThreshold(Operator op) {
  return op == Operator::kTopK || op == Operator::kSampledTopK || op == Operator::kThreshold ||
         op == Operator::kOneBit;
}
inline bool HasRatio(Operator op) { return op == Operator::kTopK || op == Operator::kSampledTopK; }
inline bool HasTau(Operator op) { return op == Operator::kThreshold || op == Operator::kOneBit; }
inline bool HasValueChoice(Operator op) { return HasRatio(op) || op == Operator::kThreshold; }
// The quantizers: qsgd, int8 (levels of a scale, every value sent).
inline bool IsQuantizer(Operator op) { return op == Operator::kQsgd || op == Operator::kInt8; }

// A selection's output as it is sent, by the host and the device compressor alike: onebit's
// values become ±tau (sign coding, scale tau), the others are rounded to `mantissa_bits`.
// Returns the threshold the step met (a residual clip is relative to it): tau where the
// operator has one, else the smallest magnitude kept (0 for none).
inline float FinishSelection(Operator op, float tau, int mantissa_bits, Update& out) {
  if (op == Operator::kOneBit) {
    for (float& v : out.values) v = std::copysign(tau, v);
    out.format.coding = ValueCoding::kSign;
    out.format.scale = tau;
    return tau;
  }
  float threshold = tau;
  if (!HasTau(op)) {
    threshold = out.values.empty() ? 0.0f : std::numeric_limits<float>::max();
    for (float v : out.values) threshold = std::min(threshold, std::fabs(v));
  }
  out.format = QuantizeFloats(out.values, mantissa_bits);
  return threshold;
}

}  // namespace murmur::coding::internal
