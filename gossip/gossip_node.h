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
// Thread safety: none; one driver thread.

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "base/check.h"
#include "base/clock.h"
#include "base/lr_schedule.h"
#include "base/status.h"
#include "base/token_bucket.h"
#include "coding/compressor.h"
#include "gossip/choco.h"
#include "gossip/consensus_finish.h"
#include "gossip/node_io.h"
#include "gossip/outer_optimizer.h"
#include "gossip/peer_sampling.h"
#include "gossip/soft_sync.h"
#include "kernels/device.h"
#include "kernels/memory.h"

namespace murmur::gossip {

// GossipNodeOptions::local_steps 0: clusters of up to this many members gossip every 2nd step.
inline constexpr size_t kSparseScheduleMembers = 4;
// Whether local_steps 0 takes that schedule for a round whose view has `members` members.
inline bool SparseScheduleFor(const coding::CompressorOptions& compressor, size_t members) {
  return DensityScalable(compressor) && members <= kSparseScheduleMembers;
}

inline constexpr int64_t kEvalPerRun = -1;
inline constexpr int64_t kEvaluationsPerRun = 20;
inline constexpr int64_t kEvalEveryWithoutBudget = 200;

// The operator a node compresses with when none is given (`--compress auto`): int8 under an outer
// optimizer (its pseudo-gradients every H steps, nearly lossless; top-k's γ of 0.05 left the
// members' anchors apart), top-1 % with fp16 values for plain CHOCO rounds every step.
coding::CompressorOptions AutoCompressor(bool outer);
// CHOCO's options as a node's defaults have them: ChocoOptions' own, with the auto operator of
// the default outer optimizer.
ChocoOptions DefaultNodeChoco();

// The node's options. Their defaults are the defaults of every entry point: `murmur node`,
// `murmur local`, `murmur sim` and the library read them from here (node/config/gossip_config.cc
// writes each key's default from a default-constructed GossipNodeOptions), so a program that
// builds these options in C++ gets the node `murmur node` runs without flags
// (tests/node/config/gossip_defaults_test.cc holds them to that, key by key).
struct GossipNodeOptions {
  NodeId self = 0;
  Incarnation incarnation = 0;
  // The CHOCO machine's own options (choco.h): the operator, γ, who mixes with whom, where the
  // model lives (its public copies and arithmetic go with it) and the guards. The node sets its
  // id, incarnation and the model's dimension there when training starts.
  ChocoOptions choco = DefaultNodeChoco();
  SoftSyncOptions soft_sync;
  // H: local steps per gossip round. 0: the small-cluster schedule. While the round's view has
  // at most kSparseScheduleMembers members and the operator keeps a fraction (top-k), a node
  // gossips every 2nd step with twice the fraction (and the default γ of that fraction): about
  // the same bytes in half the rounds. Above that size, or for other operators, H is 1. A small
  // ring mixes fast (its spectral gap: 2/3 at 4 nodes, 0.2 at 8), so rounds it skips cost no
  // accuracy there (bench/results/2026-11-28-history.md, "Half the rounds on small clusters").
  int local_steps = 0;
  double post_local_epoch = -1;  // from this local epoch on, H = post_local_steps (< 0: never)
  int post_local_steps = 4;
  int64_t shard_rows = 1;       // this node's rows (local epochs)
  // The outer optimizer (outer_optimizer.h): from its start epoch on, every round is an outer
  // round every `outer->every` steps (local_steps, post_local_* and consensus control no longer
  // set H). None: the rounds mix the model and nothing more.
  std::optional<OuterOptions> outer = OuterOptions{};
  // The learning rate of each step, at the cluster's samples (every member at the same point of
  // the schedule); none: the trainer's own.
  std::optional<LrSchedule> lr_schedule;
  // Consensus control (Kong et al., ICML 2021, §4 and §5.1): below a critical consensus distance
  // decentralized SGD tracks centralized SGD, and more gossip buys nothing. While the estimate of
  // the consensus distance is under `consensus_target`, a node gossips every `consensus_slack` ×
  // H steps; above it, every H. 0: off.
  // The estimate: the mean of this node's own (‖Σ_j w_ij (x̂_j − x̂_i)‖ / ‖x̂_i‖, averaged over
  // recent rounds) and the ones its mixing peers sent with their latest updates. Kong et al.'s
  // Ξ is the cluster's mean distance to the average; a node's own measure alone is biased by how
  // stale its peers' public copies are, i.e. by the peers' gossip periods, so on its own it
  // settles in a lopsided state (one node gossips every step because its neighbour does not,
  // and the neighbour sees fresh copies and gossips rarely, the frequent one the cluster's
  // bottleneck). Sharing the estimate makes the decision
  // the same on both ends of a link.
  double consensus_target = 0.04;
  int consensus_slack = 8;
  // Budget: the run ends at the first of these (0 = not used).
  int64_t budget_samples = 0;   // samples over every member
  double target_accuracy = 0;
  Duration time_limit{0};
  // Steps between periodic evaluations (0: only the final one). kEvalPerRun: about
  // kEvaluationsPerRun over the run when it has a sample budget (from the view's size and this
  // node's samples per step, as it goes), every kEvalEveryWithoutBudget steps otherwise.
  int64_t eval_every = kEvalPerRun;
  int expect_members = 0;
  Duration expect_wait = std::chrono::seconds(30);
  Duration join_wait = std::chrono::seconds(3);
  int64_t join_after_steps = 20;
  Duration snapshot_timeout = std::chrono::seconds(5);
  int join_attempts = 3;
  Duration model_retry = std::chrono::seconds(2);
  Duration linger = std::chrono::milliseconds(500);
  // The consensus finish: how long a member waits for the average once its training is over (the
  // collector averages what it has after half of it); 0: no finish, every node keeps its model.
  Duration finish_wait = std::chrono::seconds(30);
  // How far the step clock of a message may lead the highest clock this node knows (its own,
  // the most advanced member's, the sender's); further is refused (kRejectClock).
  uint64_t max_clock_lead = 100000;
  // A node resumed from its own checkpoint trains on from it unless the most advanced live member
  // is more than this many steps ahead; then it joins like a new node, with a peer's model.
  uint64_t resume_max_lag = 1000;
  // Model snapshots cost a dense copy each: served at most this many at once and this many per
  // second on average (more is refused, kRejectSnapshotRate).
  double model_snapshot_burst = 4;
  double model_snapshots_per_s = 1;

