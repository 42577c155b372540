#pragma once
// Soft synchronization (DESIGN.md "Staleness"): step clocks travel in every envelope and in the
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
// add up to W within the recent window (see straggler_wait_fraction). A peer that has not taken a step yet (clock 0: starting, or restarted and
// about to adopt a model) is not waited for.
//
// Sans-IO: clocks come in through Observe, time through the `now` arguments.
// Thread safety: none.

#include <cstdint>
#include <map>
#include <vector>

#include "base/clock.h"
#include "gossip/envelope.h"

namespace murmur::gossip {

struct SoftSyncOptions {
  int64_t max_lead = 32;  // S in steps; < 0: unbounded
  Duration max_wait = std::chrono::seconds(2);        // W
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

  struct Decision {
    bool proceed = true;
    std::vector<NodeId> waiting_for;   // peers more than S behind (when !proceed)
    std::vector<NodeId> newly_marked;  // peers just marked stragglers after waiting W
  };
  // May this node take step `self_clock + 1`, given the peers it mixes with? A wait starts at
  // the first call that finds a peer too far behind and ends after W.
  Decision Gate(uint64_t self_clock, const std::vector<NodeId>& peers, TimePoint now);

  // True when this node is more than S behind `best_clock` (the most advanced live peer).
  bool ShouldCatchUp(uint64_t self_clock, uint64_t best_clock) const;
  // d_j for the consensus step.
  double Damping(uint64_t self_clock, NodeId id) const;
  uint64_t Lag(uint64_t self_clock, NodeId id) const;

  bool IsStraggler(NodeId id, TimePoint now) const;
  std::vector<NodeId> Stragglers(TimePoint now) const;
  uint64_t ClockOf(NodeId id) const;
  uint64_t stragglers_detected() const { return detected_; }
  Duration total_wait() const { return total_wait_; }
  const SoftSyncOptions& options() const { return options_; }

 private:
  SoftSyncOptions options_;
  std::map<NodeId, uint64_t> clocks_;
  std::map<NodeId, TimePoint> straggler_until_;
  bool waiting_ = false;
  bool gated_before_ = false;
  TimePoint wait_started_{};
  TimePoint last_gate_{};
  std::vector<NodeId> blocked_on_;        // peers the last Gate call waited for
  std::map<NodeId, double> waited_s_;    // decayed seconds spent waiting for each peer
  uint64_t detected_ = 0;
  Duration total_wait_{0};
};

}  // namespace murmur::gossip
