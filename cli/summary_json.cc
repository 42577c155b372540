#include "cli/summary_json.h"

#include <cmath>

#include "cli/run_dir.h"

namespace murmur::node {

nlohmann::json Number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

nlohmann::json Measured(std::optional<double> v) {
  return v.has_value() ? Number(*v) : nlohmann::json();
}

nlohmann::json MeasuredOrNegative(double v) { return v >= 0 ? Number(v) : nlohmann::json(); }

bool WriteSummary(const nlohmann::json& summary, const SummaryTarget& target) {
  if (!target.run_dir.empty()) {
    if (Status s = WriteRunFile(target.run_dir, "result.json", summary.dump() + "\n"); !s.ok()) {
      std::fprintf(stderr, "%s: run_dir: %s\n", target.command, s.ToString().c_str());
    }
  }
  if (target.print) {
    std::printf("%s\n", summary.dump().c_str());
    std::fflush(stdout);
  }
  return target.print;
}

}  // namespace murmur::node

namespace murmur::sim {

void to_json(nlohmann::json& j, const SimNodeResult& n) {
  j = {{"id", n.id},
       {"up", n.up},
       {"restarts", n.restarts},
       {"steps", n.steps},
       {"samples", n.samples},
       {"compute_s", n.compute_s},
       {"injected_s", n.injected_s},
       {"messages_sent", n.messages_sent},
       {"bytes_sent", n.bytes_sent},
       {"messages_received", n.messages_received},
       {"bytes_received", n.bytes_received},
       {"lost", n.lost},
       {"rejected", n.rejected},
       {"refused_by_reason", n.refused_by_reason},
       {"finished", n.finished},
       {"finished_s", n.finished_s},
       {"over_s", n.over_s},
       {"ok", n.ok},
       {"status", n.status},
       {"accuracy", node::MeasuredOrNegative(n.accuracy)},
       {"loss", n.loss},
       {"optimum_distance", node::Measured(n.optimum_distance)},
       {"finish", n.finish},
       {"catchups", n.catchups},
       {"rounds", n.rounds},
       {"overlapped_steps", n.overlapped_steps},
       {"step_clock", n.step_clock},
       {"live_view", n.live_view}};
}

}  // namespace murmur::sim
