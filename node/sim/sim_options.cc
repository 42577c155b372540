// SimOptions::Validate: what a simulated cluster's options must satisfy before anything runs.
#include <fmt/format.h>

#include "node/sim/simulator.h"

namespace murmur::sim {

Status SimOptions::Validate() const {
  if (nodes == 0) return InvalidArgumentError("sim: nodes must be at least 1");
  if (tick.count() <= 0 || view_interval.count() <= 0 || sample_every.count() <= 0) {
    return InvalidArgumentError("sim: tick, view_interval and sample_every must be positive");
  }
  if (duration.count() <= 0) return InvalidArgumentError("sim: duration must be positive");
  if (wire_scale <= 0) return InvalidArgumentError("sim: wire_scale must be positive");
  if (cost_per_sample.count() < 0 || cost_per_step.count() < 0 || cost_per_eval_row.count() < 0 ||
      start_cost.count() < 0) {
    return InvalidArgumentError("sim: costs per sample, step, evaluated row and start must not be "
                                "negative");
  }
  if (cores < 0) return InvalidArgumentError("sim: cores must be 0 (one per node) or more");
  if (kind == SimKind::kSync && !plan.has_value()) {
    return InvalidArgumentError("sim: a synchronous mode needs its plan");
  }
  if (kind == SimKind::kSync && static_cast<int64_t>(nodes) != plan->processes) {
    return InvalidArgumentError(
        fmt::format("sim: the plan needs {} processes, not {}", plan->processes, nodes));
  }
  for (const auto& [i, s] : straggle) {
    if (i >= nodes)
      return InvalidArgumentError(fmt::format("sim: straggle names node {} of {}", i, nodes));
  }
  for (const SimCrash& c : crashes) {
    if (c.node >= nodes)
      return InvalidArgumentError(fmt::format("sim: crash names node {} of {}", c.node, nodes));
  }
  for (const SimJoin& j : joins) {
    if (j.node >= nodes)
      return InvalidArgumentError(fmt::format("sim: join names node {} of {}", j.node, nodes));
  }
  for (const SimPartition& p : partitions) {
    if (p.groups.size() != nodes) {
      return InvalidArgumentError(
          fmt::format("sim: a partition needs a group for each of the {} nodes", nodes));
    }
  }
  for (const SimAttack& a : attacks) {
    if (a.node >= nodes) {
      return InvalidArgumentError(fmt::format("sim: an attack names node {} of {}", a.node, nodes));
    }
  }
  for (const SimClockJump& j : clock_jumps) {
    if (j.node >= nodes) {
      return InvalidArgumentError(
          fmt::format("sim: a clock jump names node {} of {}", j.node, nodes));
    }
    if (j.by.count() <= 0) {
      return InvalidArgumentError(
          "sim: a clock jump goes forward (a monotonic clock never goes "
          "back): its size must be positive");
    }
  }
  // The machines' own options, as node 1 would get them (ids, addresses and seeds are per node).
  gossip::MembershipOptions first = membership;
  first.id = Simulator::Id(0);
  first.address = Simulator::Address(0);
  if (first.seeds.empty()) first.seeds.push_back(Simulator::Address(0));
  MURMUR_RETURN_IF_ERROR(first.Validate());
  if (kind == SimKind::kGossip) {
    gossip::GossipNodeOptions g = gossip;
    g.self = Simulator::Id(0);
    g.incarnation = 1;
    MURMUR_RETURN_IF_ERROR(g.Validate());
  }
  if (kind == SimKind::kSync) {
    gossip::SyncNodeOptions s = sync;
    s.self = Simulator::Id(0);
    MURMUR_RETURN_IF_ERROR(s.Validate());
  }
  return OkStatus();
}

}  // namespace murmur::sim
