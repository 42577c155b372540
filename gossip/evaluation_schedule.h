#pragma once
// When a gossip node evaluates its model during the run (GossipNodeOptions::eval_every): every
// `eval_every` local steps, never (0), or kEvalPerRun: about kEvaluationsPerRun evaluations over
// the run when it has a sample budget (its steps estimated from the view's size and this node's
// samples per step, as they stand at each evaluation), every kEvalEveryWithoutBudget steps
// otherwise. Sans-IO. Thread safety: none.

#include <cstddef>
#include <cstdint>

namespace murmur::gossip {

inline constexpr int64_t kEvalPerRun = -1;
inline constexpr int64_t kEvaluationsPerRun = 20;
inline constexpr int64_t kEvalEveryWithoutBudget = 200;

class EvaluationSchedule {
 public:
  EvaluationSchedule(int64_t eval_every, int64_t budget_samples)
      : every_(eval_every), budget_samples_(budget_samples) {}

  // Whether an evaluation follows the local step `local_steps` (this node's `samples` so far,
  // `members` in its view); under kEvalPerRun a true answer schedules the next.
  bool Due(int64_t local_steps, int64_t samples, size_t members);

 private:
  const int64_t every_;
  const int64_t budget_samples_;
  int64_t next_ = 0;  // kEvalPerRun: the local step of the next evaluation
};

}  // namespace murmur::gossip
