#include "node/sim/invariants.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "node/sim/wire.h"

namespace murmur::sim {

int64_t BudgetBound(const SimOptions& o, int64_t batch, uint64_t restarts) {
  const gossip::GossipNodeOptions& g = o.gossip;
  if (g.budget_samples <= 0) return 0;
  const int64_t period = g.outer.has_value() ? g.outer->every : std::max(1, g.local_steps) * 2;
  const int64_t lead = g.soft_sync.max_lead >= 0
                           ? g.soft_sync.max_lead
                           : g.budget_samples / 4 / std::max<int64_t>(1, batch);
  // Counts also travel with the membership's announcements, which reach every member within a
  // few protocol periods (SWIM's dissemination): the steps a process takes in kReportPeriods
  // of them, at its unslowed step time, may go unheard (all of them when it crashes).
  constexpr double kReportPeriods = 4;
  const double step_s = Seconds(o.cost_per_step + o.cost_per_sample * batch);
  const auto heard_late = static_cast<int64_t>(
      std::ceil(kReportPeriods * Seconds(o.membership.probe_interval) / std::max(1e-9, step_s)));
  const auto processes = static_cast<int64_t>(o.nodes + restarts);
  int64_t sides = 1;
  for (const SimPartition& p : o.partitions) {
    sides += static_cast<int64_t>(std::set<int>(p.groups.begin(), p.groups.end()).size()) - 1;
  }
  return sides * g.budget_samples + processes * std::max(lead + period + 2, heard_late) * batch;
}

namespace {

bool Finite(double v) { return std::isfinite(v); }

void CheckNode(const SimOptions& o, const SimNodeResult& n, std::vector<std::string>& out) {
  // A synchronous worker evaluates nothing (NaN: none); the model is its root's (and the ring's
  // rank 0's), the one with a distance to the optimum.
  // A synchronous run that failed (a partition for good) may have ended before any evaluation.
  const bool evaluates = o.kind != SimKind::kSync || (n.optimum_distance.has_value() && n.ok);
  // (A synchronous root's accuracy is NaN on a regression task.)
  const bool accuracy_ok = Finite(n.accuracy) || o.kind == SimKind::kSync;
  if (evaluates && n.over_s >= 0 && (!Finite(n.loss) || !accuracy_ok)) {
    out.push_back(
        fmt::format("node {}: loss {} or accuracy {} is not finite", n.id, n.loss, n.accuracy));
  }
  if (n.optimum_distance.has_value() && !Finite(*n.optimum_distance)) {
    out.push_back(fmt::format("node {}: its distance to the optimum is not finite", n.id));
  }
  if (o.kind == SimKind::kMembership || !n.up) return;
  if (n.over_s < 0) {
    out.push_back(fmt::format("node {}: its run did not end by {:g} s (step {}, finished '{}')",
                              n.id, Seconds(o.duration), n.step_clock, n.finished));
  } else if (!n.ok && (n.status.empty() || n.status == "OK")) {
    out.push_back(fmt::format("node {}: its run failed without a reason", n.id));
  }
}

}  // namespace

std::vector<std::string> CheckRunInvariants(const SimOptions& o, const SimResult& r,
                                            int64_t batch) {
  std::vector<std::string> out = r.violations;
  if (r.violation_count > r.violations.size()) {
    out.push_back(fmt::format("... {} violations in all", r.violation_count));
  }
  uint64_t restarts = 0;
  int64_t samples = 0;
  double first_over = -1;
  for (const SimNodeResult& n : r.nodes) {
    CheckNode(o, n, out);
    restarts += n.restarts;
    samples += n.samples;
    if (n.over_s >= 0 && (first_over < 0 || n.over_s < first_over)) first_over = n.over_s;
  }
  // A process that starts after a run ended, or too shortly before to hear of the others (its
  // join takes a membership exchange: two protocol periods), knows nothing of the samples spent
  // (the simulator keeps no checkpoint): it may spend the whole budget again on its own.
  uint64_t late_starts = 0;
  const double hears_after = 2 * Seconds(o.membership.probe_interval);
  for (const SimCrash& c : o.crashes) {
    late_starts += c.down.count() > 0 && first_over >= 0 &&
                   Seconds(c.at + c.down + o.start_cost) + hears_after >= first_over;
  }
  if (o.kind != SimKind::kGossip) return out;
  // Members that adopted one collector's average (of one of its processes) hold one model.
  std::map<std::pair<gossip::NodeId, uint64_t>, std::pair<uint64_t, gossip::NodeId>> adopted;
  for (const SimNodeResult& n : r.nodes) {
    if (!n.up || n.finish != "averaged") continue;
    auto [it, first] = adopted.try_emplace({n.finish_collector, n.finish_collector_restarts},
                                           n.model_digest, n.id);
    if (!first && it->second.first != n.model_digest) {
      out.push_back(fmt::format(
          "nodes {} and {} both adopted node {}'s average ({} contributors) but hold different "
          "models",
          it->second.second, n.id, n.finish_collector, n.finish_contributors));
    }
  }
  const int64_t bound =
      BudgetBound(o, batch, restarts) + static_cast<int64_t>(late_starts) * o.gossip.budget_samples;
  if (o.gossip.budget_samples > 0 && samples > bound) {
    out.push_back(fmt::format(
        "the nodes computed {} samples, over the budget's bound {} (budget {}, {} restarts)",
        samples, bound, o.gossip.budget_samples, restarts));
  }
  return out;
}

}  // namespace murmur::sim
