#include "gossip/run_budget.h"

namespace murmur::gossip {

RunBudget::RunBudget(int64_t budget_samples, double target_accuracy, Duration time_limit,
                     const std::optional<LrSchedule>& schedule)
    : budget_samples_(budget_samples),
      target_accuracy_(target_accuracy),
      time_limit_(time_limit),
      schedule_ends_(budget_samples > 0 && schedule.has_value() &&
                     schedule->At(budget_samples) == 0) {}

std::string_view RunBudget::Spent(const BudgetReading& r) const {
  const bool schedule_spent = schedule_ends_ && r.schedule_samples >= budget_samples_;
  if (budget_samples_ > 0 && (r.reported_samples >= budget_samples_ || schedule_spent)) {
    return "epochs";
  }
  if (target_accuracy_ > 0 && r.accuracy >= target_accuracy_) return "accuracy";
  if (time_limit_.count() > 0 && r.elapsed >= time_limit_) return "time";
  if (r.quorum_finished) return "peer";
  if (r.stop_requested) return "stopped";
  if (r.program_ended) return "program";
  return {};
}

}  // namespace murmur::gossip
