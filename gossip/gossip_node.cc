#include "gossip/gossip_node.h"

#include <algorithm>

#include "base/check.h"
#include "base/log.h"
#include "gossip/membership.h"

namespace murmur::gossip {

StatusOr<std::unique_ptr<GossipNode>> GossipNode::Create(const GossipNodeOptions& options,
                                                         std::span<float> model,
                                                         std::vector<float> initial,
                                                         bool from_initial, TimePoint now) {
  MURMUR_RETURN_IF_ERROR(options.Validate());
  if (model.empty() || initial.size() != model.size()) {
    return InvalidArgumentError("the model and the initial model must have the same, non-zero size");
  }
  return std::unique_ptr<GossipNode>(
      new GossipNode(options, model, std::move(initial), from_initial, now));
}

// Deferred messages: at most 64, and two dense models' bytes.
GossipNode::GossipNode(const GossipNodeOptions& options, std::span<float> model,
                       std::vector<float> initial, bool from_initial, TimePoint now)
    : o_(options),
      x_(model),
      host_(model, options.choco.device),
      initial_(std::move(initial)),
      from_initial_(from_initial),
      sync_(options.soft_sync),
      period_(o_),
      mixer_(options.outer, options.choco.device),
      admission_(options.self, options.max_clock_lead),
      claims_(options.self),
      budget_(options.budget_samples, options.target_accuracy, options.time_limit,
              options.lr_schedule),
      fetch_(options.self, static_cast<uint32_t>(model.size())),
      server_(options.model_snapshots_per_s, options.model_snapshot_burst),
      deferred_(64, 2 * model.size_bytes()),
      evaluations_(options.eval_every, options.budget_samples),
      finish_(options.self, static_cast<uint32_t>(model.size()), options.finish_wait),
      phase_(Joining{Joiner(o_, now)}),
      start_(now) {}

Status GossipNode::Resume(ResumePoint point) {
  MURMUR_CHECK(phase() == Phase::kJoining && !choco_) << "Resume after the node started";
  if (!point.public_copy.empty() && point.public_copy.size() != x_.size()) {
    return InvalidArgumentError("the saved public copy has " + std::to_string(point.public_copy.size()) +
                                " values, the model " + std::to_string(x_.size()));
  }
  s_.Resumed(point.step, point.local_steps, point.samples, o_.shard_rows);
  from_initial_ = false;
  resume_ = std::move(point);
  return OkStatus();
}

// ---- Messages ----

void GossipNode::Reject(std::string_view reason, NodeId from, const std::string& why) {
  ++s_.rejected_messages;
  if (observer_ != nullptr) observer_->Rejected(reason);
  if (rejections_logged_++ % 1000 == 0) {
    MURMUR_LOG_WARN("node {}: message from {} rejected ({}, {} so far): {}", o_.self, from, reason,
                    s_.rejected_messages, why);
  }
}

std::string_view GossipNode::Check(const Incoming& m) const {
  return admission_.Check(m, std::max({s_.step, claims_.best_clock(), sync_.ClockOf(m.from)}));
}

void GossipNode::Step(const Incoming& m, TimePoint now) {
  if (const std::string_view why = Check(m); !why.empty()) {
    if (Defer(m, why, now)) return;
    return Reject(why, m.from, "clock " + std::to_string(m.step_clock) + ", incarnation " +
                                   std::to_string(m.incarnation));
  }
  if (const auto* r = std::get_if<SnapshotRequest>(&m.payload); r != nullptr && r->model) {
    return OnModelRequest(m, now);
  }
  if (std::holds_alternative<NoPayload>(m.payload)) {
    sync_.Observe(m.from, m.step_clock);  // a clock announcement (AnnounceClock)
  } else if (const auto* f = std::get_if<FinishMessage>(&m.payload)) {
    OnFinishMessage(m, *f, now);
  } else if (const auto* r = std::get_if<SnapshotReply>(&m.payload); r != nullptr && r->model) {
    OnSnapshotReply(m, *r);
  } else if (std::holds_alternative<CodedMessage>(m.payload)) {
    Reject(kRejectWrongMode, m.from,
           "a CodedReduce message in gossip mode: is every node started with the same --mode?");
    return;
  } else if (choco_) {
    if (!OnChocoMessage(m, now)) return;
  } else {
    return;  // still joining: the streams start afterwards
  }
  Advance(now);
}

// A member that just joined (or restarted) may send before this node's view has it. A member
// this node holds dead or gone is refused at once.
bool GossipNode::Defer(const Incoming& m, std::string_view why, TimePoint now) {
  if (!Admission::MayPassLater(why) || m.from == o_.self ||
      admission_.KnownGone(m.from, m.incarnation)) {
    return false;
  }
  return deferred_.Hold(m, now + o_.snapshot_timeout);
}

void GossipNode::Redeliver(TimePoint now) {
  for (DeferredMessages::Held& d : deferred_.TakeAll()) {
    const std::string_view why = Check(d.message);
    if (!Admission::MayPassLater(why)) {
      Step(d.message, now);
    } else if (now < d.expires && !admission_.KnownGone(d.message.from, d.message.incarnation)) {
      deferred_.Keep(std::move(d));
    } else {
      Reject(why, d.message.from, admission_.Unconfirmed(d.message, why));
    }
  }
}

// A CHOCO message to the gossip machine: its verdict counted and observed, its replies sent, a
// refusal counted by reason. False when it was refused.
bool GossipNode::OnChocoMessage(const Incoming& m, TimePoint now) {
  const auto result = choco_->Step({m.from, m.incarnation, m.payload, m.frame}, now);
  ++s_.verdicts[ChocoVerdictName(result.verdict)];
  const bool applied = result.verdict == ChocoVerdict::kApplied;
  const auto* u = std::get_if<UpdateHeader>(&m.payload);
  if (u != nullptr && applied && u->consensus >= 0) period_.PeerEstimate(m.from, u->consensus);
  if (applied) rounds_.CopyApplied(m.from, m.step_clock);
  if (observer_ != nullptr) {
    if (applied && u != nullptr) {
      observer_->Staleness(static_cast<double>(s_.step) - static_cast<double>(m.step_clock));
    } else if (result.verdict == ChocoVerdict::kAwaitingSnapshot ||
               result.verdict == ChocoVerdict::kStaleIncarnation) {
      observer_->LateDropped();
    }
  }
  for (ChocoOutgoing& out : choco_->TakeOutput()) {
    Emit(SendTo{out.to, std::move(out.payload), std::move(out.frame)});
  }
  if (const std::string_view refused = ChocoRefusal(result); !refused.empty()) {
    Reject(refused, m.from, result.status.ToString());
    return false;
  }
  sync_.Observe(m.from, m.step_clock);
  return true;
}

void GossipNode::OnModelRequest(const Incoming& m, TimePoint now) {
  sync_.Observe(m.from, m.step_clock);
  ModelServer::Answer a = server_.Serve(m.from, s_.step, [this] { return HostModel(); }, now);
  Emit(std::move(a.send));
  if (a.refused) {
    Reject(a.reason, m.from,
           a.reason == kRejectSnapshotRate
               ? "model snapshots beyond the rate"
               : "this node's own model holds a non-finite value: not served");
  }
}

void GossipNode::OnSnapshotReply(const Incoming& m, const SnapshotReply& r) {
  const ModelFetch::ReplyResult result = fetch_.OnReply(m.from, r, m.frame, m.step_clock);
  if (result.verdict == ModelFetch::Reply::kMalformed) {
    Reject(DecodeRefusal(result.failure), m.from, "model snapshot: " + result.status.ToString());
  } else if (result.verdict == ModelFetch::Reply::kReceived) {
    sync_.Observe(m.from, m.step_clock);
  }
}

// ---- The view ----

void GossipNode::Step(const MemberView& view, TimePoint now) {
  admission_.View(view);
  const std::vector<NodeId>& live = admission_.live();
  for (NodeId gone : sync_.View(view.members, o_.self)) {
    if (choco_) choco_->Forget(gone);
  }
  claims_.Update(view.members,
                 OwnClaims{s_.step, s_.samples, max_batch_, o_.CatchUpGap(live.size())},
                 [this](NodeId id) { return sync_.ClockOf(id); });
  for (Refusal& r : claims_.TakeRefusals()) Reject(r.reason, r.from, r.why);
  s_.live_members = claims_.live_members();
  s_.cluster_samples = claims_.cluster_samples();
  if (claims_.more_finished() && o_.target_accuracy > 0) evaluate_now_ = true;
  if (finish_.on()) {
    finish_.View(live, now);
    EmitFinishOutput();  // a relayed result (consensus_finish.h), in any phase
  }
  Redeliver(now);
  Advance(now);
}

// ---- The step loop ----

void GossipNode::Step(const StepComputed& done, TimePoint now) {
  if (!computing_) return;  // not asked for: nothing to account
  computing_ = false;
  if (!done.ok) {
    MURMUR_LOG_WARN("node {}: step {} skipped: the loss was not finite", o_.self, s_.step + 1);
  }
  s_.Account(done, o_.shard_rows);
  if (rounds_.pending()) ++s_.overlapped_steps;
  max_batch_ = std::max(max_batch_, done.samples);
  if (o_.outer.has_value() && !period_.outer_resolved()) {
    period_.ResolveOuterH(done.samples, admission_.live().size());
  }
  s_.consensus_estimate = period_.Estimate(s_.consensus_average, step_mixing_);
  s_.gossip_period = period_.H(Period());
  // Announced before the round: the round's messages carry this step's clock, which is what a
  // neighbour's gate waits for (announced after, lock-step waited a round or a view refresh).
  Emit(Announce{s_.step, static_cast<uint64_t>(s_.samples), false});
  const std::optional<int> outer_h =
      OuterActive() ? std::optional<int>(period_.OuterH()) : std::nullopt;
  if (rounds_.Due(s_.step, outer_h, s_.gossip_period)) {
    Round(now);
    if (phase() == Phase::kOver) return;
    rounds_.ClockSent(s_.step);
  } else {
    AnnounceClock();
  }
  uint64_t lag = 0;
  for (NodeId id : step_mixing_) lag = std::max(lag, sync_.Lag(s_.step, id));
  s_.max_lag = lag;
  if (evaluations_.Due(s_.local_steps, s_.samples, admission_.live().size())) {
    evaluating_ = true;
    Emit(Evaluate{false, x_});
    return;
  }
  Advance(now);
}

void GossipNode::Step(const StopRequested& stop, TimePoint now) {
  (stop.finish ? program_ended_ : stop_requested_) = true;
  Advance(now);
}

void GossipNode::Step(const InjectedPause& pause, TimePoint now) {
  pause_ = pause;
  Advance(now);
}

void GossipNode::Tick(TimePoint now) { Advance(now); }

void GossipNode::Advance(TimePoint now) {
  switch (phase()) {
    case Phase::kJoining:
      return AdvanceJoin(std::get<Joining>(phase_).joiner, now);
    case Phase::kAwaitingModel:
      return AdvanceJoin(std::get<AwaitingModel>(phase_).joiner, now);
    case Phase::kTraining:
      return AdvanceTraining(now);
    case Phase::kFinishing:
      return AdvanceFinishing(now);
    case Phase::kLingering:
      if (!evaluating_ && LingerIsOver(now, std::get<Lingering>(phase_).until,
                                       finish_.Settled(), output_)) {
        EnterPhase(Over{});
      }
      return;
    case Phase::kOver:
      return;
  }
}

void GossipNode::StartTraining(TimePoint now) {
  const ChocoOptions c = o_.ChocoFor(static_cast<uint32_t>(x_.size()));
  const bool saved_copy = resume_.has_value() && !resume_->public_copy.empty();
  auto choco = ChocoGossip::Create(
      c, saved_copy ? std::span<const float>(resume_->public_copy) : HostModel(), initial_,
      from_initial_);
  if (resume_.has_value()) resume_->public_copy = {};  // ChocoGossip holds its own copy
  std::vector<float>().swap(initial_);                 // ... and of the initial model
  if (!choco.ok()) {
    EnterPhase(Over{});
    Emit(RunOver{choco.status()});
    return;
  }
  choco_ = *std::move(choco);
  finish_.Ensure(LiveOrSelf(), now);
  s_.gamma = choco_->gamma();
  EnterPhase(Training{});
  Emit(Announce{s_.step, static_cast<uint64_t>(s_.samples), false});
  AdvanceTraining(now);
}

void GossipNode::AdvanceTraining(TimePoint now) {
  if (computing_ || evaluating_) return;
  if (!MixPendingRound(now)) return;
  if (phase() == Phase::kOver) return;
  if (BudgetSpent(now)) return Finish(now);
  if (evaluate_now_ && !claims_.quorum_finished()) {
    evaluate_now_ = false;
    evaluating_ = true;
    Emit(Evaluate{false, x_});
    return;
  }
  // The pause waits for a peer to advance: with no live peer left none would, so it ends.
  paused_ = pause_.Holds(s_.step, claims_.best_clock()) && LiveOrSelf().size() > 1;
  if (paused_) {
    Emit(Wait{now + std::chrono::milliseconds(10)});
    return;
  }
  const std::vector<NodeId> view = LiveOrSelf();
  const std::vector<NodeId> mixing = choco_->MixingPeers(view, s_.rounds);
  const uint64_t clock_before = s_.step;
  const bool catch_up = sync_.ShouldCatchUp(s_.step, claims_.best_clock(),
                                            HopsAcross(o_.choco.sampling, view.size()));
  // An overlapped round mixes before anything replaces the model.
  if (rounds_.pending() && (catch_up || fetch_.has_model())) {
    MixRound();
    if (phase() == Phase::kOver) return;
  }
  if (catch_up) CatchUp(view, mixing, now);
  if (fetch_.has_model()) {
    AdoptReceivedModel();
    ++s_.catchups;
  }
  // A clock raised without a step (caught up, a model adopted) is said at once, before the gate:
  // else a neighbour's gate holding the old clock and this node's would wait for each other.
  if (s_.step > clock_before) {
    Emit(Announce{s_.step, static_cast<uint64_t>(s_.samples), false});
    AnnounceClock();
  }
  if (!GateOpen(mixing, now)) return;
  step_view_ = view;
  step_mixing_ = mixing;
  computing_ = true;
  std::optional<double> lr;
  if (o_.lr_schedule.has_value()) {
    lr = o_.lr_schedule->At(claims_.ScheduleSamples(s_.samples));
    s_.lr = *lr;
  }
  Emit(ComputeStep{s_.step + 1, lr});
}

// A run that ends (budget, stop, a finished quorum) mixes what it has. Under overlap a round not
// due yet lets the node step on.
bool GossipNode::MixPendingRound(TimePoint now) {
  if (!rounds_.pending()) return true;
  const bool due =
      BudgetSpent(now) || rounds_.MixDue(s_.step, choco_->MixingPeers(rounds_.view(), s_.rounds),
                                         period_.OuterH(), sync_, claims_, now);
  if (!due && rounds_.overlap() == 0) {
    Emit(Wait{std::min(now + std::chrono::milliseconds(1), rounds_.wait_until())});
    return false;
  }
  if (due) MixRound();
  return true;
}

bool GossipNode::GateOpen(const std::vector<NodeId>& mixing, TimePoint now) {
  // A member that finished steps no more: waiting for it would only run out max_wait.
  const auto gate = sync_.Gate(s_.step, claims_.Unfinished(mixing), now);
  for (NodeId id : gate.newly_marked) {
    MURMUR_LOG_INFO("node {}: {}", o_.self, sync_.MarkedReason(id, s_.step));
  }
  if (!gate.proceed) Emit(Wait{now + std::chrono::milliseconds(1)});
  return gate.proceed;
}

PeriodContext GossipNode::Period() const {
  return {s_.local_epoch, s_.rounds, s_.consensus_estimate, RoundView().size()};
}

// ---- Joining ----

void GossipNode::AdvanceJoin(Joiner& joiner, TimePoint now) {
  const JoinReading reading{s_.live_members, claims_.best_clock(), s_.step, resume_.has_value(),
                            stop_requested_ || program_ended_ || claims_.quorum_finished()};
  const Joiner::Decision d = joiner.Advance(reading, fetch_, admission_.members(),
                                            [this](NodeId id) { return sync_.ClockOf(id); }, now);
  switch (d.what) {
    case Joiner::Do::kWait:
      Emit(Wait{d.until});
      return;
    case Joiner::Do::kAsk:
      Emit(SendTo{d.to, SnapshotRequest{0, true}, nullptr});
      if (d.drop_resume) {
        resume_.reset();
        s_.resumed_step = 0;
      }
      if (phase() == Phase::kJoining) EnterPhase(AwaitingModel{joiner});
      ++s_.join_requests;
      Emit(Wait{d.until});
      return;
    case Joiner::Do::kStart:
      if (d.adopt) {
        AdoptReceivedModel();
        s_.joined_by_snapshot = true;
        from_initial_ = false;
        MURMUR_LOG_INFO("node {}: joined a running cluster at step {} with a peer's model",
                        o_.self, s_.step);
      }
      return StartTraining(now);
  }
}

void GossipNode::AdoptReceivedModel() {
  const ModelFetch::Model model = fetch_.Take();
  SetModel(model.values);
  mixer_.Restart(x_);
  Emit(ResetOptimizer{});
  s_.step = std::max(s_.step, model.clock);
}

// ---- Catching up ----

void GossipNode::CatchUp(const std::vector<NodeId>& view, const std::vector<NodeId>& mixing,
                         TimePoint now) {
  uint64_t clock = 0;
  for (NodeId id : mixing) clock = std::max(clock, sync_.ClockOf(id));
  // NeighbourAverage leaves x_ untouched when it has nothing to average.
  const bool averaged = clock > s_.step && choco_->NeighbourAverage(view, x_);
  if (averaged) {
    mixer_.Restart(x_);
    Emit(ResetOptimizer{});
    MURMUR_LOG_DEBUG("node {}: caught up from step {} to {} with the neighbours' average", o_.self,
                     s_.step, clock);
    s_.step = clock;
    ++s_.catchups;
  }
  // The average moves the clock at once; a dense model only when the copies fall short.
  const bool ask = WantsDenseModel(averaged, OuterActive(), s_.step, claims_.best_clock(),
                                   o_.soft_sync.max_lead);
  if (!ask || fetch_.Waiting(now, o_.model_retry)) return;
  const std::optional<NodeId> to = fetch_.Ask(
      admission_.members(), [this](NodeId id) { return sync_.ClockOf(id); }, now);
  if (!to.has_value()) return;
  Emit(SendTo{*to, SnapshotRequest{0, true}, nullptr});
  ++s_.model_requests;
}

void GossipNode::AnnounceClock() {
  if (!rounds_.ClockDue(s_.step, o_.soft_sync.max_lead)) return;
  for (NodeId to : choco_->Trackers(RoundView(), s_.rounds)) Emit(SendTo{to, NoPayload{}, nullptr});
}

// ---- Rounds ----

void GossipNode::Round(TimePoint now) {
  const std::vector<NodeId>& view = RoundView();
  if (o_.local_steps == 0) {
    choco_->SetDensityFactor(period_.SparseSchedule(s_.local_epoch, view.size()) ? 2 : 1);
    s_.density_factor = choco_->density_factor();
  }
  auto stats = choco_->Publish(x_, view, s_.rounds);
  if (!stats.ok()) return Fail(stats.status());
  if (observer_ != nullptr) observer_->RoundPublished();
  rounds_.Begin(s_.step, view, *stats);
  // An outer round goes out at once and mixes once its mixing peers have sent theirs of the same
  // round (RoundScheduler); a CHOCO round mixes at once, and its updates then carry this round's
  // consensus estimate.
  if (mixer_.outer_started() && OuterActive() && o_.soft_sync.max_lead >= 0) {
    if (PendOuterRound(now)) EmitRoundOutput();
    return;
  }
  MixRound();
  if (phase() == Phase::kOver) return;
  EmitRoundOutput();
}

// Under overlap the node steps on meanwhile, from the model at the round kept aside.
bool GossipNode::PendOuterRound(TimePoint now) {
  const int overlap = std::min(o_.outer->overlap, period_.OuterH() - 1);
  if (Status kept = overlap > 0 ? mixer_.KeepAside(x_) : OkStatus(); !kept.ok()) {
    Fail(kept);
    return false;
  }
  rounds_.PendOuter(period_.OuterH(), sync_.step_seconds(), sync_.EffectiveWait(), overlap, now);
  return true;
}

void GossipNode::EmitRoundOutput() {
  for (ChocoOutgoing& out : choco_->TakeOutput()) {
    if (auto* u = std::get_if<UpdateHeader>(&out.payload)) {
      u->consensus = static_cast<float>(std::min(s_.consensus_average, kMaxConsensus));
    }
    Emit(SendTo{out.to, std::move(out.payload), std::move(out.frame)});
  }
}

void GossipNode::MixRound() {
  const uint64_t clock = rounds_.clock();
  const bool carried = rounds_.overlap() > 0 && s_.step > clock;
  ChocoRoundStats stats = rounds_.stats();
  const auto outer = mixer_.Mix(
      *choco_, x_, carried, rounds_.view(), s_.rounds,
      [&](NodeId id) { return sync_.Damping(clock, id); }, stats, OuterActive());
  rounds_.Mixed();
  if (!outer.ok()) return Fail(outer.status());
  if (outer->has_value()) {
    ++s_.outer_rounds;
    s_.outer_delta = (*outer)->relative;
  }
  ++s_.rounds;
  s_.consensus_distance = stats.consensus_distance;
  s_.consensus_average = period_.Mixed(stats.consensus_distance);
  period_.Prune(rounds_.view());
  rounds_.Prune(rounds_.view());
  if (observer_ != nullptr) {
    observer_->Round(static_cast<double>(stats.sent_values) / static_cast<double>(x_.size()),
                     stats.residual_norm, stats.consensus_distance);
  }
  s_.gamma = choco_->gamma();
  s_.gamma_halvings = choco_->gamma_halvings();
  s_.clipped_terms = choco_->clipped_terms();
  if (stats.far_clipped > 0 || s_.far_clipped.size() != choco_->far_clipped().size()) {
    s_.far_clipped.clear();
    for (const auto& [id, n] : choco_->far_clipped()) s_.far_clipped[std::to_string(id)] = n;
  }
  if (observer_ != nullptr && stats.clipped > 0) observer_->Clipped(stats.clipped);
}

void GossipNode::Fail(const Status& status) {
  MURMUR_LOG_ERROR("node {}: {}", o_.self, status.ToString());
  EnterPhase(Over{});
  Emit(RunOver{status});
}

// ---- The end ----

void GossipNode::Step(const Evaluated& result, TimePoint now) {
  if (!evaluating_) return;
  evaluating_ = false;
  s_.Evaluated(result.accuracy, phase() == Phase::kFinishing);
  if (auto* lingering = std::get_if<Lingering>(&phase_)) {
    lingering->until = std::max(lingering->until, now + o_.linger);
  }
  Advance(now);
}

bool GossipNode::BudgetSpent(TimePoint now) {
  const std::string_view why =
      budget_.Spent({claims_.BudgetSamples(s_.samples, static_cast<uint64_t>(s_.local_steps),
                                           [this](NodeId id) { return sync_.ClockOf(id); }),
                     claims_.ScheduleSamples(s_.samples), s_.accuracy, now - start_,
                     claims_.quorum_finished(), stop_requested_, program_ended_});
  if (why.empty()) return false;
  s_.end_reason = why;
  return true;
}

MemoryUse GossipNode::Memory() const {
  MemoryUse m;
  m.Add("model", x_.size_bytes());
  m.Add("initial_model", CapacityBytes(initial_));
  if (choco_) choco_->AddMemory(m);
  mixer_.AddMemory(m);
  m.Add("host_mirror", host_.HeldBytes());
  m.Add("deferred", deferred_.bytes());
  m.Add("model_fetch", fetch_.HeldBytes());
  m.Add("finish", finish_.HeldBytes());
  return m;
}

std::string GossipNode::Activity() const {
  return PhaseActivity(phase(), s_.live_members, o_.expect_members, fetch_.awaited());
}

}  // namespace murmur::gossip
