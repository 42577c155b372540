// A gossip node's joining phase (gossip_node.h "joining"): asking the most advanced live member
// for its model, a refusal or a lost reply asked again of the next, and the reply's adoption.
#include <algorithm>

#include "base/log.h"
#include "coding/update_codec.h"
#include "gossip/gossip_node.h"

namespace murmur::gossip {

void GossipNode::OnSnapshotReply(const Incoming& m, const SnapshotReply& r) {
  if (m.from != awaiting_model_from_) return;  // late or unasked: ignored
  if (r.dimension == 0 && m.frame.empty()) {   // refused: over its snapshot rate
    if (refused_models_.size() < kMaxRefusedModels) refused_models_.push_back(m.from);
    model_refused_ = true;
    return;
  }
  coding::Update u;
  coding::DecodeFailure failure = coding::DecodeFailure::kNone;
  Status s = coding::DecodeUpdate(m.frame, static_cast<uint32_t>(x_.size()), u, &failure);
  if (!s.ok() || !u.dense) {
    Reject(failure == coding::DecodeFailure::kNone ? kRejectProtocol
                                                   : coding::DecodeFailureName(failure),
           m.from, "model snapshot: " + s.ToString());
    return;
  }
  sync_.Observe(m.from, m.step_clock);
  received_model_ = std::move(u.values);
  received_model_clock_ = std::max(r.round, m.step_clock);
}

bool GossipNode::AskForModel(TimePoint now) {
  NodeId best = 0;
  uint64_t clock = 0;
  auto refused = [&](NodeId id) {
    return std::find(refused_models_.begin(), refused_models_.end(), id) != refused_models_.end();
  };
  for (const MemberEntry& m : members_) {
    if (m.id != o_.self && m.state == MemberState::kAlive && sync_.ClockOf(m.id) > clock &&
        !refused(m.id)) {
      best = m.id, clock = sync_.ClockOf(m.id);
    }
  }
  if (best == 0) {
    refused_models_.clear();  // every member refused: the next attempt may ask any again
    return false;
  }
  awaiting_model_from_ = best;
  model_asked_at_ = now;
  model_refused_ = false;
  Emit(SendTo{best, SnapshotRequest{0, true}, nullptr});
  return true;
}

void GossipNode::AdvanceJoin(TimePoint now) {
  if (phase_ == Phase::kJoining) {
    const bool enough =
        o_.expect_members > 0 && static_cast<int>(s_.live_members) >= o_.expect_members;
    // A quorum of the members seen has finished: nobody more is coming, the run is over.
    if (!enough && now < join_deadline_ && !stop_requested_ && !peer_finished_) {
      Emit(Wait{std::min(join_deadline_, now + std::chrono::milliseconds(20))});
      return;
    }
    // Peers only a few steps in are starting together with this node, which starts like them.
    const bool running = best_clock_ > static_cast<uint64_t>(o_.join_after_steps);
    const bool own_is_fresh = resume_.has_value() && best_clock_ <= s_.step + o_.resume_max_lag;
    if (running && !own_is_fresh && !stop_requested_ && !peer_finished_ && AskForModel(now)) {
      if (resume_.has_value()) {
        MURMUR_LOG_WARN(
            "node {}: its checkpoint (step {}) is more than {} steps behind the cluster "
            "(step {}): joining with a peer's model",
            o_.self, s_.step, o_.resume_max_lag, best_clock_);
        resume_.reset();
        s_.resumed_step = 0;
      }
      EnterPhase(Phase::kAwaitingModel);
      join_attempt_ = 1;
      ++s_.join_requests;
      Emit(Wait{now + o_.snapshot_timeout});
      return;
    }
    if (resume_.has_value()) {
      MURMUR_LOG_INFO("node {}: resuming from its checkpoint at step {} (the cluster is at {})",
                      o_.self, s_.step, best_clock_);
    }
    return StartTraining(now);
  }
  if (received_model_.has_value()) {
    AdoptReceivedModel();
    s_.joined_by_snapshot = true;
    from_initial_ = false;
    MURMUR_LOG_INFO("node {}: joined a running cluster at step {} with a peer's model", o_.self,
                    s_.step);
    return StartTraining(now);
  }
  if (stop_requested_ || peer_finished_) return StartTraining(now);
  if (!model_refused_ && now - model_asked_at_ < o_.snapshot_timeout) {
    Emit(Wait{model_asked_at_ + o_.snapshot_timeout});
    return;
  }
  if (model_refused_) {
    MURMUR_LOG_INFO("node {}: node {} refused a model snapshot (over its rate; attempt {} of {})",
                    o_.self, awaiting_model_from_, join_attempt_, o_.join_attempts);
  } else {
    MURMUR_LOG_WARN("node {}: no model snapshot from {} in {:.1f} s (attempt {} of {})", o_.self,
                    awaiting_model_from_, ToSeconds(o_.snapshot_timeout), join_attempt_,
                    o_.join_attempts);
  }
  if (join_attempt_ < o_.join_attempts && AskForModel(now)) {
    ++join_attempt_;
    ++s_.join_requests;
    Emit(Wait{now + o_.snapshot_timeout});
    return;
  }
  awaiting_model_from_ = 0;
  MURMUR_LOG_WARN("node {}: starting from its own model", o_.self);
  StartTraining(now);
}

}  // namespace murmur::gossip
