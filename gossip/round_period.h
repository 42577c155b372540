#pragma once
// How many steps a gossip node trains between rounds, H (gossip_node.h "training"):
// - with an outer optimizer from its start epoch on, OuterOptions::every, or fewer for a short
//   run (OuterOptions::rounds), resolved at the first step from the budget and the first batch;
//   the rounds fall on the step clock's multiples of H, the same steps on every member;
// - otherwise local_steps (0: the small-cluster schedule, H 2 with twice the kept fraction while
//   the view has at most kSparseScheduleMembers members and the operator keeps a fraction),
//   post_local_steps from post_local_epoch on, stretched by consensus control (Kong et al., ICML
//   2021, §4 and §5.1) to consensus_slack × H, within soft sync's lead, while the consensus
//   estimate is under consensus_target.
// The consensus estimate is the mean of this node's own recent average and the estimates its
// mixing peers sent with their latest applied updates, kept per sender of the view.
//
// Invariants: H ≥ 1; once resolved, the outer H never changes; an estimate held is finite and
// within [0, kMaxConsensus]. Sans-IO. Thread safety: none.

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "gossip/gossip_node_options.h"
#include "gossip/node_io.h"

namespace murmur::gossip {

// Where the run stands when H is decided.
struct PeriodContext {
  double local_epoch = 0;
  uint64_t rounds = 0;              // rounds this node ran
  double consensus_estimate = 0;    // Estimate() at the latest step
  size_t view_members = 1;          // of the view the round mixes over
};

class RoundPeriod {
 public:
  explicit RoundPeriod(const GossipNodeOptions& options) : o_(options) {}

  // H now.
  int H(const PeriodContext& c) const;
  // Whether the outer optimizer runs from this point of the run on.
  bool OuterActive(double local_epoch) const {
    return o_.outer.has_value() && local_epoch >= o_.outer->start_epoch;
  }
  // The outer rounds' H: as resolved, or OuterOptions::every before.
  int OuterH() const { return outer_every_ > 0 ? outer_every_ : o_.outer->every; }
  bool outer_resolved() const { return outer_every_ > 0; }
  // Resolves the outer H at the first step: this node's share of the budget in steps, for the
  // cluster it expects (expect_members) or the `view_members` it sees, at a batch of `batch`.
  void ResolveOuterH(int64_t batch, size_t view_members);
  // local_steps 0: whether the small-cluster schedule (H 2, twice the kept fraction) applies.
  bool SparseSchedule(double local_epoch, size_t view_members) const;

  // A mixing peer's estimate from its applied update; refused (false, nothing kept) outside
  // [0, kMaxConsensus] (NaN included).
  bool PeerEstimate(NodeId from, float estimate);
  // The mean of `own_average` and the latest estimates of `mixing`.
  double Estimate(double own_average, const std::vector<NodeId>& mixing) const;
  // Forgets the peers not in `view` (sorted).
  void Prune(const std::vector<NodeId>& view);
  // A round mixed at consensus distance `distance`: the average over recent rounds (the first
  // round's distance, then an exponential average with weight 0.1), which the node's own
  // estimate and its updates carry.
  double Mixed(double distance) {
    average_ = mixed_++ == 0 ? distance : 0.9 * average_ + 0.1 * distance;
    return average_;
  }

 private:
  const GossipNodeOptions& o_;
  int outer_every_ = 0;
  std::map<NodeId, float> peer_consensus_;
  uint64_t mixed_ = 0;    // rounds mixed
  double average_ = 0;    // Mixed's
};

}  // namespace murmur::gossip
