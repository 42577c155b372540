#include "gossip/evaluation_schedule.h"

#include <algorithm>

namespace murmur::gossip {

bool EvaluationSchedule::Due(int64_t local_steps, int64_t samples, size_t members) {
  if (every_ > 0) return local_steps % every_ == 0;
  if (every_ != kEvalPerRun || local_steps == 0) return false;
  if (local_steps < next_) return false;
  int64_t every = kEvalEveryWithoutBudget;
  if (budget_samples_ > 0 && samples > 0) {
    // This node's share of the budget in its own steps, as the view and its batches stand now.
    const double per_step = static_cast<double>(samples) / static_cast<double>(local_steps);
    const double n = static_cast<double>(std::max<size_t>(1, members));
    const double steps = static_cast<double>(budget_samples_) / (n * per_step);
    every = std::max<int64_t>(1, static_cast<int64_t>(steps / kEvaluationsPerRun));
  }
  next_ = local_steps + every;
  return true;
}

}  // namespace murmur::gossip
