#pragma once
// What every simulated run must satisfy at its end, whatever faults it met (the fault swarm's
// checks, cli/swarm_command.cc, and `murmur sim --invariants`), beside the per-event checks the
// simulator makes itself (SimOptions::check_invariants):
//   - a training run ends: every node's run is over before the duration (no wait without a
//     bound), and one that failed says why;
//   - every accuracy, loss and distance to the optimum is finite;
//   - gossip: members that adopted one collector's average hold the same model, bit for bit,
//     so the report's "who holds which model" is the truth;
//   - gossip: the samples computed stay within the budget's bound (BudgetBound).
// Pure. Thread safety: none.

#include <cstdint>
#include <string>
#include <vector>

#include "node/sim/simulator.h"

namespace murmur::sim {

// The most samples a gossip run of `options` may compute over all its nodes: the budget, plus
// what the members may compute before each learns the others spent it. A member's count reaches
// the others with its updates and announcements, so each process (every start and restart)
// may overrun by its own steps of lag: the soft-sync lead S + the gossip period H (a quarter
// of the budget for S unbounded), or the steps it takes while its announcements spread (four
// protocol periods), whichever is more; a partition lets every side spend the whole budget
// alone until it heals. 0: no budget.
int64_t BudgetBound(const SimOptions& options, int64_t batch, uint64_t restarts);

// What broke, one sentence each (empty: none), the run's own per-event violations first.
std::vector<std::string> CheckRunInvariants(const SimOptions& options, const SimResult& result,
                                            int64_t batch);

}  // namespace murmur::sim
