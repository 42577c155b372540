// The end of a gossip node's run (gossip_node.h "finishing", "finished"): the budget, the
// "finished" announcement and the consensus finish (consensus_finish.h); and the evaluations
// that measure the run on the way (eval_every) and decide a target accuracy.
#include <algorithm>
#include <cmath>

#include "base/log.h"
#include "coding/vector_ops.h"
#include "gossip/gossip_node.h"

namespace murmur::gossip {

bool GossipNode::EvaluationDue() {
  if (o_.eval_every > 0) return s_.local_steps % o_.eval_every == 0;
  if (o_.eval_every != kEvalPerRun || s_.local_steps == 0) return false;
  if (static_cast<int64_t>(s_.local_steps) < next_evaluation_) return false;
  int64_t every = kEvalEveryWithoutBudget;
  if (o_.budget_samples > 0 && s_.samples > 0) {
    // This node's share of the budget in its own steps, as the view and its batches stand now.
    const double per_step = static_cast<double>(s_.samples) / static_cast<double>(s_.local_steps);
    const double members = static_cast<double>(std::max<size_t>(1, view_.size()));
    const double steps = static_cast<double>(o_.budget_samples) / (members * per_step);
    every = std::max<int64_t>(1, static_cast<int64_t>(steps / kEvaluationsPerRun));
  }
  next_evaluation_ = static_cast<int64_t>(s_.local_steps) + every;
  return true;
}

void GossipNode::Step(const Evaluated& result, TimePoint now) {
  if (!evaluating_) return;
  evaluating_ = false;
  if (std::isfinite(result.accuracy) && result.accuracy >= 0) {
    s_.accuracy = result.accuracy;
    s_.accuracy_step = s_.step;
    if (phase_ == Phase::kFinishing) s_.own_accuracy = result.accuracy;
  }
  if (phase_ == Phase::kLingering) linger_until_ = std::max(linger_until_, now + o_.linger);
  Advance(now);
}

bool GossipNode::BudgetSpent(TimePoint now) {
  // A schedule that decays to zero is spent when this node's estimate of the cluster's samples
  // reaches the budget: every later step would be taken at rate 0. The members' reported counts
  // lag that estimate by a digest period.
  const bool schedule_spent = o_.budget_samples > 0 && o_.lr_schedule.has_value() &&
                              o_.lr_schedule->At(o_.budget_samples) == 0 &&
                              ScheduleSamples() >= o_.budget_samples;
  if (o_.budget_samples > 0 && (ReportedSamples() >= o_.budget_samples || schedule_spent)) {
    s_.end_reason = "epochs";
  } else if (o_.target_accuracy > 0 && s_.accuracy >= o_.target_accuracy) {
    s_.end_reason = "accuracy";
  } else if (o_.time_limit.count() > 0 && now - start_ >= o_.time_limit) {
    s_.end_reason = "time";
  } else if (peer_finished_) {
    s_.end_reason = "peer";
  } else if (stop_requested_) {
    s_.end_reason = "stopped";
  } else {
    return false;
  }
  return true;
}

void GossipNode::Finish(TimePoint now) {
  Emit(Finished{s_.end_reason});
  // A node its operator stopped does not announce that it finished, only leaves: the others
  // train on. Counted as finished, it made half of a 2-node cluster, and the other node (its own
  // stop a moment away) ended with it and began a finish nobody would answer ("missed").
  Emit(Announce{s_.step, static_cast<uint64_t>(s_.samples), !stop_requested_});
  evaluating_ = true;
  if (finish_ == nullptr || stop_requested_) {
    // Stopped by the operator: the others train on, there is nothing to average with.
    s_.finish = "off";
    EnterPhase(Phase::kLingering);
    linger_until_ = now + o_.linger;
    Emit(Evaluate{true, x_});
    return;
  }
  EnterPhase(Phase::kFinishing);
  final_model_ = HostModel();  // stays as it is until the finish ends: training is over
  // A node that trained nothing (a restart that found the run over) holds no model of the run's:
  // it takes the average without adding to it.
  const bool trained = s_.local_steps > 0;
  if (!trained) {
    MURMUR_LOG_INFO("node {}: trained no step: its model is left out of the consensus finish",
                    o_.self);
  }
  finish_->Start(final_model_, view_.empty() ? std::vector<NodeId>{o_.self} : view_, now, trained);
  EmitFinishOutput();
  // The own model's accuracy while the contributions travel, on the periodic evaluations' rows:
  // the full test set is for the model the run ends on. A caller's evaluation runs on the model
  // itself, so the result is adopted only after it; two full ones would hold an expensive
  // evaluation's finish for twice its time.
  Emit(Evaluate{false, x_});
}

void GossipNode::AdvanceFinishing(TimePoint now) {
  if (evaluating_) return;
  finish_->Tick(now);
  EmitFinishOutput();
  if (!finish_->outcome().has_value() && !stop_requested_) {
    Emit(Wait{std::min(finish_->deadline(), now + std::chrono::milliseconds(20))});
    return;
  }
  const FinishOutcome o = finish_->outcome().value_or(
      FinishOutcome{false, 0, 0, {}, "the operator stopped the node while it waited"});
  EnterPhase(Phase::kLingering);
  linger_until_ = now + o_.linger;
  if (!o.averaged) {
    s_.finish = "missed";
    MURMUR_LOG_WARN(
        "node {}: missed the consensus finish ({}): the run ends on this node's own "
        "model, which is not the cluster's",
        o_.self, o.why);
    if (observer_ != nullptr) observer_->Finish(false, 0, 0);
    // The run ends on the own model: its full evaluation, unless the operator is waiting.
    if (!stop_requested_) {
      evaluating_ = true;
      Emit(Evaluate{true, x_});
    }
    return;
  }
  const double moved = coding::SquaredL2Distance(o.model, final_model_);
  const double norm = coding::SquaredL2Norm(o.model);
  s_.finish = "averaged";
  s_.finish_contributors = o.contributors;
  s_.finish_collector = o.collector;
  s_.finish_moved = norm > 0 ? std::sqrt(moved / norm) : 0;
  SetModel(o.model);
  Emit(ResetOptimizer{});
  // The collector stays until every member left (Settled) or a member would have given up
  // waiting: its results may still be on their way over a thin link, and a collector that left
  // took the ones not yet sent with it (the members then collected again among themselves).
  if (o.collector == o_.self) linger_until_ = std::max(linger_until_, finish_->deadline());
  MURMUR_LOG_INFO(
      "node {}: adopted the average of {} members' models from node {} ({:.3g} "
      "relative from its own)",
      o_.self, o.contributors, o.collector, s_.finish_moved);
  if (observer_ != nullptr) observer_->Finish(true, o.contributors, s_.finish_moved);
  evaluating_ = true;
  Emit(Evaluate{true, x_});
}

void GossipNode::EnsureFinish(TimePoint now) {
  if (finish_ != nullptr || o_.finish_wait.count() <= 0) return;
  ConsensusFinishOptions f;
  f.self = o_.self;
  f.dimension = static_cast<uint32_t>(x_.size());
  f.result_wait = o_.finish_wait;
  f.collect_wait = o_.finish_wait / 2;
  finish_ = std::make_unique<ConsensusFinish>(f);
  finish_->View(view_.empty() ? std::vector<NodeId>{o_.self} : view_, now);
}

void GossipNode::OnFinishMessage(const Incoming& m, const FinishMessage& header, TimePoint now) {
  EnsureFinish(now);
  if (finish_ == nullptr) {
    return Reject(kRejectProtocol, m.from, "a finish message while this node does not finish");
  }
  sync_.Observe(m.from, m.step_clock);
  const FinishStepResult r = finish_->Step(m.from, header, m.frame,
                                           final_model_.empty() ? HostModel() : final_model_, now);
  ++s_.finish_verdicts[std::string(FinishVerdictName(r.verdict))];
  EmitFinishOutput();
  if (r.verdict == FinishVerdict::kOutlier) {
    Reject(kRejectOutlier, m.from, "finish: " + r.status.ToString());
  } else if (r.verdict == FinishVerdict::kRejected) {
    Reject(r.failure == coding::DecodeFailure::kNone ? kRejectProtocol
                                                     : coding::DecodeFailureName(r.failure),
           m.from, "finish: " + r.status.ToString());
  } else if (r.verdict == FinishVerdict::kNotExpected) {
    Reject(kRejectProtocol, m.from, "finish: " + r.status.ToString());
  }
}

void GossipNode::EmitFinishOutput() {
  for (const auto& [from, refused] : finish_->TakeRefusals()) {
    ++s_.finish_verdicts[std::string(FinishVerdictName(refused.verdict))];
    Reject(kRejectOutlier, from, "finish: " + refused.status.ToString());
  }
  for (SendTo& send : finish_->TakeOutput()) Emit(std::move(send));
}

std::string GossipNode::Activity() const {
  switch (phase_) {
    case Phase::kJoining:
      if (o_.expect_members > 0) {
        return fmt::format("joining: {} of {} members", s_.live_members, o_.expect_members);
      }
      return fmt::format("joining: {} member{} so far", s_.live_members,
                         s_.live_members == 1 ? "" : "s");
    case Phase::kAwaitingModel:
      return fmt::format("waiting for a model snapshot from node {}", awaiting_model_from_);
    case Phase::kTraining:
      return "training";
    case Phase::kFinishing:
      return "finishing";
    case Phase::kLingering:
      return "lingering";
    case Phase::kOver:
      return "over";
  }
  return "";
}

}  // namespace murmur::gossip
