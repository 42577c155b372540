#pragma once
// One node of gossip training (`--mode gossip`) as a sans-IO machine: every decision the node
// makes between two optimizer steps. CHOCO averaging (choco.h) and soft synchronization
// (soft_sync.h) are its parts; this machine decides when each runs.
//
//   joining   wait for `expect_members` live members (up to `expect_wait`), or `join_wait` for
//             whoever is there. A cluster further along than `join_after_steps` is running: ask
//             its most advanced live member for its model (SnapshotRequest{model}), adopt the
//             model and the step clock of the reply; a reply that does not come within
//             `snapshot_timeout`, or a refusal (a member over its snapshot rate answers with a
//             frameless SnapshotReply of dimension 0), is asked again at once of the most
//             advanced member that has not refused, up to `join_attempts` times, then the node
//             starts from its own model. Then the public-copy
//             stream starts (from the cluster's initial model, or from the adopted one).
//             A node resumed from its own checkpoint (Resume) trains on from it at its saved
//             step unless the cluster is more than `resume_max_lag` steps ahead; its public-copy
//             stream then starts from the saved x̂_i (a new incarnation: peers ask for a snapshot).
//   training  per step: the budget (epochs of the whole data set over every member's samples,
//             a target accuracy, a time limit; a member that finished ends it for everyone); an
//             injected pause (nothing computed, peers still answered, the budget still checked);
//             the catch-up of a node more than S behind the most advanced live member (the
//             mixing neighbours' public-copy average; if none is fresher, a model snapshot from
//             the most advanced member once 4 S behind, re-asked every `model_retry`; with an
//             outer optimizer, after the average also a snapshot, whose model has the outer
//             step the copies lack); a snapshot that arrived is adopted; the soft-sync gate (wait
//             at most W for a mixing neighbour more than S behind, then mark it a straggler); then
//             ComputeStep. When it is done: every H-th step (consensus_slack × H while the
//             consensus estimate is under consensus_target) a CHOCO round on the model, and between
//             rounds the step clock alone to the trackers every S/2 steps (AnnounceClock); the
//             progress announced, a periodic Evaluate. With an outer optimizer (`outer`,
//             outer_optimizer.h) every round is an outer round on the step clock's multiples of H:
//             the update goes out at once, the mix waits (before the next step) until the mixing
//             peers within H / 4 steps of the round reached it, at most H / 4 of this node's step
//             times, and the outer step follows the mix; an adopted model (catch-up, snapshot)
//             restarts the anchor. "finished" from other members is believed from a quorum only
//             (half the cluster: live members and finished ones); a single finished member makes a
//             node with a target accuracy evaluate its own model at once and decide by that.
//   finishing "finished" announced so every member stops; then, unless `finish_wait` is 0, the
//             consensus finish (consensus_finish.h): the model goes to the collector (the lowest
//             live id), the node evaluates it meanwhile on the periodic evaluations' rows
//             (own_accuracy), and adopts the members' average when it comes (or keeps its own model
//             after `finish_wait`, and says so).
//   finished  a full Evaluate of the final model, `linger` spent answering peers, then RunOver;
//             no linger once the finish is settled (ConsensusFinish::Settled: a member holds
//             the average every live member contributed to; the collector saw them all leave).
//             The collector lingers until then, or until a member would give up waiting for
//             its result (`finish_wait` from the collector's own finish).
// The model is the caller's span (the trainer's parameters) in the memory of `device`: the
// machine reads it for rounds and snapshots and writes it only between steps (rounds, adoption,
// catch-up), never while a ComputeStep is outstanding. On a GPU it stays there: CHOCO runs on the
// device (choco.h), and only dense snapshots, the consensus finish and checkpoints copy it.
// Snapshot requests for the model are answered in every phase.
//
// Trust: a message changes nothing (clock, copies, snapshots served) unless its sender is a live
// member, its incarnation is below kMaxIncarnation and its step clock within max_clock_lead
// (each refusal counted by reason). Another member's samples count towards the budget at most
// 4 × its clock × the largest batch this node has seen, so a forged count cannot end the run.
//
// Inputs: Step(Incoming | MemberView | StepComputed | Evaluated | StopRequested | InjectedPause,
// now), Tick(now).
// Outputs (node_io.h): SendTo, Announce, ComputeStep, ResetOptimizer, Evaluate, Wait, Finished,
// RunOver. Counters for the node's metrics go to an optional observer.
// The node composes its parts, each a sans-IO machine of its own with its own tests: CHOCO
// (choco.h), soft sync (soft_sync.h), the outer optimizer (outer_optimizer.h), the consensus
// finish (consensus_finish.h), the claims ledger (claims_ledger.h), the round period and
// scheduler (round_period.h, round_scheduler.h), the model fetch and server (model_fetch.h,
// model_server.h), the deferred messages (deferred_messages.h) and the evaluation schedule
// (evaluation_schedule.h). The phase is one typed state: what only a phase holds goes with it.
// Thread safety: none; one driver thread.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "base/check.h"
#include "base/clock.h"
#include "base/memory_use.h"
#include "base/status.h"
#include "gossip/admission.h"
#include "gossip/choco.h"
#include "gossip/claims_ledger.h"
#include "gossip/consensus_finish.h"
#include "gossip/deferred_messages.h"
#include "gossip/evaluation_schedule.h"
#include "gossip/finish_stage.h"
#include "gossip/gossip_node_options.h"
#include "gossip/gossip_node_state.h"
#include "gossip/gossip_phase.h"
#include "gossip/host_mirror.h"
#include "gossip/joiner.h"
#include "gossip/model_fetch.h"
#include "gossip/model_server.h"
#include "gossip/node_io.h"
#include "gossip/outer_optimizer.h"
#include "gossip/round_mixer.h"
#include "gossip/round_period.h"
#include "gossip/round_scheduler.h"
#include "gossip/run_budget.h"
#include "gossip/soft_sync.h"
#include "kernels/memory.h"

