#pragma once
// Which options an operator takes (internal to coding/: the compressor and its spec parser).

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

}  // namespace murmur::coding::internal
