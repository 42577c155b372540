#pragma once
// The options of a gossip node (gossip_node.h). Their defaults are the defaults of every entry
// point: `murmur node`, `murmur local`, `murmur sim` and the library read them from here.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "base/clock.h"
#include "base/lr_schedule.h"
#include "base/status.h"
#include "coding/compressor.h"
#include "gossip/choco.h"
#include "gossip/envelope.h"
#include "gossip/evaluation_schedule.h"
#include "gossip/outer_optimizer.h"
#include "gossip/peer_sampling.h"
#include "gossip/soft_sync.h"

namespace murmur::gossip {

// GossipNodeOptions::local_steps 0: clusters of up to this many members gossip every 2nd step.
inline constexpr size_t kSparseScheduleMembers = 4;
// Whether local_steps 0 takes that schedule for a round whose view has `members` members.
inline bool SparseScheduleFor(const coding::CompressorOptions& compressor, size_t members) {
  return DensityScalable(compressor) && members <= kSparseScheduleMembers;
}

// The operator a node compresses with when none is given (`--compress auto`): int8 under an outer
// optimizer (its pseudo-gradients every H steps, nearly lossless; top-k's γ of 0.05 left the
// members' anchors apart), top-1 % with fp16 values for plain CHOCO rounds every step.
coding::CompressorOptions AutoCompressor(bool outer);
// CHOCO's options as a node's defaults have them: ChocoOptions' own, with the auto operator of
// the default outer optimizer.
ChocoOptions DefaultNodeChoco();

// The node's options. Their defaults are the defaults of every entry point: `murmur node`,
// `murmur local`, `murmur sim` and the library read them from here (node/config/gossip_config.cc
// writes each key's default from a default-constructed GossipNodeOptions), so a program that
// builds these options in C++ gets the node `murmur node` runs without flags
// (tests/node/config/gossip_defaults_test.cc holds them to that, key by key).
struct GossipNodeOptions {
  NodeId self = 0;
  Incarnation incarnation = 0;
  // The CHOCO machine's own options (choco.h): the operator, γ, who mixes with whom, where the
  // model lives (its public copies and arithmetic go with it) and the guards. The node sets its
  // id, incarnation and the model's dimension there when training starts.
  ChocoOptions choco = DefaultNodeChoco();
  SoftSyncOptions soft_sync;
  // H: local steps per gossip round. 0: the small-cluster schedule. While the round's view has
  // at most kSparseScheduleMembers members and the operator keeps a fraction (top-k), a node
  // gossips every 2nd step with twice the fraction (and the default γ of that fraction): about
  // the same bytes in half the rounds. Above that size, or for other operators, H is 1. A small
  // ring mixes fast (its spectral gap: 2/3 at 4 nodes, 0.2 at 8), so rounds it skips cost no
  // accuracy there (bench/results/2026-11-28-history.md, "Half the rounds on small clusters").
  int local_steps = 0;
  double post_local_epoch = -1;  // from this local epoch on, H = post_local_steps (< 0: never)
  int post_local_steps = 4;
  int64_t shard_rows = 1;       // this node's rows (local epochs)
  // The outer optimizer (outer_optimizer.h): from its start epoch on, every round is an outer
  // round every `outer->every` steps (local_steps, post_local_* and consensus control no longer
  // set H). None: the rounds mix the model and nothing more.
  std::optional<OuterOptions> outer = OuterOptions{};
  // The learning rate of each step, at the cluster's samples (every member at the same point of
  // the schedule); none: the trainer's own.
  std::optional<LrSchedule> lr_schedule;
  // Consensus control (Kong et al., ICML 2021, §4 and §5.1): below a critical consensus distance
  // decentralized SGD tracks centralized SGD, and more gossip buys nothing. While the estimate of
  // the consensus distance is under `consensus_target`, a node gossips every `consensus_slack` ×
  // H steps; above it, every H. 0: off.
  // The estimate: the mean of this node's own (‖Σ_j w_ij (x̂_j − x̂_i)‖ / ‖x̂_i‖, averaged over
  // recent rounds) and the ones its mixing peers sent with their latest updates. Kong et al.'s
  // Ξ is the cluster's mean distance to the average; a node's own measure alone is biased by how
  // stale its peers' public copies are, i.e. by the peers' gossip periods, so on its own it
  // settles in a lopsided state (one node gossips every step because its neighbour does not,
  // and the neighbour sees fresh copies and gossips rarely, the frequent one the cluster's
  // bottleneck). Sharing the estimate makes the decision
  // the same on both ends of a link.
  double consensus_target = 0.04;
  int consensus_slack = 8;
  // Budget: the run ends at the first of these (0 = not used).
  int64_t budget_samples = 0;   // samples over every member
  double target_accuracy = 0;
  Duration time_limit{0};
  // Steps between periodic evaluations (0: only the final one). kEvalPerRun: about
  // kEvaluationsPerRun over the run when it has a sample budget (from the view's size and this
  // node's samples per step, as it goes), every kEvalEveryWithoutBudget steps otherwise.
  int64_t eval_every = kEvalPerRun;
  int expect_members = 0;
  Duration expect_wait = std::chrono::seconds(30);
  Duration join_wait = std::chrono::seconds(3);
  int64_t join_after_steps = 20;
  Duration snapshot_timeout = std::chrono::seconds(5);
  int join_attempts = 3;
  Duration model_retry = std::chrono::seconds(2);
  Duration linger = std::chrono::milliseconds(500);
  // The consensus finish: how long a member waits for the average once its training is over (the
  // collector averages what it has after half of it); 0: no finish, every node keeps its model.
  Duration finish_wait = std::chrono::seconds(30);
  // How far the step clock of a message may lead the highest clock this node knows (its own,
  // the most advanced member's, the sender's); further is refused (kRejectClock).
  uint64_t max_clock_lead = 100000;
  // A node resumed from its own checkpoint trains on from it unless the most advanced live member
  // is more than this many steps ahead; then it joins like a new node, with a peer's model.
  uint64_t resume_max_lag = 1000;
  // Model snapshots cost a dense copy each: served at most this many at once and this many per
  // second on average (more is refused, kRejectSnapshotRate).
  double model_snapshot_burst = 4;
  double model_snapshots_per_s = 1;

  Status Validate() const;
  // How far behind the most advanced member a node catches up, with `live` members:
  // max(S, the mixing graph's diameter) (OwnClaims::catch_up_gap).
  uint64_t CatchUpGap(size_t live) const {
    const auto hops = static_cast<int64_t>(HopsAcross(choco.sampling, live));
    return static_cast<uint64_t>(std::max<int64_t>(soft_sync.max_lead, hops));
  }
  // CHOCO's options for this node's machine over a model of `dimension` values.
  ChocoOptions ChocoFor(uint32_t dimension) const {
    ChocoOptions c = choco;
    c.self = self;
    c.incarnation = incarnation;
    c.dimension = dimension;
    return c;
  }
};

}  // namespace murmur::gossip
