#pragma once
// What a gossip node believes of the other members' word (claims.h for the bounds): each
// membership view brings every member's sample count, step clock and whether it finished; the
// ledger turns them into the cluster's sample estimate (the budget's count), the clock to catch
// up to, and the finished members' quorum, and says which member's claim it set aside.
//
// Invariants: a member's believed samples never decrease within one life (incarnation) and never
// exceed the bound at the time of its claim; a claim that stops growing keeps what was believed
// of it; each member whose claim is set aside is refused once per life and kind (samples,
// clock); the finished quorum, once reached, holds. Sans-IO, no clock. Thread safety: none.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "gossip/envelope.h"
#include "gossip/node_io.h"

namespace murmur::gossip {

// This node's own figures when a view comes.
struct OwnClaims {
  uint64_t step = 0;
  int64_t samples = 0;
  int64_t max_batch = 0;      // the largest mini-batch this node computed (0: none yet)
  uint64_t catch_up_gap = 0;  // max(S, the graph's diameter): how far behind a node catches up
};

class ClaimsLedger {
 public:
  explicit ClaimsLedger(NodeId self) : self_(self) {}

  // One membership view (this node among `members` or not). `clock_of` gives this node's
  // knowledge of a live member's clock (the view's clocks already observed).
  void Update(const std::vector<MemberEntry>& members, const OwnClaims& own,
              const std::function<uint64_t(NodeId)>& clock_of);

  // The cluster's samples as the budget counts them: the believed claims of the latest view,
  // and this node's own as they are now (`own_samples`).
  int64_t ReportedSamples(int64_t own_samples) const {
    return cluster_samples_ + (own_samples - own_samples_at_view_);
  }
  int64_t cluster_samples() const { return cluster_samples_; }
  // The budget's count between views: ReportedSamples, plus for each live member that has not
  // finished the steps its clock (`clock_of`, fresher than the view: every envelope carries it)
  // advanced since the view times the samples per step its believed claim shows (this node's
  // own, `own_samples / own_steps` computed, while the view shows none), at most this
  // node's own samples since the view each. The view's counts lag by up to a protocol period;
  // a fast program took thousands of steps in that time, and every member overshot the budget
  // by the others' unseen work. No member counts for more progress than this node itself made
  // meanwhile, so a clock that runs ahead of its work ends the run no sooner than an honest
  // member as fast as this one would.
  int64_t BudgetSamples(int64_t own_samples, uint64_t own_steps,
                        const std::function<uint64_t(NodeId)>& clock_of) const;
  // The cluster's samples for the learning-rate schedule. The members' counts in the view are up
  // to a digest period old (tens of steps); soft sync keeps every live member within S steps of
  // this one, so this node's own count times the live members is the fresher estimate whenever
  // it is the larger. A joiner (no samples of its own yet) reads the reported counts. The budget
  // keeps to the reported counts alone (ReportedSamples).
  int64_t ScheduleSamples(int64_t own_samples) const {
    return std::max(ReportedSamples(own_samples),
                    own_samples * static_cast<int64_t>(live_members_));
  }
  // The clock of the most advanced live member, as far as a quorum confirms it (QuorumClock).
  uint64_t best_clock() const { return best_clock_; }
  size_t live_members() const { return live_members_; }  // this node included
  // Half of the cluster (live members and those that finished and left) said they finished.
  bool quorum_finished() const { return quorum_finished_; }
  // The latest view has more finished members than the one before.
  bool more_finished() const { return more_finished_; }
  // The members that said they finished (they compute no more steps).
  const std::vector<NodeId>& finished_ids() const { return finished_ids_; }
  bool HasFinished(NodeId id) const;
  // Those of `ids` that have not said they finished (the ones a step may wait for).
  std::vector<NodeId> Unfinished(const std::vector<NodeId>& ids) const;
  std::vector<Refusal> TakeRefusals() { return std::exchange(refusals_, {}); }

 private:
  struct Believed {
    Incarnation incarnation = 0;
    uint64_t claim = 0;    // the latest claim
    uint64_t samples = 0;  // what is believed of it
    uint64_t clock = 0;    // its step clock in the view
    bool counting = false;  // live and not finished: its work since the view counts
  };
  static constexpr size_t kMaxRefusedClaims = 4096;

  void Believe(const std::vector<MemberEntry>& members, const std::vector<uint64_t>& claims,
               uint64_t bound);
  void Refuse(const std::vector<MemberEntry>& members, const std::vector<uint64_t>& claims,
              uint64_t bound, uint64_t top_clock, uint64_t far, int64_t max_batch,
              const std::function<uint64_t(NodeId)>& clock_of);

  const NodeId self_;
  std::map<NodeId, Believed> believed_;  // per member of the latest view
  // (member, incarnation, samples or clock) whose claims were set aside and refused.
  std::set<std::tuple<NodeId, Incarnation, bool>> refused_;
  std::vector<Refusal> refusals_;
  int64_t cluster_samples_ = 0;
  int64_t own_samples_at_view_ = 0;
  uint64_t best_clock_ = 0;
  size_t live_members_ = 1;
  size_t finished_members_ = 0;
  bool quorum_finished_ = false;
  bool more_finished_ = false;
  std::vector<NodeId> finished_ids_;
};

}  // namespace murmur::gossip
