#include "node/driver/step_breakdown.h"

#include <fmt/format.h>

namespace murmur::node {

nlohmann::json PhasesJson(const GossipProgress& p) {
  nlohmann::json j;
  const auto durations = PhaseDurations(p.phases);
  Duration wall{0};
  for (size_t i = 0; i < durations.size(); ++i) {
    j[std::string(kStepPhases[i]) + "_s"] = ToSeconds(durations[i]);
    wall += durations[i];
  }
  const double wall_s = ToSeconds(wall);
  j["wall_s"] = wall_s;
  j["samples"] = p.phase_samples;
  j["samples_per_s"] = wall_s > 0 ? static_cast<double>(p.phase_samples) / wall_s : 0.0;
  // As murmur train's samples_per_second: its per-epoch evaluations are not training time, nor
  // are a node's periodic ones (their time is the "evaluate" phase).
  const double training_s = wall_s - j.value("evaluate_s", 0.0);
  j["samples_per_training_s"] =
      training_s > 0 ? static_cast<double>(p.phase_samples) / training_s : 0.0;
  j["thread_cpu_s"] = p.phase_thread_cpu_s;
  j["process_cpu_s"] = p.phase_process_cpu_s;
  return j;
}

StepBreakdown CollectBreakdown(const std::vector<const GossipProgress*>& final_reports) {
  StepBreakdown b;
  for (size_t i = 0; i < final_reports.size(); ++i) {
    const GossipProgress* f = final_reports[i];
    if (f == nullptr) continue;
    const nlohmann::json phases = PhasesJson(*f);
    if (phases.value("wall_s", 0.0) <= 0) continue;
    b.nodes.push_back(phases);
    b.node_numbers.push_back(static_cast<int>(i) + 1);
    b.cluster_samples_per_s += phases.value("samples_per_s", 0.0);
    b.cluster_samples_per_training_s += phases.value("samples_per_training_s", 0.0);
  }
  return b;
}

void PrintBreakdown(const StepBreakdown& b, std::FILE* out) {
  if (b.nodes.empty()) return;
  // The phases some node spent time in, in kStepPhases order (the coded modes' communication is
  // never a gossip node's).
  std::vector<std::string> shown;
  for (std::string_view phase : kStepPhases) {
    const std::string key = std::string(phase) + "_s";
    for (const nlohmann::json& n : b.nodes) {
      if (n.value(key, 0.0) > 0) {
        shown.push_back(std::string(phase));
        break;
      }
    }
  }
  std::fprintf(out,
               "  training phase by node (first step to last; %% of its wall time; CPU of "
               "its training thread and of the whole process):\n");
  std::string header = fmt::format("  {:>4} {:>7} {:>9}", "node", "wall s", "samples/s");
  for (const std::string& phase : shown) header += fmt::format(" {:>8}", phase);
  header += fmt::format(" {:>10} {:>10}", "thread cpu", "proc cpu");
  std::fprintf(out, "%s\n", header.c_str());
  for (size_t i = 0; i < b.nodes.size(); ++i) {
    const nlohmann::json& n = b.nodes[i];
    const double wall = n.value("wall_s", 0.0);
    std::string row = fmt::format("  {:>4} {:>7.2f} {:>9.0f}", b.node_numbers[i], wall,
                                  n.value("samples_per_s", 0.0));
    for (const std::string& phase : shown) {
      row += fmt::format(" {:>7.1f}%", 100.0 * n.value(phase + "_s", 0.0) / wall);
    }
    row += fmt::format(" {:>9.0f}% {:>9.0f}%", 100.0 * n.value("thread_cpu_s", 0.0) / wall,
                       100.0 * n.value("process_cpu_s", 0.0) / wall);
    std::fprintf(out, "%s\n", row.c_str());
  }
  std::fprintf(out,
               "  cluster while training: %.0f samples/s (the nodes' sum); %.0f samples/s "
               "without the periodic evaluations' time (as murmur train counts)\n",
               b.cluster_samples_per_s, b.cluster_samples_per_training_s);
}

}  // namespace murmur::node
