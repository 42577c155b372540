#include "gossip/claims_ledger.h"

#include <algorithm>
#include <utility>

#include "base/check.h"
#include "gossip/claims.h"
#include "gossip/node_io.h"

namespace murmur::gossip {
namespace {

bool Live(const MemberEntry& m) {
  return m.state == MemberState::kAlive || m.state == MemberState::kSuspect;
}

}  // namespace

void ClaimsLedger::Update(const std::vector<MemberEntry>& members, const OwnClaims& own,
                          const std::function<uint64_t(NodeId)>& clock_of) {
  live_members_ = 1;
  size_t finished = 0, finished_gone = 0;
  finished_ids_.clear();
  // Every member's sample claim (its work counts toward the budget even after it left) and the
  // live members' clocks, this node's first in each, bounded below (claims.h).
  std::vector<uint64_t> claims{static_cast<uint64_t>(std::max<int64_t>(own.samples, 0))};
  std::vector<uint64_t> clocks{own.step};
  for (const MemberEntry& m : members) {
    if (m.id == self_) {
      own_samples_at_view_ = own.samples;
      continue;
    }
    // Samples follow steps computed (an adopted clock adds none); 4x covers members whose
    // batch is larger than this node's.
    const uint64_t plausible = m.step_clock * static_cast<uint64_t>(4 * own.max_batch);
    claims.push_back(std::min(m.samples, plausible));
    if (m.finished) {
      ++finished;
      finished_ids_.push_back(m.id);
      if (!Live(m)) ++finished_gone;
    }
    if (Live(m)) {
      ++live_members_;
      clocks.push_back(clock_of(m.id));
    }
  }
  const uint64_t bound = ClaimBound(claims);
  Believe(members, claims, bound);
  const uint64_t far = 4 * std::max<uint64_t>(own.catch_up_gap, 1);
  best_clock_ = QuorumClock(clocks, far);
  const uint64_t top_clock = *std::max_element(clocks.begin(), clocks.end());
  Refuse(members, claims, bound, top_clock, far, own.max_batch, clock_of);
  if (finished > 0 && 2 * finished >= live_members_ + finished_gone) quorum_finished_ = true;
  more_finished_ = finished > finished_members_;
  finished_members_ = finished;
  MURMUR_CHECK_LE(best_clock_, top_clock);
}

// A member's claim is believed up to the bound when it is made: a claim that stops growing (its
// member left, died, or repeats one figure) keeps what it was believed then, instead of rising
// with the bound as the honest members progress.
void ClaimsLedger::Believe(const std::vector<MemberEntry>& members,
                           const std::vector<uint64_t>& claims, uint64_t bound) {
  std::map<NodeId, Believed> believed;
  cluster_samples_ = static_cast<int64_t>(claims[0]);
  size_t k = 1;
  for (const MemberEntry& m : members) {
    if (m.id == self_) continue;
    const uint64_t claim = claims[k++];
    Believed b;
    if (auto it = believed_.find(m.id);
        it != believed_.end() && it->second.incarnation == m.incarnation) {
      b = it->second;
    }
    const uint64_t before = b.samples;
    b.incarnation = m.incarnation;
    if (claim != b.claim) b.samples = std::max(b.samples, std::min(claim, bound));
    b.claim = claim;
    b.clock = m.step_clock;
    b.counting = Live(m) && !m.finished;
    MURMUR_CHECK_GE(b.samples, before) << "a believed claim decreased within one life";
    cluster_samples_ += static_cast<int64_t>(b.samples);
    believed[m.id] = b;
  }
  believed_ = std::move(believed);  // members forgotten by the view are dropped
}

int64_t ClaimsLedger::BudgetSamples(int64_t own_samples, uint64_t own_steps,
                                    const std::function<uint64_t(NodeId)>& clock_of) const {
  const int64_t own_since = std::max<int64_t>(0, own_samples - own_samples_at_view_);
  const double own_per_step =
      own_steps == 0 ? 0.0 : static_cast<double>(own_samples) / static_cast<double>(own_steps);
  int64_t extra = 0;
  for (const auto& [id, b] : believed_) {
    if (!b.counting) continue;
    const uint64_t clock = clock_of(id);
    if (clock <= b.clock) continue;
    // A view from before the member's first step shows no rate: this node's own stands in.
    const double per_step = b.clock == 0 || b.samples == 0
                                ? own_per_step
                                : static_cast<double>(b.samples) / static_cast<double>(b.clock);
    // Capped before the conversion: a clock near 2^64 makes a product no int64_t holds.
    const double unseen = per_step * static_cast<double>(clock - b.clock);
    extra += static_cast<int64_t>(std::min(static_cast<double>(own_since), unseen));
  }
  return ReportedSamples(own_samples) + extra;
}

// Each member whose word the bounds set aside is refused once per life.
void ClaimsLedger::Refuse(const std::vector<MemberEntry>& members,
                          const std::vector<uint64_t>& claims, uint64_t bound, uint64_t top_clock,
                          uint64_t far, int64_t max_batch,
                          const std::function<uint64_t(NodeId)>& clock_of) {
  size_t i = 1;  // claims[0] is this node's own
  for (const MemberEntry& m : members) {
    if (m.id == self_) continue;
    const uint64_t claim = claims[i++];
    // Set aside when far beyond the bound (an honest member a little ahead of the rest is only
    // trimmed): more than twice it and 64 batches.
    const bool samples_refused =
        claim / 2 > bound && claim - 2 * bound > static_cast<uint64_t>(max_batch) * 64;
    const bool clock_refused = Live(m) && clock_of(m.id) == top_clock && top_clock > best_clock_;
    if (refused_.size() >= kMaxRefusedClaims) refused_.clear();
    if (samples_refused && refused_.insert({m.id, m.incarnation, true}).second) {
      refusals_.push_back({kRejectUnconfirmedSamples, m.id,
                           "claims " + std::to_string(claim) + " samples; believed " +
                               std::to_string(bound) + " (claims.h)"});
    }
    if (clock_refused && refused_.insert({m.id, m.incarnation, false}).second) {
      refusals_.push_back({kRejectUnconfirmedClock, m.id,
                           "claims step " + std::to_string(top_clock) +
                               "; no other member is within " + std::to_string(far) +
                               " steps of it"});
    }
  }
}

bool ClaimsLedger::HasFinished(NodeId id) const {
  return std::find(finished_ids_.begin(), finished_ids_.end(), id) != finished_ids_.end();
}

std::vector<NodeId> ClaimsLedger::Unfinished(const std::vector<NodeId>& ids) const {
  std::vector<NodeId> out;
  for (NodeId id : ids) {
    if (!HasFinished(id)) out.push_back(id);
  }
  return out;
}

}  // namespace murmur::gossip
