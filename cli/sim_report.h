#pragma once
// What `murmur sim` shows: progress on stderr while it runs, and at the end a summary (text or
// one JSON object) with per-node rows, the cluster's totals, and what the mode is about: failure
// detection (membership), the consensus and the optimum (gossip), iteration times (synchronous
// modes). The time series goes to CSV.

#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "base/clock.h"
#include "base/status.h"
#include "cli/progress.h"
#include "node/sim/simulator.h"

namespace murmur::node {

class SimProgressPrinter {
 public:
  SimProgressPrinter(ProgressMode mode, std::FILE* out) : mode_(mode), out_(out) {}
  void Update(const sim::SimProgress& p);
  // Shows text() (asked for only when due): redrawn at most every 100 ms on a terminal, a line
  // every 2 s otherwise.
  void Line(const std::function<std::string()>& text);
  void Finish();

 private:
  ProgressMode mode_;
  std::FILE* out_;
  RealClock clock_;
  TimePoint last_{};
  bool drawn_ = false;
};

struct SimSummaryInput {
  std::string mode;
  std::string description;
  sim::SimOptions options;
};

// Each crash of the run: when every live member held the node dead (or gone).
struct CrashDetection {
  size_t node = 0;
  double at_s = 0;
  size_t observers = 0;  // members that declared it dead before it restarted or the run ended
  size_t expected = 0;   // members up at the end that knew it
  double first_s = -1, median_s = -1, last_s = -1;  // seconds after the crash
};
std::vector<CrashDetection> Detections(const sim::SimOptions& options,
                                       const sim::SimResult& result);

nlohmann::json SummaryJson(const SimSummaryInput& input, const sim::SimResult& result);
std::string SummaryText(const SimSummaryInput& input, const sim::SimResult& result);
Status WriteSeriesCsv(const std::string& path, const sim::SimResult& result);
// A training run succeeded when every node's run ended with an OK status; a membership run when
// it reached its duration.
bool RunSucceeded(const sim::SimOptions& options, const sim::SimResult& result);

}  // namespace murmur::node