  Status Validate() const;
};

// Where a node restarted from its own checkpoint stands (node/driver/gossip_checkpoint.h). The
// model itself is already in the caller's span.
struct ResumePoint {
  uint64_t step = 0;
  int64_t local_steps = 0;
  int64_t samples = 0;
  std::vector<float> public_copy;  // x̂_i when saved (x − x̂ is the update not sent yet)
};

// What a node's metrics count as it goes; every method may be left as is.
class GossipNodeObserver {
 public:
  virtual ~GossipNodeObserver() = default;
  virtual void Rejected(std::string_view /*reason*/) {}
  virtual void Staleness(double /*steps*/) {}
  virtual void LateDropped() {}
  // A round's q_i is compressed, encoded and queued (CHOCO steps 2-4); its consensus step
  // follows. A driver that reads its clock here splits a round's time between the two.
  virtual void RoundPublished() {}
  virtual void Round(double /*density*/, double /*residual_norm*/, double /*consensus*/) {}
  // The consensus finish ended: averaged (with `contributors` models, `moved`: ‖x̄ − x_i‖ / ‖x̄‖)
  // or not.
  virtual void Finish(bool /*averaged*/, uint32_t /*contributors*/, double /*moved*/) {}
};

// The node's state as its reports show it.
struct GossipNodeState {
  uint64_t step = 0;          // the step clock (adopted steps included)
  int64_t local_steps = 0;    // steps this node computed
  int64_t samples = 0;
  double local_epoch = 0;
  int64_t cluster_samples = 0;
  double loss = 0;            // running mean of recent batch losses
  bool have_loss = false;
  double accuracy = -1;       // last evaluation (-1: none yet)
  uint64_t accuracy_step = 0;
  uint64_t rounds = 0;
  uint64_t outer_rounds = 0;     // outer steps taken (GossipNodeOptions::outer)
  double outer_delta = 0;        // ‖Δ̄‖ / ‖a‖ of the latest outer step
  // Inner steps taken while an outer round's exchange was in flight (OuterOptions::overlap).
  uint64_t overlapped_steps = 0;
  uint64_t max_lag = 0;
  double consensus_distance = 0;
  double consensus_average = 0;  // over recent rounds (consensus control)
  // What consensus control decides by: the mean of consensus_average and the mixing peers'
  // (GossipNodeOptions::consensus_target).
  double consensus_estimate = 0;
  int gossip_period = 1;         // steps between this node's rounds now
  int density_factor = 1;        // the operator's kept fraction times this (local_steps 0)
  double gamma = 0;
  double lr = 0;              // of the latest step asked for (0: the trainer's own)
  uint64_t catchups = 0;
  uint64_t model_requests = 0;   // dense model snapshots asked for after joining
  uint64_t join_requests = 0;    // ... while joining
  uint64_t gamma_halvings = 0;
  size_t live_members = 1;
  std::map<std::string, uint64_t> verdicts;  // CHOCO message outcomes
  uint64_t rejected_messages = 0;
  uint64_t skipped_steps = 0;
  bool joined_by_snapshot = false;
  uint64_t resumed_step = 0;     // the step of the node's own checkpoint it resumed from (0: none)
  std::string end_reason;
  // The consensus finish: "" (not reached), "averaged", "missed" or "off".
  std::string finish;
  uint32_t finish_contributors = 0;
  NodeId finish_collector = 0;  // whose average it adopted (0: none adopted)
  double finish_moved = 0;      // ‖x̄ − x_i‖ / ‖x̄‖: how far the average was from this model
  double own_accuracy = -1;     // this node's own model before the finish (eval_samples rows)
  std::map<std::string, uint64_t> finish_verdicts;
};

class GossipNode {
 public:
  enum class Phase : uint8_t { kJoining, kAwaitingModel, kTraining, kFinishing, kLingering, kOver };

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
  std::vector<NodeAction> TakeOutput();

