// GossipNode's rounds (gossip_node.h): a CHOCO round, and under an outer optimizer the outer
// round's wait for its peers and its outer step (outer_optimizer.h).
#include <algorithm>

#include "base/check.h"
#include "base/log.h"
#include "gossip/gossip_node.h"
#include "kernels/compress_ops.h"

namespace murmur::gossip {

void GossipNode::Round(TimePoint now) {
  const std::vector<NodeId>& view = step_view_.empty() ? view_ : step_view_;
  if (o_.local_steps == 0) {
    choco_->SetDensityFactor(SparseSchedule() ? 2 : 1);
    s_.density_factor = choco_->density_factor();
  }
  auto stats = choco_->Publish(x_, view, s_.rounds);
  if (!stats.ok()) return Fail(stats.status());
  if (observer_ != nullptr) observer_->RoundPublished();
  round_stats_ = *stats;
  round_view_ = view;
  round_clock_ = s_.step;
  // An outer round goes out at once and mixes once its mixing peers have sent theirs of the same
  // round, waiting at most a quarter of a round's steps (RoundWaitOver); a CHOCO round mixes at
  // once, and its updates then carry this round's consensus estimate.
  // Under overlap the node steps on meanwhile, from the model at the round kept aside.
  if (outer_.has_value() && OuterActive() && o_.soft_sync.max_lead >= 0) {
    const double reach_s = 0.25 * OuterH() * sync_.step_seconds();
    round_wait_until_ =
        now + std::min(sync_.EffectiveWait(),
                       std::chrono::duration_cast<Duration>(std::chrono::duration<double>(reach_s)));
    round_overlap_ = std::min(o_.outer->overlap, OuterH() - 1);
    if (round_overlap_ > 0) {
      if (round_model_.size() != x_.size()) {
        auto buffer = kernels::Buffer<float>::Uninitialized(o_.choco.device, x_.size());
        if (!buffer.ok()) return Fail(buffer.status());
        round_model_ = *std::move(buffer);
      }
      MURMUR_CHECK_OK(
          kernels::Copy<float>(o_.choco.device, round_model_.span(), o_.choco.device, x_));
    }
    mix_pending_ = true;
    EmitRoundOutput();
    return;
  }
  MixRound();
  if (phase_ == Phase::kOver) return;
  EmitRoundOutput();
}

void GossipNode::EmitRoundOutput() {
  for (ChocoOutgoing& out : choco_->TakeOutput()) {
    if (auto* u = std::get_if<UpdateHeader>(&out.payload)) {
      u->consensus = static_cast<float>(std::min(s_.consensus_average, kMaxConsensus));
    }
    Emit(SendTo{out.to, std::move(out.payload), std::move(out.frame)});
  }
}

bool GossipNode::RoundWaitOver(TimePoint now) const {
  return now >= round_wait_until_ || RoundPeersIn(now);
}

bool GossipNode::MixDue(TimePoint now) {
  if (BudgetSpent(now)) return true;
  if (round_overlap_ == 0) return RoundWaitOver(now);
  return s_.step >= round_clock_ + static_cast<uint64_t>(round_overlap_) || RoundPeersIn(now);
}

bool GossipNode::RoundPeersIn(TimePoint now) const {
  // Under overlap the node steps on while it waits, so it waits for peers that could arrive
  // within the overlap's steps too.
  const uint64_t reach = static_cast<uint64_t>(std::max(OuterH() / 4, 1) + round_overlap_);
  for (NodeId id : MixingPeers(round_view_)) {
    const uint64_t clock = sync_.ClockOf(id);
    // Not waited for: a peer whose update of the round is in (its copy is from its clock at the
    // round or later: a clock alone may come first, on membership's lane), one further behind
    // than `reach` (it could not arrive within the wait at this node's pace), a marked
    // straggler, a finished member.
    const auto copy = copy_clock_.find(id);
    const bool in = copy != copy_clock_.end() && copy->second >= round_clock_;
    if (clock == 0 || in || clock + reach < round_clock_ || sync_.IsStraggler(id, now)) continue;
    if (std::find(finished_ids_.begin(), finished_ids_.end(), id) != finished_ids_.end()) continue;
    return false;
  }
  return true;
}

void GossipNode::MixRound() {
  mix_pending_ = false;
  // Under overlap, x_ holds the steps since the round while the model at the round is mixed and
  // stepped; then they go on top of the new anchor.
  const bool carried = round_overlap_ > 0 && s_.step > round_clock_;
  const std::span<float> mixed = carried ? round_model_.span() : x_;
  const kernels::Device& device = o_.choco.device;
  if (carried) MURMUR_CHECK_OK(kernels::Axpy(device, -1.0f, round_model_.span(), x_));
  auto damping = [&](NodeId id) { return sync_.Damping(round_clock_, id); };
  choco_->Mix(mixed, round_view_, s_.rounds, damping, round_stats_);
  const Status outer = OuterRound(mixed);
  if (carried) MURMUR_CHECK_OK(kernels::Axpy(device, 1.0f, round_model_.span(), x_));
  round_overlap_ = 0;
  if (!outer.ok()) return Fail(outer);
  const ChocoRoundStats& stats = round_stats_;
  const std::vector<NodeId>& view = round_view_;
  ++s_.rounds;
  s_.consensus_distance = stats.consensus_distance;
  s_.consensus_average = s_.rounds == 1 ? stats.consensus_distance
                                        : 0.9 * s_.consensus_average + 0.1 * stats.consensus_distance;
  std::erase_if(peer_consensus_, [&](const auto& e) {
    return !std::binary_search(view.begin(), view.end(), e.first);
  });
  std::erase_if(copy_clock_, [&](const auto& e) {
    return !std::binary_search(view.begin(), view.end(), e.first);
  });
  if (observer_ != nullptr) {
    observer_->Round(static_cast<double>(stats.sent_values) / static_cast<double>(x_.size()),
                     stats.residual_norm, stats.consensus_distance);
  }
  s_.gamma = choco_->gamma();
  s_.gamma_halvings = choco_->gamma_halvings();
  if (stats.gamma_halved) {
    MURMUR_LOG_WARN("node {}: consensus distance grew for {} checks in a row ({:.3g} relative): "
                    "halving the consensus step to {:.4g} (set --gamma lower to avoid this)",
                    o_.self, choco_->options().guard_checks, stats.consensus_distance,
                    choco_->gamma());
  }
}

void GossipNode::Fail(const Status& status) {
  MURMUR_LOG_ERROR("node {}: {}", o_.self, status.ToString());
  EnterPhase(Phase::kOver);
  Emit(RunOver{status});
}

Status GossipNode::OuterRound(std::span<float> mixed) {
  if (!OuterActive()) return OkStatus();
  if (!outer_.has_value()) {
    MURMUR_ASSIGN_OR_RETURN(outer_, OuterOptimizer::Create(*o_.outer, o_.choco.device, mixed));
    return OkStatus();
  }
  MURMUR_ASSIGN_OR_RETURN(OuterStats stats, outer_->Step(mixed));
  ++s_.outer_rounds;
  s_.outer_delta = stats.relative;
  return OkStatus();
}

}  // namespace murmur::gossip
