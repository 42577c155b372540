#pragma once
// Learning-rate schedules keyed on training samples seen: the learning rate of a step
// is a function of how far the run is through its sample budget, so every mode reads the same
// curve — `murmur train` over its own samples, a gossip node over the cluster's samples (every
// node at the same point of the schedule), the synchronous modes over iterations × global batch.
//
//   constant            lr
//   step:F1,F2[,factor=K]  lr × K^(milestones passed), milestones at fractions F of the budget
//                       (K = 0.1 unless given; Goyal et al. 2017 §5: ÷10 at 30, 60, 80 epochs)
//   cosine[:final=R]    lr × (R + (1 − R)(1 + cos(π t)) / 2), t the fraction of the budget after
//                       the warm-up (Loshchilov & Hutter, SGDR, ICLR 2017 §3, one cycle; R = 0)
// Any of them with a linear warm-up from lr × 1/warm-up-length to lr over the first
// `warmup_samples` (Goyal et al. 2017 §2.2 "gradual warmup"). The linear scaling rule
// (lr × global batch / reference batch, §2.1) is applied by the caller to `base_lr`.
// After the budget the schedule holds its last value.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace murmur {

enum class LrScheduleKind : uint8_t { kConstant, kStep, kCosine };

struct LrScheduleOptions {
  LrScheduleKind kind = LrScheduleKind::kConstant;
  double base_lr = 0.01;
  int64_t total_samples = 0;    // the budget; step and cosine need it > 0
  int64_t warmup_samples = 0;   // linear warm-up, < total_samples (or any, for constant)
  std::vector<double> milestones;  // step: increasing fractions of the budget in (0, 1)
  double factor = 0.1;             // step: the multiplier at each milestone, in (0, 1]
  double final_fraction = 0;       // cosine: the last learning rate over base_lr, in [0, 1]
};

class LrSchedule {
 public:
  // The schedule a spec names (the grammar above) around `base_lr`; kInvalidArgument with the
  // reason for anything else. total_samples and warmup_samples are set by the caller after.
  static StatusOr<LrScheduleOptions> Parse(std::string_view spec, double base_lr);
  static StatusOr<LrSchedule> Create(const LrScheduleOptions& options);
  LrSchedule() = default;  // constant, base 0.01

  // The learning rate of the step that starts after `samples` samples.
  double At(int64_t samples) const;
  const LrScheduleOptions& options() const { return o_; }
  std::string ToString() const;

 private:
  explicit LrSchedule(const LrScheduleOptions& options) : o_(options) {}
  LrScheduleOptions o_;
};

}  // namespace murmur