  Phase phase() const { return phase_; }
  // What the node is doing, for a person: "joining: 2 of 4 members", "waiting for a model
  // snapshot from node 3", "training", "finishing", "lingering", "over".
  std::string Activity() const;
  // x̂_i on the host (a copy); empty before training starts.
  std::vector<float> PublicCopyOnHost() const {
    return choco_ ? choco_->PublicCopyOnHost() : std::vector<float>();
  }
  bool resumed() const { return resume_.has_value(); }
  bool joined() const { return phase_ >= Phase::kTraining; }
  // Held by an injected pause at the latest decision.
  bool paused() const { return paused_; }
  const GossipNodeState& state() const { return s_; }
  uint64_t best_clock() const { return best_clock_; }  // most advanced live member
  std::vector<NodeId> Stragglers(TimePoint now) const { return sync_.Stragglers(now); }
  const SoftSync& soft_sync() const { return sync_; }
  NodeId id() const { return o_.self; }
  void set_observer(GossipNodeObserver* observer) { observer_ = observer; }

 private:
  GossipNode(const GossipNodeOptions& options, std::span<float> model, std::vector<float> initial,
             bool from_initial, TimePoint now);
  void Advance(TimePoint now);
  void AdvanceJoin(TimePoint now);
  void StartTraining(TimePoint now);
  void AdvanceTraining(TimePoint now);
  // A periodic evaluation after this step (GossipNodeOptions::eval_every).
  bool EvaluationDue();
  bool BudgetSpent(TimePoint now);
  // The members' reported samples, this node's own as they are now (the budget's count).
  int64_t ReportedSamples() const;
  int64_t ScheduleSamples() const;  // the cluster's samples now, for the learning-rate schedule
  void Finish(TimePoint now);
  void AdvanceFinishing(TimePoint now);
  // Holds a message that may pass once the view has its sender; false when it may not wait.
  bool Defer(const Incoming& m, std::string_view why, TimePoint now);
  bool OnChocoMessage(const Incoming& m, TimePoint now);
  void OnFinishMessage(const Incoming& m, const FinishMessage& header, TimePoint now);
  void EmitFinishOutput();
  // Creates the consensus finish (when it is on) before training, or when a member's finish
  // message comes while this node still joins (a restarted collector): held, not refused.
  void EnsureFinish(TimePoint now);
  void CatchUp(const std::vector<NodeId>& view, const std::vector<NodeId>& mixing, TimePoint now);
  bool AskForModel(TimePoint now);  // of the most advanced live member; false when none
  void AdoptReceivedModel();
  // A round: CHOCO's publish, the updates out, and its mix with the outer step (MixRound): at
  // once, or for an outer round once RoundWaitOver.
  void Round(TimePoint now);
  void MixRound();
  void EmitRoundOutput();
  // Whether the pending outer round may mix: every mixing peer within a quarter round (H / 4
  // steps) of the round's step that is not a marked straggler (nor finished) reached it, or
  // round_wait_until_ passed. The wait marks nobody: a peer that falls S behind is marked by the
  // soft-sync gate as always.
  bool RoundWaitOver(TimePoint now) const;
  // Every mixing peer that a round waits for has its update of the round in: not a marked
  // straggler, not finished, and within H / 4 (plus round_overlap_) steps of the round's step.
  bool RoundPeersIn(TimePoint now) const;
  // Whether the pending round mixes now: the budget is spent, or RoundWaitOver (no overlap), or
  // (OuterOptions::overlap) its peers are in or round_overlap_ steps passed since the round.
  bool MixDue(TimePoint now);
  // Logs `status` and ends the run with it.
  void Fail(const Status& status);  // Between rounds, every S / 2 steps: the step clock alone (NoPayload) to the trackers, whose
  // soft-sync gates wait for it. A node learns its neighbours' clocks from their messages; with
  // H (or consensus control's stretch) above S they would otherwise wait for the membership
  // view's clocks, a probe period old, and spend most of their time waiting.
  void AnnounceClock();
  void OnSnapshotReply(const Incoming& m, const SnapshotReply& r);
  void ServeModel(NodeId to);
  void Reject(std::string_view reason, NodeId from, const std::string& why);
  // Why `m` must not change state (kRejectUnknownSender, kRejectUnconfirmedIncarnation,
  // kRejectIncarnation, kRejectClock, kRejectConsensus); empty when it may.
  std::string_view Check(const Incoming& m) const;
  // A message that may still pass once the view catches up: its sender not in the view yet (a
  // member that just joined), or at a life the view has not confirmed yet (a restart).
  static bool MayPassLater(std::string_view why) {
    return why == kRejectUnknownSender || why == kRejectUnconfirmedIncarnation;
  }
  // The cluster's sample estimate and the clock to catch up to from the view's claims (claims.h):
  // `claims` is this node's samples, then each other member's in members_ order; `clocks` this
  // node's step and the live members'. Counts each member whose claim is set aside, once per life.
  void BoundClaims(const std::vector<uint64_t>& claims, const std::vector<uint64_t>& clocks);
  // The sender's incarnation in the latest view (0 when it is not there).
  Incarnation ViewIncarnation(NodeId id) const;
  // Dead or left in the latest view at `incarnation` or later.
  bool KnownGone(NodeId id, Incarnation incarnation) const;
  void Emit(NodeAction action);
  std::vector<NodeId> MixingPeers(const std::vector<NodeId>& view) const;
  // The mean of consensus_average and the mixing peers' latest estimates (consensus control).
  double ConsensusEstimate() const;
  int CurrentH() const;
  // The outer optimizer runs from this step on (GossipNodeOptions::outer and its start epoch).
  bool OuterActive() const;
  // H of the outer rounds: OuterOptions::every, or fewer steps for a short run
  // (OuterOptions::rounds), resolved at the first step from the budget and the first batch.
  int OuterH() const;
  void ResolveOuterH(int64_t batch);
  // After the round's mix of `mixed` (x_, or the model at the round under overlap): the outer step
  // (the first active round starts the anchor instead).
  Status OuterRound(std::span<float> mixed);
  // local_steps 0: whether the small-cluster schedule (H 2, twice the kept fraction) applies now.
  bool SparseSchedule() const;
  // The model on the host: x_ itself on the CPU, else a copy in host_model_.
  std::span<const float> HostModel();
  // x_ = `host`, copied up on a GPU.
  void SetModel(std::span<const float> host);

