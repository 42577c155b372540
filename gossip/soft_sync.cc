#include "gossip/soft_sync.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace murmur::gossip {

void SoftSync::Observe(NodeId id, uint64_t clock) {
  uint64_t& c = clocks_[id];
  c = std::max(c, clock);
}

void SoftSync::Forget(NodeId id) { clocks_.erase(id); }

std::vector<NodeId> SoftSync::View(const std::vector<MemberEntry>& members, NodeId self) {
  std::vector<NodeId> gone;
  for (const MemberEntry& m : members) {
    if (m.id == self) continue;
    if (m.state == MemberState::kAlive || m.state == MemberState::kSuspect) {
      Observe(m.id, m.step_clock);
    } else {
      Forget(m.id);
      gone.push_back(m.id);
    }
  }
  return gone;
}

uint64_t SoftSync::ClockOf(NodeId id) const {
  auto it = clocks_.find(id);
  return it == clocks_.end() ? 0 : it->second;
}

std::string SoftSync::MarkedReason(NodeId id, uint64_t self_clock) const {
  const auto [slowest, slowest_clock] = Slowest();
  return fmt::format(
      "waited {:.2f} s for node {} (at a stretch or in recent short waits, half of a wait while "
      "it looked held; step {} vs {}; the slowest member it knows: node {} at step {}): marked a "
      "straggler, not waiting for it for {:.0f} s",
      ToSeconds(EffectiveWait()), id, ClockOf(id), self_clock, slowest, slowest_clock,
      ToSeconds(options_.straggler_hold));
}

std::pair<NodeId, uint64_t> SoftSync::Slowest() const {
  std::pair<NodeId, uint64_t> slowest{0, 0};
  for (const auto& [id, clock] : clocks_) {
    if (clock > 0 && (slowest.second == 0 || clock < slowest.second)) slowest = {id, clock};
  }
  return slowest;
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
  ChargeWait(dt, max_wait);
  if (options_.max_lead < 0) return d;
  for (NodeId id : peers) {
    const uint64_t clock = ClockOf(id);
    if (clock == 0 || IsStraggler(id, now)) continue;
    if (self_clock > clock + static_cast<uint64_t>(options_.max_lead)) d.waiting_for.push_back(id);
  }
  // A stretch ends for every peer no longer waited for.
  std::erase_if(stretch_, [&](const auto& entry) {
    return std::find(d.waiting_for.begin(), d.waiting_for.end(), entry.first) ==
           d.waiting_for.end();
  });
  if (d.waiting_for.empty()) return d;
  // Marked: a peer waited for W at a stretch, or whose recent waits add up to W.
  std::vector<NodeId> mark;
  for (NodeId id : d.waiting_for) {
    if (stretch_[id] >= max_wait || waited_s_[id] >= ToSeconds(max_wait)) mark.push_back(id);
  }
  for (NodeId id : mark) {
    straggler_until_[id] = now + options_.straggler_hold;
    waited_s_.erase(id);
    stretch_.erase(id);
    ++detected_;
  }
  d.newly_marked = std::move(mark);
  // Proceed only if no unmarked peer is still too far behind.
  std::erase_if(d.waiting_for, [&](NodeId id) { return IsStraggler(id, now); });
  for (NodeId id : d.waiting_for) blocked_on_.push_back({id, LooksHeld(id)});
  d.proceed = d.waiting_for.empty();
  return d;
}

void SoftSync::ChargeWait(Duration dt, Duration max_wait) {
  // Every peer's charge decays with the window, so old waits are forgotten.
  const double window = ToSeconds(max_wait) / std::max(options_.straggler_wait_fraction, 1e-9);
  const double decay = window > 0 ? std::exp(-ToSeconds(dt) / window) : 0.0;
  for (auto& [id, waited] : waited_s_) waited *= decay;
  if (!blocked_on_.empty()) total_wait_ += dt;
  // Time blocked since the previous call is charged to the peers that call waited for, half to
  // one that looked held then (LooksHeld).
  for (const auto& [id, held] : blocked_on_) {
    const Duration charged = held ? dt / 2 : dt;
    waited_s_[id] += ToSeconds(charged);
    stretch_[id] += charged;
  }
  blocked_on_.clear();
}

bool SoftSync::LooksHeld(NodeId id) const {
  if (options_.max_lead < 0) return false;
  const uint64_t lead = static_cast<uint64_t>(options_.max_lead);
  const uint64_t clock = ClockOf(id);
  for (const auto& [other, other_clock] : clocks_) {
    if (other == id || other_clock == 0) continue;
    if (clock > other_clock + lead && clock <= other_clock + 2 * lead + 1) return true;
  }
  return false;
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