namespace murmur::gossip {

// Where a node restarted from its own checkpoint stands (node/driver/gossip_checkpoint.h). The
// model itself is already in the caller's span.
struct ResumePoint {
  uint64_t step = 0;
  int64_t local_steps = 0;
  int64_t samples = 0;
  std::vector<float> public_copy;  // x̂_i when saved (x − x̂ is the update not sent yet)
};

class GossipNode {
 public:
  using Phase = GossipPhase;

  // `model` holds this node's starting model and stays the caller's (the trainer's parameters);
  // `initial` is the cluster's seeded initial model (the same values unless every node drew its
  // own: `from_initial` false).
  static StatusOr<std::unique_ptr<GossipNode>> Create(const GossipNodeOptions& options,
                                                      std::span<float> model,
                                                      std::vector<float> initial,
                                                      bool from_initial, TimePoint now);

  // A restart from the node's own checkpoint; call before the first Step or Tick. A public copy
  // of the wrong size is kInvalidArgument.
  Status Resume(ResumePoint point);

  void Step(const Incoming& message, TimePoint now);
  void Step(const MemberView& view, TimePoint now);
  void Step(const StepComputed& done, TimePoint now);
  void Step(const Evaluated& result, TimePoint now);
  void Step(const StopRequested& stop, TimePoint now);
  void Step(const InjectedPause& pause, TimePoint now);
  void Tick(TimePoint now);
  std::vector<NodeAction> TakeOutput() { return output_.Take(); }

  Phase phase() const { return static_cast<Phase>(phase_.index()); }
  // What the node is doing, for a person: "joining: 2 of 4 members", "waiting for a model
  // snapshot from node 3", "training", "finishing", "lingering", "over".
  std::string Activity() const;
  // x̂_i on the host (a copy); empty before training starts.
  std::vector<float> PublicCopyOnHost() const {
    return choco_ ? choco_->PublicCopyOnHost() : std::vector<float>();
  }
  // CHOCO's state (its public copy, the copies it tracks); null before training starts.
  const ChocoGossip* choco() const { return choco_.get(); }
  bool resumed() const { return resume_.has_value(); }
  bool joined() const { return phase() >= Phase::kTraining; }
  // Held by an injected pause at the latest decision.
  bool paused() const { return paused_; }
  const GossipNodeState& state() const { return s_; }
  uint64_t best_clock() const { return claims_.best_clock(); }  // most advanced live member
  std::vector<NodeId> Stragglers(TimePoint now) const { return sync_.Stragglers(now); }
  const SoftSync& soft_sync() const { return sync_; }
  NodeId id() const { return o_.self; }
  // What the machine holds, by buffer (base/memory_use.h): the model itself ("model", the
  // caller's), CHOCO's, the outer optimizer's, the host's copy of a GPU model, the initial model
  // until training starts, the deferred messages, a fetched model, the finish's.
  MemoryUse Memory() const;
  void set_observer(GossipNodeObserver* observer) { observer_ = observer; }

 private:
  // The phases with what only each holds, in the order of Phase (a phase only moves forward).
  struct Joining {
    Joiner joiner;
  };
  struct AwaitingModel {
    Joiner joiner;  // the same, once it asked for a model
  };
  struct Training {};
  struct Finishing {};
  struct Lingering {
    TimePoint until;  // answering peers until then
  };
  struct Over {};
  using PhaseState = std::variant<Joining, AwaitingModel, Training, Finishing, Lingering, Over>;
  static_assert(std::variant_size_v<PhaseState> == static_cast<size_t>(Phase::kOver) + 1);

