#include "gossip/soft_sync.h"

#include <algorithm>
#include <cmath>

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

Duration SoftSync::EffectiveWait() const {
  if (options_.max_wait_steps <= 0 || steps_measured_ == 0) return options_.max_wait;
  const auto scaled = std::chrono::duration_cast<Duration>(
      std::chrono::duration<double>(options_.max_wait_steps * step_s_));
  return std::clamp(scaled, std::min(options_.min_wait, options_.max_wait), options_.max_wait);
}

void SoftSync::MeasureStep(uint64_t self_clock, TimePoint now) {
  if (self_clock == gate_clock_) return;
  if (passed_ && self_clock == gate_clock_ + 1) {
    // An evaluation or a pause between two steps is not the step: a sample is held to 3x the
    // estimate once there is one. The estimate is an exponentially weighted mean (1/16).
    double sample = ToSeconds(now - passed_at_);
    if (steps_measured_ >= 8) sample = std::min(sample, 3 * step_s_);
    step_s_ = steps_measured_ == 0 ? sample : step_s_ + (sample - step_s_) / 16;
    ++steps_measured_;
  }
  gate_clock_ = self_clock;
  passed_ = false;
}

SoftSync::Decision SoftSync::Gate(uint64_t self_clock, const std::vector<NodeId>& peers,
                                  TimePoint now) {
  MeasureStep(self_clock, now);
  Decision d = Decide(self_clock, peers, now);
  if (d.proceed) {
    passed_ = true;
    passed_at_ = now;
  }
  return d;
}

SoftSync::Decision SoftSync::Decide(uint64_t self_clock, const std::vector<NodeId>& peers,
                                    TimePoint now) {
  Decision d;
  const Duration max_wait = EffectiveWait();
  const Duration dt = gated_before_ ? std::max(Duration(0), now - last_gate_) : Duration(0);
  gated_before_ = true;
  last_gate_ = now;
  // Time blocked since the previous call is charged to the peers it waited for; every peer's
  // charge decays with the window, so old waits are forgotten.
  const double window = ToSeconds(max_wait) / std::max(options_.straggler_wait_fraction, 1e-9);
  const double decay = window > 0 ? std::exp(-ToSeconds(dt) / window) : 0.0;
  for (auto& [id, waited] : waited_s_) waited *= decay;
  if (waiting_) {
    total_wait_ += dt;
    for (NodeId id : blocked_on_) waited_s_[id] += ToSeconds(dt);
  }
  blocked_on_.clear();
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
  // Marked: every peer of a wait that lasted W, or a peer whose recent waits add up to W.
  std::vector<NodeId> mark;
  for (NodeId id : d.waiting_for) {
    if (now - wait_started_ >= max_wait || waited_s_[id] >= ToSeconds(max_wait)) {
      mark.push_back(id);
    }
  }
  if (mark.empty()) {
    d.proceed = false;
    blocked_on_ = d.waiting_for;
    return d;
  }
  for (NodeId id : mark) {
    straggler_until_[id] = now + options_.straggler_hold;
    waited_s_.erase(id);
    ++detected_;
  }
  d.newly_marked = std::move(mark);
  // Proceed only if no unmarked peer is still too far behind.
  std::erase_if(d.waiting_for, [&](NodeId id) { return IsStraggler(id, now); });
  if (!d.waiting_for.empty()) {
    d.proceed = false;
    blocked_on_ = d.waiting_for;
    return d;
  }
  waiting_ = false;
  return d;
}

bool SoftSync::ShouldCatchUp(uint64_t self_clock, uint64_t best_clock, int hops) const {
  return options_.max_lead >= 0 &&
         best_clock > self_clock + static_cast<uint64_t>(std::max<int64_t>(options_.max_lead, hops));
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
