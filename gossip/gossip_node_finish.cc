// GossipNode's last phases (gossip_node.h): the consensus finish from its start to its outcome,
// and the finish messages, which come in every phase.
#include <algorithm>

#include "base/check.h"
#include "base/log.h"
#include "coding/vector_ops.h"
#include "gossip/gossip_node.h"

namespace murmur::gossip {

void GossipNode::Finish(TimePoint now) {
  // No round after this: what only mixing needs goes before the finish's buffers come.
  if (choco_) choco_->Close();
  mixer_.Close();
  Emit(Finished{s_.end_reason});
  // A node its operator stopped does not announce that it finished, only leaves: the others train
  // on (counted as finished, it would make half of a 2-node cluster end with it).
  Emit(Announce{s_.step, static_cast<uint64_t>(s_.samples), !stop_requested_});
  evaluating_ = true;
  const bool own_finite = coding::AllFinite(HostModel());
  if (!finish_.on() || stop_requested_ || !own_finite) {
    // Stopped by the operator: the others train on, there is nothing to average with. A model
    // holding a non-finite value (a library user's own buffer, say) is never sent: the others
    // finish without it.
    s_.finish = own_finite ? "off" : "own model not finite";
    if (!own_finite)
      MURMUR_LOG_WARN(
          "node {}: its model holds a non-finite value: it takes no "
          "part in the consensus finish",
          o_.self);
    EnterPhase(Lingering{now + o_.linger});
    Emit(Evaluate{true, x_});
    return;
  }
  EnterPhase(Finishing{});
  // HostModel stays as it is until the finish ends: training is over.
  finish_.Start(HostModel(), LiveOrSelf(), now, /*trained=*/s_.local_steps > 0);
  EmitFinishOutput();
  // The own model's accuracy while the contributions travel, on the periodic evaluations' rows
  // (the full test set is for the model the run ends on; the average is adopted after it).
  Emit(Evaluate{false, x_});
}

void GossipNode::AdvanceFinishing(TimePoint now) {
  if (evaluating_) return;
  finish_.Tick(now);
  EmitFinishOutput();
  if (!finish_.outcome().has_value() && !stop_requested_) {
    Emit(Wait{std::min(finish_.deadline(), now + std::chrono::milliseconds(20))});
    return;
  }
  EnterPhase(Lingering{now + o_.linger});
  const FinishStage::Report r = finish_.Conclude();
  s_.Concluded(r.averaged, r.contributors, r.collector, r.moved);
  if (observer_ != nullptr) observer_->Finish(r.averaged, r.contributors, r.moved);
  if (r.averaged) {
    SetModel(finish_.outcome()->model);
    Emit(ResetOptimizer{});
    // The collector stays until every member left (Settled) or would have given up waiting: its
    // results may still be on their way over a thin link.
    TimePoint& until = std::get<Lingering>(phase_).until;
    if (r.collector == o_.self) until = std::max(until, finish_.deadline());
  }
  // The run ends on the model held now: its full evaluation, unless the operator is waiting
  // for a node that missed the finish.
  if (r.averaged || !stop_requested_) {
    evaluating_ = true;
    Emit(Evaluate{true, x_});
  }
}

void GossipNode::OnFinishMessage(const Incoming& m, const FinishMessage& header, TimePoint now) {
  finish_.Ensure(LiveOrSelf(), now);
  if (!finish_.on()) {
    return Reject(kRejectProtocol, m.from, "a finish message while this node does not finish");
  }
  sync_.Observe(m.from, m.step_clock);
  finish_.Step(
      m.from, header, m.frame, [this] { return HostModel(); }, now);
  EmitFinishOutput();
}

void GossipNode::EmitFinishOutput() {
  for (const Refusal& r : finish_.TakeRefusals()) Reject(r.reason, r.from, r.why);
  s_.finish_verdicts = finish_.verdicts();
  for (SendTo& send : finish_.TakeOutput()) Emit(std::move(send));
}

}  // namespace murmur::gossip
