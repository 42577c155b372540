#include "gossip/soft_sync.h"

#include <algorithm>

namespace murmur::gossip {

void SoftSync::Observe(NodeId id, uint64_t clock) {
  uint64_t& c = clocks_[id];
  c = std::max(c, clock);
}

void SoftSync::Forget(NodeId id) { clocks_.erase(id); }

uint64_t SoftSync::ClockOf(NodeId id) const {
  auto it = clocks_.find(id);
  return it == clocks_.end() ? 0 : it->second;
}

bool SoftSync::IsStraggler(NodeId id, TimePoint now) const {
  auto it = straggler_until_.find(id);
  return it != straggler_until_.end() && now < it->second;
}

std::vector<NodeId> SoftSync::Stragglers(TimePoint now) const {
  std::vector<NodeId> out;
  for (const auto& [id, until] : straggler_until_) {
    if (now < until) out.push_back(id);
  }
  return out;
}

SoftSync::Decision SoftSync::Gate(uint64_t self_clock, const std::vector<NodeId>& peers,
                                  TimePoint now) {
  Decision d;
  if (waiting_) total_wait_ += now - last_gate_;
  last_gate_ = now;
  if (options_.max_lead < 0) {
    waiting_ = false;
    return d;
  }
  for (NodeId id : peers) {
    const uint64_t clock = ClockOf(id);
    if (clock == 0 || IsStraggler(id, now)) continue;
    if (self_clock > clock + static_cast<uint64_t>(options_.max_lead)) d.waiting_for.push_back(id);
  }
  if (d.waiting_for.empty()) {
    waiting_ = false;
    return d;
  }
  if (!waiting_) {
    waiting_ = true;
    wait_started_ = now;
  }
  if (now - wait_started_ < options_.max_wait) {
    d.proceed = false;
    return d;
  }
  for (NodeId id : d.waiting_for) {
    straggler_until_[id] = now + options_.straggler_hold;
    ++detected_;
  }
  d.newly_marked = std::move(d.waiting_for);
  d.waiting_for.clear();
  waiting_ = false;
  return d;
}

bool SoftSync::ShouldCatchUp(uint64_t self_clock, uint64_t best_clock) const {
  return options_.max_lead >= 0 && best_clock > self_clock + static_cast<uint64_t>(options_.max_lead);
}

uint64_t SoftSync::Lag(uint64_t self_clock, NodeId id) const {
  const uint64_t clock = ClockOf(id);
  return self_clock > clock ? self_clock - clock : 0;
}

double SoftSync::Damping(uint64_t self_clock, NodeId id) const {
  if (options_.staleness_scale <= 0) return 1.0;
  return 1.0 / (1.0 + static_cast<double>(Lag(self_clock, id)) / options_.staleness_scale);
}

}  // namespace murmur::gossip