  const GossipNodeOptions o_;
  std::span<float> x_;
  std::vector<float> host_model_;      // HostModel's copy on a GPU
  std::span<const float> final_model_;  // the model the finish started with, on the host
  std::vector<float> initial_;
  bool from_initial_;
  SoftSync sync_;
  std::unique_ptr<ChocoGossip> choco_;
  std::optional<OuterOptimizer> outer_;  // from the first outer round on
  // An outer round published and not mixed yet (RoundWaitOver).
  bool mix_pending_ = false;
  // Per neighbour, the highest step clock of a message that changed its public copy here (an
  // update or a snapshot of it): its copy holds its rounds up to that clock. Members of the
  // view only (pruned at each round).
  std::map<NodeId, uint64_t> copy_clock_;
  // Under overlap: the inner steps the pending round may overlap (min(overlap, H − 1); 0 waits),
  // and the model at the round, which the mix and the outer step work on (device memory).
  int round_overlap_ = 0;
  kernels::Buffer<float> round_model_;
  ChocoRoundStats round_stats_;
  std::vector<NodeId> round_view_;
  uint64_t round_clock_ = 0;
  TimePoint round_wait_until_{};
  std::unique_ptr<ConsensusFinish> finish_;  // from the start of training, unless finish_wait is 0
  GossipNodeObserver* observer_ = nullptr;
  GossipNodeState s_;
  // Invariant: the phase only moves forward (joining, awaiting a model, training, finishing,
  // lingering, over); EnterPhase CHECKs it.
  void EnterPhase(Phase next) {
    MURMUR_CHECK(next >= phase_) << "phase " << static_cast<int>(phase_) << " -> "
                                 << static_cast<int>(next);
    phase_ = next;
  }
  Phase phase_ = Phase::kJoining;
  TimePoint start_{};
  TimePoint join_deadline_{};
  int join_attempt_ = 0;
  bool stop_requested_ = false;
  InjectedPause pause_;
  bool paused_ = false;
  bool computing_ = false;
  bool evaluating_ = false;
  int64_t next_evaluation_ = 0;  // kEvalPerRun: the local step of the next evaluation
  bool peer_finished_ = false;   // a quorum of members finished
  size_t finished_members_ = 0;  // other members that say they finished
  // Their ids: they compute no more steps, so soft sync does not wait for them (their public
  // copies still mix).
  std::vector<NodeId> finished_ids_;
  bool evaluate_now_ = false;    // a member finished: check the target with an evaluation
  int64_t max_batch_ = 0;        // the largest mini-batch this node computed
  int outer_every_ = 0;          // OuterH once resolved
  int64_t steps_since_round_ = 0;
  uint64_t clock_sent_ = 0;          // the step of the latest round or clock announcement
  int64_t own_samples_at_view_ = 0;  // s_.samples when the latest view came
  // Messages that may pass once the view catches up (MayPassLater), at most kMaxDeferred.
  struct Deferred {
    Incoming message;  // frame empty; the bytes are below
    std::vector<std::byte> bytes;
    TimePoint expires;
  };
  static constexpr size_t kMaxDeferred = 64;
  static constexpr size_t kMaxRefusedModels = 64;
  std::deque<Deferred> deferred_;
  size_t deferred_bytes_ = 0;  // their frames' bytes
  // (member, incarnation, samples or clock) whose claims were set aside and counted.
  static constexpr size_t kMaxRefusedClaims = 4096;
  std::set<std::tuple<NodeId, Incarnation, bool>> refused_claims_;
  // What each member's sample claim is believed to be (BoundClaims), per member of the view.
  struct Believed {
    Incarnation incarnation = 0;
    uint64_t claim = 0;    // the latest claim
    uint64_t samples = 0;  // what is believed of it
  };
  std::map<NodeId, Believed> believed_;
  std::vector<MemberEntry> members_;
  std::vector<NodeId> view_;      // live ids, sorted, with this node
  uint64_t best_clock_ = 0;
  std::vector<NodeId> step_view_;  // the view the current step's round mixes over
  std::vector<NodeId> step_mixing_;
  // The consensus estimates peers sent with their latest applied updates (one per sender of a
  // tracked stream, dropped when it leaves the view at a round; the exponential graph's mixing
  // peer changes every round, so its estimate is kept from its own round).
  std::map<NodeId, float> peer_consensus_;
  static constexpr double kMaxConsensus = 100;  // a larger estimate is refused
  NodeId awaiting_model_from_ = 0;
  TimePoint model_asked_at_{};
  bool model_refused_ = false;          // awaiting_model_from_ refused: ask the next at once
  std::vector<NodeId> refused_models_;  // members that refused, skipped until a model arrives
  std::optional<std::vector<float>> received_model_;
  std::optional<ResumePoint> resume_;
  TokenBucket models_served_{o_.model_snapshots_per_s, o_.model_snapshot_burst};
  uint64_t received_model_clock_ = 0;
  TimePoint linger_until_{};
  uint64_t rejections_logged_ = 0;
  ActionQueue output_;
};

// A phase by name, as the node's report lines carry it: "joining", "awaiting_model", "training",
// "finishing", "lingering", "over"; and back (kInvalidArgument for another word).
const char* PhaseName(GossipNode::Phase phase);
StatusOr<GossipNode::Phase> ParsePhase(std::string_view name);
// Whether a node in `phase` has not trained yet (it waits for members or for a model).
inline bool BeforeTraining(GossipNode::Phase phase) {
  return phase == GossipNode::Phase::kJoining || phase == GossipNode::Phase::kAwaitingModel;
}

}  // namespace murmur::gossip
