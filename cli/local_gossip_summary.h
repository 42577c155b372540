#pragma once
// The end of a `murmur local --mode gossip` run: what the nodes' final reports and saved models
// say, gathered once (SummarizeGossipRun), then written as one JSON object or as the text report.

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "cli/local_cluster.h"
#include "cli/local_mode.h"
#include "node/driver/step_breakdown.h"

namespace murmur::node {

struct GossipRunSummary {
  size_t nodes = 0;
  std::vector<const GossipProgress*> finals;  // each node's final report (nullptr: none)
  std::vector<double> accuracy;  // of the finished nodes, in node order (-1: not evaluated)
  std::vector<int64_t> steps;
  std::vector<int64_t> rounds;        // gossip rounds each ran (consensus control skips some)
  std::vector<int64_t> outer_rounds;  // outer optimizer steps each took
  std::vector<int64_t> clipped;       // terms of its consensus steps robust mixing clipped
  // A peer id -> the nodes that clipped its terms to under a quarter in more than half their
  // rounds, with the count: a member that pulls far from the others.
  std::map<std::string, std::map<size_t, uint64_t>> pulled_far;
  std::vector<double> train_s;        // each one's time from its start of training to its end
  std::vector<double> own;            // each one's own model before the consensus finish
  std::vector<double> loss;           // each one's training loss at its end (NaN: none given)
  std::vector<double> perplexity;     // exp(loss) of a language model's (-1: not one)
  std::vector<std::string> finishes;  // each one's finish outcome
  uint64_t bytes = 0;
  int64_t local_steps = 0;
  std::string end_reason;
  int64_t trained = 0, budget = 0;  // samples the finished nodes trained; the budget
  std::map<std::string, std::vector<size_t>> ends;  // end reason -> the node ids that gave it
  std::vector<size_t> never_trained;                // finished without a step of their own
  // The consensus finish's results by collector: more than one means the nodes ended on as many
  // models (their views disagreed on who collects); `missed` kept their own.
  struct FinishGroup {
    uint32_t contributors = 0;
    std::vector<size_t> nodes;
  };
  std::map<uint64_t, FinishGroup> finish_groups;
  std::vector<size_t> missed;
  double cluster_accuracy = -1;  // of the model the most members averaged (-1: none)
  uint32_t contributors = 0;
  double mean_accuracy = 0;                        // over the evaluated nodes (-1: none was)
  double consensus = -1, relative_consensus = -1;  // of the saved models (-1: none saved)
  double allreduce_bytes = 0;                      // dense ring all-reduce for the same steps
  StepBreakdown breakdown;
};

// Gathers the finished nodes' final reports and the models they saved (`model_path(i)`).
GossipRunSummary SummarizeGossipRun(const LocalCluster& cluster,
                                    const std::function<std::string(size_t)>& model_path);

// What the run observed as it went, beside the final reports.
struct GossipRunContext {
  const std::vector<std::string>& devices;  // where each node trained
  const std::string& what;                  // the averaging, topology, schedule and devices
  const std::set<uint64_t>& flagged;        // ids some node marked a straggler
  const nlohmann::json& timeline;           // [t, mean accuracy] at each new evaluation
};

nlohmann::json GossipRunJson(const GossipRunSummary& s, const GossipRunContext& context,
                             const LocalCluster& cluster, bool ok, const ReportOut& out);
void PrintGossipRun(const GossipRunSummary& s, const GossipRunContext& context, double wall,
                    bool ok, const ReportOut& out);

}  // namespace murmur::node
