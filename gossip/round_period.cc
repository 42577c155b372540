#include "gossip/round_period.h"

#include <algorithm>

#include "base/check.h"
#include "base/log.h"

namespace murmur::gossip {

void RoundPeriod::ResolveOuterH(int64_t batch, size_t view_members) {
  MURMUR_CHECK(o_.outer.has_value() && outer_every_ == 0) << "the outer H is resolved once";
  const int64_t members = o_.expect_members > 0
                              ? o_.expect_members
                              : static_cast<int64_t>(std::max<size_t>(1, view_members));
  const int64_t steps =
      o_.budget_samples > 0 && batch > 0 ? o_.budget_samples / (members * batch) : 0;
  outer_every_ = OuterEvery(*o_.outer, steps);
  MURMUR_CHECK_GE(outer_every_, 1);
  if (outer_every_ != o_.outer->every) {
    MURMUR_LOG_INFO(
        "node {}: an outer round every {} steps, not {}: about {} steps of {} members "
        "at a batch of {} hold at least {} rounds (the outer optimizer's rounds=)",
        o_.self, outer_every_, o_.outer->every, steps, members, batch, o_.outer->rounds);
  }
}

bool RoundPeriod::SparseSchedule(double local_epoch, size_t view_members) const {
  if (o_.local_steps != 0 || OuterActive(local_epoch)) return false;
  if (o_.post_local_epoch >= 0 && local_epoch >= o_.post_local_epoch) return false;
  return SparseScheduleFor(o_.choco.compressor, view_members);
}

int RoundPeriod::H(const PeriodContext& c) const {
  if (OuterActive(c.local_epoch)) return OuterH();
  const int h = o_.post_local_epoch >= 0 && c.local_epoch >= o_.post_local_epoch
                    ? o_.post_local_steps
                : o_.local_steps == 0 ? (SparseSchedule(c.local_epoch, c.view_members) ? 2 : 1)
                                      : o_.local_steps;
  // Under the critical distance (consensus control): fewer rounds. The first rounds of a run (no
  // average yet) always gossip.
  const bool under =
      o_.consensus_target > 0 && c.rounds >= 8 && c.consensus_estimate < o_.consensus_target;
  if (!under) return h;
  // A round is also how the neighbours learn this node's clock: the stretch stays within the
  // lead soft sync allows (lock-step, S = 0, keeps every H-th step), or they would wait for the
  // clock the membership view brings once a probe period.
  const int64_t stretched = static_cast<int64_t>(h) * o_.consensus_slack;
  const int64_t lead = o_.soft_sync.max_lead;
  return static_cast<int>(lead < 0 ? stretched : std::max<int64_t>(h, std::min(stretched, lead)));
}

bool RoundPeriod::PeerEstimate(NodeId from, float estimate) {
  if (!(estimate >= 0 && estimate <= kMaxConsensus)) return false;
  peer_consensus_[from] = estimate;
  return true;
}

double RoundPeriod::Estimate(double own_average, const std::vector<NodeId>& mixing) const {
  double sum = own_average;
  int n = 1;
  for (NodeId id : mixing) {
    if (auto it = peer_consensus_.find(id); it != peer_consensus_.end()) {
      sum += it->second;
      ++n;
    }
  }
  return sum / n;
}

void RoundPeriod::Prune(const std::vector<NodeId>& view) {
  std::erase_if(peer_consensus_, [&](const auto& e) {
    return !std::binary_search(view.begin(), view.end(), e.first);
  });
}

}  // namespace murmur::gossip
