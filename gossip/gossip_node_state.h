#pragma once
// What a gossip node (gossip_node.h) shows of itself: its state as its reports show it, and the
// counters its metrics take as it goes.

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "gossip/envelope.h"
#include "gossip/node_io.h"

namespace murmur::gossip {

// What a node's metrics count as it goes; every method may be left as is.
class GossipNodeObserver {
 public:
  virtual ~GossipNodeObserver() = default;
  virtual void Rejected(std::string_view /*reason*/) {}
  virtual void Staleness(double /*steps*/) {}
  virtual void LateDropped() {}
  // A round's q_i is compressed, encoded and queued (CHOCO steps 2-4); its consensus step
  // follows. A driver that reads its clock here splits a round's time between the two.
  virtual void RoundPublished() {}
  virtual void Round(double /*density*/, double /*residual_norm*/, double /*consensus*/) {}
  // Terms of a round's consensus step clipped by clipped mixing (ChocoOptions::clip_fraction).
  virtual void Clipped(uint64_t /*terms*/) {}
  // The consensus finish ended: averaged (with `contributors` models, `moved`: ‖x̄ − x_i‖ / ‖x̄‖)
  // or not.
  virtual void Finish(bool /*averaged*/, uint32_t /*contributors*/, double /*moved*/) {}
};

// The node's state as its reports show it.
struct GossipNodeState {
  // A computed step: counted (skipped when its loss was not finite), its loss into the running
  // mean, its samples into this node's count and local epoch (of `shard_rows`).
  void Account(const StepComputed& done, int64_t shard_rows) {
    if (!done.ok) {
      ++skipped_steps;
    } else if (done.has_loss) {
      loss = have_loss ? 0.98 * loss + 0.02 * done.loss : done.loss;
      have_loss = true;
    }
    ++step;
    ++local_steps;
    samples += done.samples;
    local_epoch = static_cast<double>(samples) / static_cast<double>(shard_rows);
  }
  // A restart from the node's own checkpoint at `at` (ResumePoint).
  void Resumed(uint64_t at, int64_t steps, int64_t samples_then, int64_t shard_rows) {
    step = resumed_step = at;
    local_steps = steps;
    samples = samples_then;
    local_epoch = static_cast<double>(samples) / static_cast<double>(shard_rows);
  }

  uint64_t step = 0;          // the step clock (adopted steps included)
  int64_t local_steps = 0;    // steps this node computed
  int64_t samples = 0;
  double local_epoch = 0;
  int64_t cluster_samples = 0;
  double loss = 0;            // running mean of recent batch losses
  bool have_loss = false;
  double accuracy = -1;       // last evaluation (-1: none yet)
  uint64_t accuracy_step = 0;
  uint64_t rounds = 0;
  uint64_t outer_rounds = 0;     // outer steps taken (GossipNodeOptions::outer)
  double outer_delta = 0;        // ‖Δ̄‖ / ‖a‖ of the latest outer step
  // Inner steps taken while an outer round's exchange was in flight (OuterOptions::overlap).
  uint64_t overlapped_steps = 0;
  uint64_t max_lag = 0;
  double consensus_distance = 0;
  double consensus_average = 0;  // over recent rounds (consensus control)
  // What consensus control decides by: the mean of consensus_average and the mixing peers'
  // (GossipNodeOptions::consensus_target).
  double consensus_estimate = 0;
  int gossip_period = 1;         // steps between this node's rounds now
  int density_factor = 1;        // the operator's kept fraction times this (local_steps 0)
  double gamma = 0;
  double lr = 0;              // of the latest step asked for (0: the trainer's own)
  uint64_t catchups = 0;
  uint64_t model_requests = 0;   // dense model snapshots asked for after joining
  uint64_t join_requests = 0;    // ... while joining
  uint64_t gamma_halvings = 0;
  uint64_t clipped_terms = 0;  // mixed terms clipped by clipped mixing (ChocoGossip::Clip)
  // Peer id -> its terms clipped to under a quarter (ChocoGossip::far_clipped).
  std::map<std::string, uint64_t> far_clipped;
  size_t live_members = 1;
  std::map<std::string, uint64_t> verdicts;  // CHOCO message outcomes
  uint64_t rejected_messages = 0;
  uint64_t skipped_steps = 0;
  bool joined_by_snapshot = false;
  uint64_t resumed_step = 0;     // the step of the node's own checkpoint it resumed from (0: none)
  std::string end_reason;
  // An evaluation at the current step (ignored unless a finite accuracy); `own`: of this node's
  // own model while the finish runs.
  void Evaluated(double value, bool own) {
    if (!std::isfinite(value) || value < 0) return;
    accuracy = value;
    accuracy_step = step;
    if (own) own_accuracy = value;
  }
  // How the consensus finish ended (FinishStage::Conclude).
  void Concluded(bool averaged, uint32_t contributors, NodeId collector, double moved) {
    finish = averaged ? "averaged" : "missed";
    if (!averaged) return;
    finish_contributors = contributors;
    finish_collector = collector;
    finish_moved = moved;
  }
  // The consensus finish: "" (not reached), "averaged", "missed" or "off".
  std::string finish;
  uint32_t finish_contributors = 0;
  NodeId finish_collector = 0;  // whose average it adopted (0: none adopted)
  double finish_moved = 0;      // ‖x̄ − x_i‖ / ‖x̄‖: how far the average was from this model
  double own_accuracy = -1;     // this node's own model before the finish (eval_samples rows)
  std::map<std::string, uint64_t> finish_verdicts;
};

}  // namespace murmur::gossip