  GossipNode(const GossipNodeOptions& options, std::span<float> model, std::vector<float> initial,
             bool from_initial, TimePoint now);
  // Invariant: the phase only moves forward.
  void EnterPhase(PhaseState next) {
    MURMUR_CHECK(next.index() >= phase_.index())
        << "phase " << phase_.index() << " -> " << next.index();
    phase_ = std::move(next);
  }
  void Advance(TimePoint now);
  void AdvanceJoin(Joiner& joiner, TimePoint now);
  void StartTraining(TimePoint now);
  void AdvanceTraining(TimePoint now);
  // Whether the pending round mixes before the next step; false when the node waits for it.
  bool MixPendingRound(TimePoint now);
  // The soft-sync gate before a step over `mixing`: whether the step may be asked for now.
  bool GateOpen(const std::vector<NodeId>& mixing, TimePoint now);
  // Whether the budget ends the run now (GossipNodeState::end_reason says why).
  bool BudgetSpent(TimePoint now);
  void Finish(TimePoint now);
  void AdvanceFinishing(TimePoint now);
  // Holds a message that may pass once the view has its sender; false when it may not wait.
  bool Defer(const Incoming& m, std::string_view why, TimePoint now);
  // The deferred messages after a view: those whose sender came alive handled, the rest kept
  // until they expire.
  void Redeliver(TimePoint now);
  bool OnChocoMessage(const Incoming& m, TimePoint now);
  void OnModelRequest(const Incoming& m, TimePoint now);
  void OnSnapshotReply(const Incoming& m, const SnapshotReply& r);
  void OnFinishMessage(const Incoming& m, const FinishMessage& header, TimePoint now);
  void EmitFinishOutput();
  void CatchUp(const std::vector<NodeId>& view, const std::vector<NodeId>& mixing, TimePoint now);
  void AdoptReceivedModel();
  // A round: CHOCO's publish, the updates out, and its mix with the outer step (MixRound): at
  // once, or for an outer round once its peers are in (RoundScheduler).
  void Round(TimePoint now);
  // Pends the outer round begun; false when the model at the round could not be kept aside.
  bool PendOuterRound(TimePoint now);
  void MixRound();
  void EmitRoundOutput();
  // Logs `status` and ends the run with it.
  void Fail(const Status& status);
  // Between rounds, every S / 2 steps: the step clock alone (NoPayload) to the trackers.
  void AnnounceClock();
  void Reject(std::string_view reason, NodeId from, const std::string& why);
  // Admission::Check with the highest clock this node knows.
  std::string_view Check(const Incoming& m) const;
  void Emit(NodeAction action) { output_.Emit(std::move(action)); }
  // The view the current step's round mixes over (the latest view before the first step).
  const std::vector<NodeId>& RoundView() const {
    return step_view_.empty() ? admission_.live() : step_view_;
  }
  // The latest view's live ids, or this node alone before the first view.
  std::vector<NodeId> LiveOrSelf() const {
    return admission_.live().empty() ? std::vector<NodeId>{o_.self} : admission_.live();
  }
  PeriodContext Period() const;
  bool OuterActive() const { return period_.OuterActive(s_.local_epoch); }
  std::span<const float> HostModel() { return host_.Read(); }
  void SetModel(std::span<const float> host) { host_.Write(host); }

  const GossipNodeOptions o_;
  std::span<float> x_;
  HostMirror host_;  // x_ as the host sees it
  std::vector<float> initial_;
  bool from_initial_;
  SoftSync sync_;
  std::unique_ptr<ChocoGossip> choco_;  // from the start of training
  RoundPeriod period_;
  RoundMixer mixer_;
  RoundScheduler rounds_;
  Admission admission_;
  ClaimsLedger claims_;
  RunBudget budget_;
  ModelFetch fetch_;
  ModelServer server_;
  DeferredMessages deferred_;
  EvaluationSchedule evaluations_;
  FinishStage finish_;
  GossipNodeObserver* observer_ = nullptr;
  GossipNodeState s_;
  PhaseState phase_;
  TimePoint start_{};
  std::optional<ResumePoint> resume_;
  bool stop_requested_ = false;
  bool program_ended_ = false;  // StopRequested::finish: the caller's training ended
  InjectedPause pause_;
  bool paused_ = false;
  bool computing_ = false;
  bool evaluating_ = false;
  bool evaluate_now_ = false;  // a member finished: check the target with an evaluation
  int64_t max_batch_ = 0;      // the largest mini-batch this node computed
  std::vector<NodeId> step_view_;  // the view the current step's round mixes over
  std::vector<NodeId> step_mixing_;
  uint64_t rejections_logged_ = 0;
  ActionQueue output_;
};

}  // namespace murmur::gossip
