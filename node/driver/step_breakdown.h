#pragma once
// Where a gossip node's training phase went: the node report's "phases" object,
// written by `murmur node` and read back by `murmur local`, which prints it as a table (one row
// per node, each phase's share of the node's training-phase wall time) and sums the nodes'
// training-phase throughput.

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "node/driver/gossip_session.h"

namespace murmur::node {

// {"wall_s", "samples", "samples_per_s", "samples_per_training_s" (the evaluate phase's time
// excluded, as murmur train's samples_per_second excludes its evaluations), "thread_cpu_s",
// "process_cpu_s", and "<phase>_s" for each of kStepPhases}.
nlohmann::json PhasesJson(const GossipProgress& progress);

struct StepBreakdown {
  // The nodes' "phases" objects, in node order (a node without one is skipped).
  std::vector<nlohmann::json> nodes;
  std::vector<int> node_numbers;  // 1-based, as the live table numbers them
  // The sum of the nodes' training-phase samples/s: the cluster's throughput while it trains.
  double cluster_samples_per_s = 0;
  // The same without the periodic evaluations' time: what compares with murmur train's figure.
  double cluster_samples_per_training_s = 0;
};
StepBreakdown CollectBreakdown(const std::vector<const GossipProgress*>& final_reports);

// The table, indented by two spaces, to `out`; nothing when no node reported phases.
void PrintBreakdown(const StepBreakdown& breakdown, std::FILE* out);

}  // namespace murmur::node
