#include "gossip/round_scheduler.h"

#include <algorithm>
#include <utility>

#include "base/check.h"

namespace murmur::gossip {

bool RoundScheduler::Due(uint64_t step, std::optional<int> outer_h, int period) {
  const bool due = outer_h.has_value() ? step % static_cast<uint64_t>(*outer_h) == 0
                                       : ++steps_since_round_ >= period;
  if (!due) return false;
  MURMUR_CHECK(!pending_) << "an overlapped round mixes within H - 1 steps";
  steps_since_round_ = 0;
  return true;
}

void RoundScheduler::Begin(uint64_t clock, std::vector<NodeId> view, const ChocoRoundStats& stats) {
  MURMUR_CHECK(!pending_) << "a round begun while another waits to mix";
  clock_ = clock;
  view_ = std::move(view);
  stats_ = stats;
}

void RoundScheduler::Pend(TimePoint wait_until, int overlap) {
  MURMUR_CHECK_GE(overlap, 0);
  pending_ = true;
  wait_until_ = wait_until;
  overlap_ = overlap;
}

void RoundScheduler::Mixed() {
  pending_ = false;
  overlap_ = 0;
}

bool RoundScheduler::PeersIn(const std::vector<NodeId>& mixing, int outer_h, const SoftSync& sync,
                             const ClaimsLedger& claims, TimePoint now) const {
  // Under overlap the node steps on while it waits, so it waits for peers that could arrive
  // within the overlap's steps too.
  const uint64_t reach = static_cast<uint64_t>(std::max(outer_h / 4, 1) + overlap_);
  for (NodeId id : mixing) {
    const uint64_t clock = sync.ClockOf(id);
    // Not waited for: a peer whose update of the round is in (its copy is from its clock at the
    // round or later: a clock alone may come first, on membership's lane), one further behind
    // than `reach` (it could not arrive within the wait at this node's pace), a marked
    // straggler, a finished member.
    const auto copy = copy_clock_.find(id);
    const bool in = copy != copy_clock_.end() && copy->second >= clock_;
    if (clock == 0 || in || clock + reach < clock_ || sync.IsStraggler(id, now)) continue;
    if (claims.HasFinished(id)) continue;
    return false;
  }
  return true;
}

bool RoundScheduler::MixDue(uint64_t step, const std::vector<NodeId>& mixing, int outer_h,
                            const SoftSync& sync, const ClaimsLedger& claims,
                            TimePoint now) const {
  if (overlap_ == 0) return now >= wait_until_ || PeersIn(mixing, outer_h, sync, claims, now);
  return step >= clock_ + static_cast<uint64_t>(overlap_) ||
         PeersIn(mixing, outer_h, sync, claims, now);
}

void RoundScheduler::CopyApplied(NodeId from, uint64_t clock) {
  uint64_t& c = copy_clock_[from];
  c = std::max(c, clock);
}

void RoundScheduler::Prune(const std::vector<NodeId>& view) {
  std::erase_if(copy_clock_, [&](const auto& e) {
    return !std::binary_search(view.begin(), view.end(), e.first);
  });
}

bool RoundScheduler::ClockDue(uint64_t step, int64_t max_lead) {
  if (max_lead < 0 ||
      step < clock_sent_ + static_cast<uint64_t>(std::max<int64_t>(max_lead / 2, 1))) {
    return false;
  }
  clock_sent_ = step;
  return true;
}

}  // namespace murmur::gossip
