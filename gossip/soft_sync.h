#pragma once
// Soft synchronization (docs/design.md "Staleness"): step clocks travel in every envelope and in the
// membership digests; a node may run at most S = max_lead steps ahead of the slowest peer it
// mixes with, waits at most W = max_wait for it, then marks that peer a straggler (for
// `straggler_hold`) and stops waiting for it. A node that finds itself more than S behind the
// most advanced live peer it knows catches up (the node adopts its neighbours' average: see
// ChocoGossip::NeighbourAverage) instead of pushing stale work. Updates from peers behind this
// node are damped by their lag: d_j = 1 / (1 + lag / staleness_scale).
//
// The bound is local (the peers a node mixes with), as in bounded-staleness decentralized SGD:
// over a connected graph it holds transitively, within S times the graph's diameter, and no
// node ever needs a fresh clock from every member. S < 0 means unbounded (fully asynchronous);
// S = 0 is lock-step. A peer is marked after one wait of W, or once many shorter waits for it
// add up to W within the recent window (see straggler_wait_fraction); the waits for a peer held
// by another member's gate count half (LooksHeld). A peer that has not taken a step yet (clock 0:
// starting, or restarted and about to adopt a model) is not waited for.
//
// Sans-IO: clocks come in through Observe, time through the `now` arguments.
// Thread safety: none.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "gossip/envelope.h"

namespace murmur::gossip {

struct SoftSyncOptions {
  int64_t max_lead = 32;  // S in steps; < 0: unbounded
  Duration max_wait = std::chrono::seconds(2);        // W, or W's ceiling with max_wait_steps
  // > 0: W scales with the run, max_wait_steps times this node's measured step time (from one
  // gate to the next, waits excluded), within [min_wait, max_wait]. A peer k times slower keeps
  // this node waiting (1 - 1/k) of its time once S ahead, so it is marked after about
  // W / (1 - 1/k) (with straggler_wait_fraction's window) whether a step takes 3 ms or 3 s.
  // Until a step was measured, W = max_wait. 0: W = max_wait always.
  double max_wait_steps = 50;
  Duration min_wait = std::chrono::milliseconds(250);
  Duration straggler_hold = std::chrono::seconds(30);  // how long a straggler is not waited for
  double staleness_scale = 16;                          // steps of lag that halve a peer's weight
  // A peer that is never waited for W at a stretch but keeps this node waiting, in many short
  // waits, for more than this fraction of its time (an exponentially weighted window of
  // W / fraction) is marked too: otherwise a moderately slow peer paces everyone it mixes with.
  double straggler_wait_fraction = 0.1;
};

class SoftSync {
 public:
  explicit SoftSync(SoftSyncOptions options) : options_(options) {}

  // A clock heard from `id` (envelopes, digests); clocks only grow.
  void Observe(NodeId id, uint64_t clock);
  // Drops a departed member's clock (a straggler mark runs out on its own).
  void Forget(NodeId id);
  // A membership view: the clocks of the live members (alive or suspect) other than `self`
  // observed, the others forgotten. Returns the forgotten ids.
  std::vector<NodeId> View(const std::vector<MemberEntry>& members, NodeId self);

  struct Decision {
    bool proceed = true;
    std::vector<NodeId> waiting_for;   // peers more than S behind (when !proceed)
    std::vector<NodeId> newly_marked;  // peers just marked stragglers after waiting W
  };
  // May this node take step `self_clock + 1`, given the peers it mixes with? A wait starts at
  // the first call that finds a peer too far behind and ends after W.
  Decision Gate(uint64_t self_clock, const std::vector<NodeId>& peers, TimePoint now);

  // True when this node is more than max(S, hops) behind `best_clock` (the most advanced live
  // peer), `hops` the mixing graph's diameter: a node trails the most advanced member by up to
  // one step per hop with nobody slow (a gate opens one step at a time), so in lock-step (S = 0)
  // a lag under it is the graph's ripple, not a node left behind.
  bool ShouldCatchUp(uint64_t self_clock, uint64_t best_clock, int hops = 0) const;
  // d_j for the consensus step.
  double Damping(uint64_t self_clock, NodeId id) const;
  uint64_t Lag(uint64_t self_clock, NodeId id) const;

  // True when `id` is more than S (and at most 2 S + 1) steps ahead of another member this node
  // knows a clock of: its own gate holds it there, so a wait for it is that member's doing (in
  // a ring 1-2-3-4 with 3 slow, node 1 waits for 2 and 4 only because they wait for 3). Such a
  // peer is charged half of each wait for it, so it is marked after 2 W, which leaves its own
  // neighbours W to mark the member behind; a peer that marked that member runs on past 2 S + 1
  // and looks held no more. The clocks are the digests' (possibly older, so lower): a stale one
  // only delays a mark, to 2 W at most.
  bool LooksHeld(NodeId id) const;
  bool IsStraggler(NodeId id, TimePoint now) const;
  std::vector<NodeId> Stragglers(TimePoint now) const;
  uint64_t ClockOf(NodeId id) const;
  // The member with the lowest clock this node knows (started ones only; {0, 0}: none).
  std::pair<NodeId, uint64_t> Slowest() const;
  uint64_t stragglers_detected() const { return detected_; }
  // W as it stands: max_wait, or the scaled wait (max_wait_steps).
  Duration EffectiveWait() const;
  // Why `id` was just marked (Decision::newly_marked), in words for the log: the wait, its
  // clock against this node's `self_clock`, the slowest member known, the hold.
  std::string MarkedReason(NodeId id, uint64_t self_clock) const;
  // This node's step time as measured by the gates (seconds; 0 before the first).
  double step_seconds() const { return step_s_; }
  Duration total_wait() const { return total_wait_; }
  const SoftSyncOptions& options() const { return options_; }

 private:
  // The step time sample of a new clock (see step_s_).
  void MeasureStep(uint64_t self_clock, TimePoint now);
  Decision Decide(uint64_t self_clock, const std::vector<NodeId>& peers, TimePoint now);
  // Charges the time since the previous gate to the peers it waited for.
  void ChargeWait(Duration dt, Duration max_wait);

  SoftSyncOptions options_;
  std::map<NodeId, uint64_t> clocks_;
  std::map<NodeId, TimePoint> straggler_until_;
  bool gated_before_ = false;
  TimePoint last_gate_{};
  // Peers the last Gate call waited for, each with whether it looked held then.
  std::vector<std::pair<NodeId, bool>> blocked_on_;
  std::map<NodeId, double> waited_s_;   // decayed seconds charged to each peer
  std::map<NodeId, Duration> stretch_;  // charged in the current unbroken wait for each peer
  uint64_t detected_ = 0;
  Duration total_wait_{0};
  // The step time: from a gate that let step c through to the first gate of step c + 1.
  double step_s_ = 0;
  uint64_t steps_measured_ = 0;
  uint64_t gate_clock_ = 0;
  bool passed_ = false;  // the last gate let gate_clock_ + 1 through (at passed_at_)
  TimePoint passed_at_{};
};

}  // namespace murmur::gossip
