// GossipNode: the membership view it is given (gossip_node.h), and what it believes of the
// members' claims in it (claims.h).
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "gossip/claims.h"
#include "gossip/gossip_node.h"

namespace murmur::gossip {

void GossipNode::Step(const MemberView& view, TimePoint now) {
  members_ = view.members;
  view_ = LiveIds(view, o_.self);
  s_.live_members = 1;
  size_t finished = 0, finished_gone = 0;
  finished_ids_.clear();
  // Every member's sample claim (its work counts toward the budget even after it left) and the
  // live members' clocks, this node's first in each, bounded below (claims.h).
  std::vector<uint64_t> claims{static_cast<uint64_t>(std::max<int64_t>(s_.samples, 0))};
  std::vector<uint64_t> clocks{s_.step};
  for (const MemberEntry& m : members_) {
    if (m.id == o_.self) {
      own_samples_at_view_ = s_.samples;
      continue;
    }
    // Samples follow steps computed (an adopted clock adds none); 4x covers members whose
    // batch is larger than this node's.
    const uint64_t plausible = m.step_clock * static_cast<uint64_t>(4 * max_batch_);
    claims.push_back(std::min(m.samples, plausible));
    const bool live = m.state == MemberState::kAlive || m.state == MemberState::kSuspect;
    if (m.finished) {
      ++finished;
      finished_ids_.push_back(m.id);
      if (!live) ++finished_gone;
    }
    if (live) {
      ++s_.live_members;
      sync_.Observe(m.id, m.step_clock);
      clocks.push_back(sync_.ClockOf(m.id));
    } else {
      sync_.Forget(m.id);
      if (choco_) choco_->Forget(m.id);
    }
  }
  BoundClaims(claims, clocks);
  // Quorum: half of the cluster (live members and those that finished and left).
  if (finished > 0 && 2 * finished >= s_.live_members + finished_gone) peer_finished_ = true;
  if (finished > finished_members_ && o_.target_accuracy > 0) evaluate_now_ = true;
  finished_members_ = finished;
  if (finish_ != nullptr) {
    finish_->View(view_, now);
    EmitFinishOutput();  // a relayed result (consensus_finish.h), in any phase
  }
  // Deferred messages whose sender came alive are handled now; the rest wait out their time.
  std::deque<Deferred> waiting;
  waiting.swap(deferred_);
  deferred_bytes_ = 0;
  for (Deferred& d : waiting) {
    const std::string_view why = Check(d.message);
    if (!MayPassLater(why)) {
      d.message.frame = d.bytes;
      Step(d.message, now);
    } else if (now < d.expires && !KnownGone(d.message.from, d.message.incarnation)) {
      deferred_bytes_ += d.bytes.size();
      deferred_.push_back(std::move(d));
    } else {
      Reject(why, d.message.from,
             why == kRejectUnknownSender
                 ? "not a live member"
                 : "incarnation " + std::to_string(d.message.incarnation) +
                       " never confirmed by the membership (it holds " +
                       std::to_string(ViewIncarnation(d.message.from)) + ")");
    }
  }
  Advance(now);
}

void GossipNode::BoundClaims(const std::vector<uint64_t>& claims,
                             const std::vector<uint64_t>& clocks) {
  const uint64_t bound = ClaimBound(claims);
  // A member's claim is believed up to the bound when it is made: a claim that stops growing
  // (its member left, died, or repeats one figure) keeps what it was believed then, instead of
  // rising with the bound as the honest members progress.
  std::map<NodeId, Believed> believed;
  s_.cluster_samples = static_cast<int64_t>(claims[0]);
  size_t k = 1;
  for (const MemberEntry& m : members_) {
    if (m.id == o_.self) continue;
    const uint64_t claim = claims[k++];
    Believed b;
    if (auto it = believed_.find(m.id);
        it != believed_.end() && it->second.incarnation == m.incarnation) {
      b = it->second;
    }
    b.incarnation = m.incarnation;
    if (claim != b.claim) b.samples = std::max(b.samples, std::min(claim, bound));
    b.claim = claim;
    s_.cluster_samples += static_cast<int64_t>(b.samples);
    believed[m.id] = b;
  }
  believed_ = std::move(believed);  // members forgotten by the view are dropped
  const uint64_t catch_up_gap = static_cast<uint64_t>(std::max<int64_t>(
      o_.soft_sync.max_lead, static_cast<int64_t>(HopsAcross(o_.choco.sampling, view_.size()))));
  const uint64_t far = 4 * std::max<uint64_t>(catch_up_gap, 1);
  best_clock_ = QuorumClock(clocks, far);
  const uint64_t top_clock = clocks.empty() ? 0 : *std::max_element(clocks.begin(), clocks.end());
  // Each member whose word the bounds set aside is counted once per life.
  size_t i = 1;  // claims[0] is this node's own
  for (const MemberEntry& m : members_) {
    if (m.id == o_.self) continue;
    const uint64_t claim = claims[i++];
    const bool live = m.state == MemberState::kAlive || m.state == MemberState::kSuspect;
    // Counted when far beyond the bound (an honest member a little ahead of the rest is only
    // trimmed): more than twice it and 64 batches.
    const bool samples_refused =
        claim / 2 > bound && claim - 2 * bound > static_cast<uint64_t>(max_batch_) * 64;
    const bool clock_refused = live && sync_.ClockOf(m.id) == top_clock && top_clock > best_clock_;
    if (refused_claims_.size() >= kMaxRefusedClaims) refused_claims_.clear();
    if (samples_refused && refused_claims_.insert({m.id, m.incarnation, true}).second) {
      Reject(kRejectUnconfirmedSamples, m.id,
             "claims " + std::to_string(claim) + " samples; believed " + std::to_string(bound) +
                 " (claims.h)");
    }
    if (clock_refused && refused_claims_.insert({m.id, m.incarnation, false}).second) {
      Reject(kRejectUnconfirmedClock, m.id,
             "claims step " + std::to_string(top_clock) + "; no other member is within " +
                 std::to_string(far) + " steps of it");
    }
  }
}

bool GossipNode::KnownGone(NodeId id, Incarnation incarnation) const {
  for (const MemberEntry& m : members_) {
    if (m.id == id) {
      return (m.state == MemberState::kDead || m.state == MemberState::kLeft) &&
             incarnation <= m.incarnation;  // a newer life is a restart, not a ghost
    }
  }
  return false;
}

Incarnation GossipNode::ViewIncarnation(NodeId id) const {
  for (const MemberEntry& m : members_) {
    if (m.id == id) return m.incarnation;
  }
  return 0;
}

}  // namespace murmur::gossip
