// ChocoGossip's options and verdicts (choco.h): the default consensus step per operator, the
// options' rules, the verdicts' names and the refusal each is counted under.
#include <algorithm>
#include <string>

#include "gossip/choco.h"
#include "gossip/node_io.h"

namespace murmur::gossip {

double DefaultGamma(const coding::CompressorOptions& c) {
  using coding::Operator;
  switch (c.op) {
    case Operator::kNone:
    case Operator::kFp16:
      return 1.0;
    case Operator::kInt8:
      return 0.8;
    case Operator::kQsgd:
      return c.rescale ? 0.34 : 0.2;
    case Operator::kTopK:
    case Operator::kSampledTopK:
      return std::clamp(5.0 * c.ratio, 0.02, 1.0);
    case Operator::kThreshold:
    case Operator::kOneBit:
      return 0.1;
  }
  return 0.1;
}

Status ChocoOptions::Validate() const {
  if (dimension == 0)
    return InvalidArgumentError("CHOCO needs a model with at least one parameter");
  if (!(gamma >= 0 && gamma <= 1)) {
    return InvalidArgumentError(
        "consensus step gamma must be in (0, 1] (0 picks the default), got " +
        std::to_string(gamma));
  }
  if (!(outlier_factor == 0 || outlier_factor >= 1) || !(snapshot_distance >= 0)) {
    return InvalidArgumentError(
        "outlier_factor must be 0 (off) or at least 1, snapshot_distance "
        "at least 0");
  }
  if (!(clip_fraction >= 0 && clip_fraction < 1)) {
    return InvalidArgumentError("clip_fraction must be in [0, 1) (0: no clipped mixing), got " +
                                std::to_string(clip_fraction));
  }
  if (guard_window < 1 || guard_checks < 1) {
    return InvalidArgumentError("divergence guard window and checks must be at least 1");
  }
  return OkStatus();
}

const char* ChocoVerdictName(ChocoVerdict verdict) {
  switch (verdict) {
    case ChocoVerdict::kApplied:
      return "applied";
    case ChocoVerdict::kDuplicate:
      return "duplicate";
    case ChocoVerdict::kGap:
      return "gap";
    case ChocoVerdict::kAwaitingSnapshot:
      return "awaiting_snapshot";
    case ChocoVerdict::kStaleIncarnation:
      return "stale_incarnation";
    case ChocoVerdict::kSnapshotServed:
      return "snapshot_served";
    case ChocoVerdict::kReplayServed:
      return "replay_served";
    case ChocoVerdict::kRejected:
      return "rejected";
    case ChocoVerdict::kOutlier:
      return "outlier";
    case ChocoVerdict::kNotTracked:
      return "not_tracked";
    case ChocoVerdict::kRateLimited:
      return "rate_limited";
    case ChocoVerdict::kClosed: return "closed";
  }
  return "unknown";
}

std::string_view ChocoRefusal(const ChocoStepResult& result) {
  switch (result.verdict) {
    case ChocoVerdict::kOutlier:
      return kRejectOutlier;
    case ChocoVerdict::kNotTracked:
      return kRejectUntracked;
    case ChocoVerdict::kRateLimited:
      return kRejectSnapshotRate;
    case ChocoVerdict::kRejected:
      return DecodeRefusal(result.failure);
    default:
      return {};
  }
}

bool DensityScalable(const coding::CompressorOptions& compressor) {
  return compressor.op == coding::Operator::kTopK;
}

}  // namespace murmur::gossip
