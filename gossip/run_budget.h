#pragma once
// When a gossip node's training ends (gossip_node.h "training"), at the first of: the cluster's
// samples reach the budget (epochs of the whole data set over every member's samples; with a
// learning-rate schedule that decays to zero, also when this node's fresher estimate of them
// does, since every later step would be taken at rate 0), the target accuracy is reached, the
// time limit passed, a quorum of the members finished ("peer"), or the operator stopped the node.
// A member's word alone never ends the run: the sample counts are the claims ledger's
// (claims_ledger.h) and "finished" is believed from a quorum only. Pure. Thread safety: none.

#include <cstdint>
#include <optional>
#include <string_view>

#include "base/clock.h"
#include "base/lr_schedule.h"

namespace murmur::gossip {

// Where the run stands when the budget is checked.
struct BudgetReading {
  int64_t reported_samples = 0;  // the members' believed counts, this node's own as they are now
  int64_t schedule_samples = 0;  // the estimate the learning-rate schedule reads
  double accuracy = -1;          // the latest evaluation (-1: none yet)
  Duration elapsed{0};           // since the node started
  bool quorum_finished = false;
  bool stop_requested = false;
  bool program_ended = false;  // the caller's own training loop ended (StopRequested::finish)
};

class RunBudget {
 public:
  // 0 for a bound not used.
  RunBudget(int64_t budget_samples, double target_accuracy, Duration time_limit,
            const std::optional<LrSchedule>& schedule);

  // Why the run ends now ("epochs", "accuracy", "time", "peer", "stopped", "program"), or empty.
  std::string_view Spent(const BudgetReading& r) const;

 private:
  const int64_t budget_samples_;
  const double target_accuracy_;
  const Duration time_limit_;
  const bool schedule_ends_;  // the schedule is 0 at the budget
};

}  // namespace murmur::gossip
