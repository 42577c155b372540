#include "gossip/gossip_node.h"

#include <algorithm>
#include <cmath>
#include <deque>

#include "base/check.h"
#include "base/log.h"
#include "coding/update_codec.h"
#include "coding/vector_ops.h"
#include "gossip/membership.h"
#include "kernels/gossip_ops.h"
#include "kernels/memory.h"

namespace murmur::gossip {

coding::CompressorOptions AutoCompressor(bool outer) {
  auto spec = coding::ParseCompressorSpec(outer ? "int8" : "topk:0.01,values=fp16");
  MURMUR_CHECK(spec.ok());
  return *spec;
}

ChocoOptions DefaultNodeChoco() {
  ChocoOptions o;
  o.compressor = AutoCompressor(/*outer=*/true);
  return o;
}

Status GossipNodeOptions::Validate() const {
  if (consensus_target < 0 || consensus_slack < 1) {
    return InvalidArgumentError("consensus_target must be >= 0 and consensus_slack >= 1");
  }
  if (local_steps < 0 || post_local_steps < 1) {
    return InvalidArgumentError(
        "local_steps must be at least 0 (0: the small-cluster schedule) and post_local_steps at "
        "least 1");
  }
  if (join_attempts < 1) return InvalidArgumentError("join_attempts must be at least 1");
  if (shard_rows < 1) return InvalidArgumentError("shard_rows must be at least 1");
  if (finish_wait.count() < 0) return InvalidArgumentError("finish_wait must not be negative");
  if (outer.has_value()) MURMUR_RETURN_IF_ERROR(outer->Validate());
  return OkStatus();
}

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

GossipNode::GossipNode(const GossipNodeOptions& options, std::span<float> model,
                       std::vector<float> initial, bool from_initial, TimePoint now)
    : o_(options),
      x_(model),
      initial_(std::move(initial)),
      from_initial_(from_initial),
      sync_(options.soft_sync),
      start_(now),
      join_deadline_(now + (options.expect_members > 0 ? options.expect_wait : options.join_wait)) {}

Status GossipNode::Resume(ResumePoint point) {
  MURMUR_CHECK(phase_ == Phase::kJoining && !choco_) << "Resume after the node started";
  if (!point.public_copy.empty() && point.public_copy.size() != x_.size()) {
    return InvalidArgumentError("the saved public copy has " + std::to_string(point.public_copy.size()) +
                                " values, the model " + std::to_string(x_.size()));
  }
  s_.step = point.step;
  s_.resumed_step = point.step;
  s_.local_steps = point.local_steps;
  s_.samples = point.samples;
  s_.local_epoch = static_cast<double>(s_.samples) / static_cast<double>(o_.shard_rows);
  from_initial_ = false;
  resume_ = std::move(point);
  return OkStatus();
}

std::vector<NodeAction> GossipNode::TakeOutput() { return output_.Take(); }

void GossipNode::Emit(NodeAction action) { output_.Emit(std::move(action)); }

void GossipNode::Reject(std::string_view reason, NodeId from, const std::string& why) {
  ++s_.rejected_messages;
  if (observer_ != nullptr) observer_->Rejected(reason);
  if (rejections_logged_++ % 1000 == 0) {
    MURMUR_LOG_WARN("node {}: message from {} rejected ({}, {} so far): {}", o_.self, from, reason,
                    s_.rejected_messages, why);
  }
}

std::string_view GossipNode::Check(const Incoming& m) const {
  if (!std::binary_search(view_.begin(), view_.end(), m.from) || m.from == o_.self) {
    return kRejectUnknownSender;
  }
  if (m.incarnation >= kMaxIncarnation) return kRejectIncarnation;
  if (m.incarnation > ViewIncarnation(m.from)) return kRejectUnconfirmedIncarnation;
  if (const auto* u = std::get_if<UpdateHeader>(&m.payload);
      u != nullptr &&
      !(u->consensus == -1 || (u->consensus >= 0 && u->consensus <= kMaxConsensus))) {
    return kRejectConsensus;  // NaN fails both comparisons
  }
  const uint64_t known = std::max({s_.step, best_clock_, sync_.ClockOf(m.from)});
  const uint64_t ceiling = known == 0 ? kMaxStepClock : std::min(kMaxStepClock, known + o_.max_clock_lead);
  if (m.step_clock > ceiling) return kRejectClock;
  return {};
}

void GossipNode::Step(const Incoming& m, TimePoint now) {
  if (const std::string_view why = Check(m); !why.empty()) {
    if (Defer(m, why, now)) return;
    return Reject(why, m.from, "clock " + std::to_string(m.step_clock) + ", incarnation " +
                                   std::to_string(m.incarnation));
  }
  if (const auto* r = std::get_if<SnapshotRequest>(&m.payload); r != nullptr && r->model) {
    sync_.Observe(m.from, m.step_clock);
    if (!models_served_.Take(now)) {
      // Said to the requester (a frameless reply of dimension 0), so that it asks another member
      // instead of waiting out its snapshot timeout.
      Emit(SendTo{m.from, SnapshotReply{s_.step, 0, true}, nullptr});
      return Reject(kRejectSnapshotRate, m.from, "model snapshots beyond the rate");
    }
    ServeModel(m.from);
    return;
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

// A member that just joined (or restarted) may send before this node's view has it: its
// messages wait, a bounded few and briefly, for the view instead of being refused. A member this
// node holds dead or gone is refused at once. Held: at most kMaxDeferred messages and two dense
// models' bytes.
bool GossipNode::Defer(const Incoming& m, std::string_view why, TimePoint now) {
  if (!MayPassLater(why) || m.from == o_.self || KnownGone(m.from, m.incarnation) ||
      deferred_.size() >= kMaxDeferred ||
      deferred_bytes_ + m.frame.size() > 2 * x_.size() * sizeof(float)) {
    return false;
  }
  Deferred d{m, std::vector<std::byte>(m.frame.begin(), m.frame.end()), now + o_.snapshot_timeout};
  d.message.frame = {};
  deferred_bytes_ += d.bytes.size();
  deferred_.push_back(std::move(d));
  return true;
}

// A CHOCO message to the gossip machine: its verdict counted and observed, its replies sent, a
// refusal counted by reason. False when it was refused.
bool GossipNode::OnChocoMessage(const Incoming& m, TimePoint now) {
  const auto result = choco_->Step({m.from, m.incarnation, m.payload, m.frame}, now);
  ++s_.verdicts[ChocoVerdictName(result.verdict)];
  const bool update = std::holds_alternative<UpdateHeader>(m.payload);
  if (const auto* u = std::get_if<UpdateHeader>(&m.payload);
      u != nullptr && result.verdict == ChocoVerdict::kApplied && u->consensus >= 0) {
    peer_consensus_[m.from] = u->consensus;
  }
  if (result.verdict == ChocoVerdict::kApplied) {
    uint64_t& clock = copy_clock_[m.from];
    clock = std::max(clock, m.step_clock);
  }
  if (observer_ != nullptr) {
    if (result.verdict == ChocoVerdict::kApplied && update) {
      observer_->Staleness(static_cast<double>(s_.step) - static_cast<double>(m.step_clock));
    } else if (result.verdict == ChocoVerdict::kAwaitingSnapshot ||
               result.verdict == ChocoVerdict::kStaleIncarnation) {
      observer_->LateDropped();
    }
  }
  for (ChocoOutgoing& out : choco_->TakeOutput()) {
    Emit(SendTo{out.to, std::move(out.payload), std::move(out.frame)});
  }
  switch (result.verdict) {
    case ChocoVerdict::kOutlier:
      Reject(kRejectOutlier, m.from, result.status.ToString());
      return false;
    case ChocoVerdict::kNotTracked:
    case ChocoVerdict::kRateLimited:
      Reject(result.verdict == ChocoVerdict::kNotTracked ? kRejectUntracked : kRejectSnapshotRate,
             m.from, result.status.ToString());
      return false;
    case ChocoVerdict::kRejected:
      Reject(result.failure == coding::DecodeFailure::kNone
                 ? kRejectProtocol
                 : coding::DecodeFailureName(result.failure),
             m.from, result.status.ToString());
      return false;
    default:
      sync_.Observe(m.from, m.step_clock);
      return true;
  }
}

std::span<const float> GossipNode::HostModel() {
  if (o_.choco.device.is_cpu()) return x_;
  host_model_.resize(x_.size());
  MURMUR_CHECK_OK(kernels::CopyBytes(kernels::Device::Cpu(), host_model_.data(), o_.choco.device,
                                     x_.data(), x_.size_bytes()));
  return host_model_;
}

void GossipNode::SetModel(std::span<const float> host) {
  MURMUR_CHECK_EQ(host.size(), x_.size());
  MURMUR_CHECK_OK(kernels::CopyBytes(o_.choco.device, x_.data(), kernels::Device::Cpu(),
                                     host.data(), host.size_bytes()));
}

void GossipNode::ServeModel(NodeId to) {
  auto bytes = std::make_shared<std::vector<std::byte>>();
  coding::EncodeDense(HostModel(), *bytes);
  Emit(SendTo{to, SnapshotReply{s_.step, static_cast<uint32_t>(x_.size()), true}, std::move(bytes)});
}

void GossipNode::Step(const StepComputed& done, TimePoint now) {
  if (!computing_) return;  // not asked for: nothing to account
  computing_ = false;
  if (!done.ok) {
    ++s_.skipped_steps;
    MURMUR_LOG_WARN("node {}: step {} skipped: the loss was not finite", o_.self, s_.step + 1);
  } else {
    s_.loss = s_.have_loss ? 0.98 * s_.loss + 0.02 * done.loss : done.loss;
    s_.have_loss = true;
  }
  ++s_.step;
  ++s_.local_steps;
  if (mix_pending_) ++s_.overlapped_steps;
  s_.samples += done.samples;
  max_batch_ = std::max(max_batch_, done.samples);
  if (o_.outer.has_value() && outer_every_ == 0) ResolveOuterH(done.samples);
  s_.local_epoch = static_cast<double>(s_.samples) / static_cast<double>(o_.shard_rows);
  s_.consensus_estimate = ConsensusEstimate();
  s_.gossip_period = CurrentH();
  // Announced before the round: the round's messages carry this step's clock, which is what a
  // neighbour's gate waits for (announced after, lock-step waited a round or a view refresh).
  Emit(Announce{s_.step, static_cast<uint64_t>(s_.samples), false});
  // Outer rounds fall on the step clock's multiples of H, the same steps on every member (a
  // clock adopted on joining or catching up keeps them aligned): the members' updates of one
  // round are what GateRound waits for.
  const bool round_due = OuterActive() ? s_.step % static_cast<uint64_t>(OuterH()) == 0
                                       : ++steps_since_round_ >= s_.gossip_period;
  if (round_due) {
    MURMUR_CHECK(!mix_pending_) << "an overlapped round mixes within H - 1 steps";
    steps_since_round_ = 0;
    Round(now);
    if (phase_ == Phase::kOver) return;
    clock_sent_ = s_.step;
  } else {
    AnnounceClock();
  }
  uint64_t lag = 0;
  for (NodeId id : step_mixing_) lag = std::max(lag, sync_.Lag(s_.step, id));
  s_.max_lag = lag;
  if (EvaluationDue()) {
    evaluating_ = true;
    Emit(Evaluate{false, x_});
    return;
  }
  Advance(now);
}

void GossipNode::Step(const StopRequested&, TimePoint now) {
  stop_requested_ = true;
  Advance(now);
}

void GossipNode::Step(const InjectedPause& pause, TimePoint now) {
  pause_ = pause;
  Advance(now);
}

void GossipNode::Tick(TimePoint now) { Advance(now); }

void GossipNode::Advance(TimePoint now) {
  switch (phase_) {
    case Phase::kJoining:
    case Phase::kAwaitingModel:
      AdvanceJoin(now);
      return;
    case Phase::kTraining:
      AdvanceTraining(now);
      return;
    case Phase::kFinishing:
      AdvanceFinishing(now);
      return;
    case Phase::kLingering:
      if (!evaluating_ &&
          LingerIsOver(now, linger_until_, finish_ != nullptr && finish_->Settled(), output_)) {
        EnterPhase(Phase::kOver);
      }
      return;
    case Phase::kOver:
      return;
  }
}

void GossipNode::StartTraining(TimePoint now) {
  ChocoOptions c = o_.choco;
  c.self = o_.self;
  c.incarnation = o_.incarnation;
  c.dimension = static_cast<uint32_t>(x_.size());
  const bool saved_copy = resume_.has_value() && !resume_->public_copy.empty();
  auto choco = ChocoGossip::Create(
      c, saved_copy ? std::span<const float>(resume_->public_copy) : HostModel(), initial_,
      from_initial_);
  if (resume_.has_value()) resume_->public_copy = {};  // ChocoGossip holds its own copy
  if (!choco.ok()) {
    EnterPhase(Phase::kOver);
    Emit(RunOver{choco.status()});
    return;
  }
  choco_ = *std::move(choco);
  EnsureFinish(now);
  s_.gamma = choco_->gamma();
  EnterPhase(Phase::kTraining);
  Emit(Announce{s_.step, static_cast<uint64_t>(s_.samples), false});
  AdvanceTraining(now);
}

int64_t GossipNode::ReportedSamples() const {
  // The view holds this node's count as of its last refresh; a node whose steps are much shorter
  // than that period (a small model on the library) would otherwise overrun its budget many
  // times over.
  return s_.cluster_samples + (s_.samples - own_samples_at_view_);
}

int64_t GossipNode::ScheduleSamples() const {
  // The members' counts in the view are up to a digest period old (tens of steps); soft sync
  // keeps every live member within S steps of this one, so this node's own count times the live
  // members is the fresher estimate whenever it is the larger. A joiner (no samples of its own
  // yet) reads the reported counts. The budget keeps to the reported counts alone.
  return std::max(ReportedSamples(), s_.samples * static_cast<int64_t>(s_.live_members));
}

std::vector<NodeId> GossipNode::MixingPeers(const std::vector<NodeId>& view) const {
  std::vector<NodeId> out;
  for (const auto& n : choco_->Peers(view, s_.rounds).receive_from) out.push_back(n.id);
  return out;
}

double GossipNode::ConsensusEstimate() const {
  double sum = s_.consensus_average;
  int n = 1;
  for (NodeId id : step_mixing_) {
    if (auto it = peer_consensus_.find(id); it != peer_consensus_.end()) {
      sum += it->second;
      ++n;
    }
  }
  return sum / n;
}

int GossipNode::OuterH() const { return outer_every_ > 0 ? outer_every_ : o_.outer->every; }

void GossipNode::ResolveOuterH(int64_t batch) {
  // This node's share of the budget in steps, for the cluster it expects (every member is told
  // the same) or, without that, the one it sees at its first step.
  const int64_t members = o_.expect_members > 0
                              ? o_.expect_members
                              : static_cast<int64_t>(std::max<size_t>(1, view_.size()));
  const int64_t steps =
      o_.budget_samples > 0 && batch > 0 ? o_.budget_samples / (members * batch) : 0;
  outer_every_ = OuterEvery(*o_.outer, steps);
  if (outer_every_ != o_.outer->every) {
    MURMUR_LOG_INFO(
        "node {}: an outer round every {} steps, not {}: about {} steps of {} members "
        "at a batch of {} hold at least {} rounds (outer rounds=)",
        o_.self, outer_every_, o_.outer->every, steps, members, batch, o_.outer->rounds);
  }
}

bool GossipNode::OuterActive() const {
  return o_.outer.has_value() && s_.local_epoch >= o_.outer->start_epoch;
}

bool GossipNode::SparseSchedule() const {
  if (o_.local_steps != 0 || OuterActive()) return false;
  if (o_.post_local_epoch >= 0 && s_.local_epoch >= o_.post_local_epoch) return false;
  const std::vector<NodeId>& view = step_view_.empty() ? view_ : step_view_;
  return SparseScheduleFor(o_.choco.compressor, view.size());
}

int GossipNode::CurrentH() const {
  if (OuterActive()) return OuterH();
  const int h = o_.post_local_epoch >= 0 && s_.local_epoch >= o_.post_local_epoch
                    ? o_.post_local_steps
                : o_.local_steps == 0 ? (SparseSchedule() ? 2 : 1)
                                      : o_.local_steps;
  // Under the critical distance (consensus control): fewer rounds. The first rounds of a run (no
  // average yet) always gossip.
  const bool under =
      o_.consensus_target > 0 && s_.rounds >= 8 && s_.consensus_estimate < o_.consensus_target;
  if (!under) return h;
  // A round is also how the neighbours learn this node's clock: the stretch stays within the
  // lead soft sync allows (lock-step, S = 0, keeps every H-th step), or they would wait for the
  // clock the membership view brings once a probe period.
  const int64_t stretched = static_cast<int64_t>(h) * o_.consensus_slack;
  const int64_t lead = o_.soft_sync.max_lead;
  return static_cast<int>(lead < 0 ? stretched : std::max<int64_t>(h, std::min(stretched, lead)));
}

void GossipNode::AdvanceTraining(TimePoint now) {
  if (computing_ || evaluating_) return;
  // A run that ends (budget, stop, a finished quorum) mixes what it has.
  // Under overlap a round not due yet lets the node step on.
  const bool mix_due = mix_pending_ && MixDue(now);
  if (mix_pending_ && !mix_due && round_overlap_ == 0) {
    Emit(Wait{std::min(now + std::chrono::milliseconds(1), round_wait_until_)});
    return;
  }
  if (mix_due) {
    MixRound();
    if (phase_ == Phase::kOver) return;
  }
  if (BudgetSpent(now)) return Finish(now);
  if (evaluate_now_ && !peer_finished_) {
    evaluate_now_ = false;
    evaluating_ = true;
    Emit(Evaluate{false, x_});
    return;
  }
  paused_ = pause_.from >= 0 && s_.step >= static_cast<uint64_t>(pause_.from) &&
            best_clock_ < static_cast<uint64_t>(std::max<int64_t>(pause_.until, 0));
  if (paused_) {
    Emit(Wait{now + std::chrono::milliseconds(10)});
    return;
  }
  const std::vector<NodeId> view = view_.empty() ? std::vector<NodeId>{o_.self} : view_;
  const std::vector<NodeId> mixing = MixingPeers(view);
  const uint64_t clock_before = s_.step;
  const bool catch_up =
      sync_.ShouldCatchUp(s_.step, best_clock_, HopsAcross(o_.choco.sampling, view.size()));
  // An overlapped round mixes before anything replaces the model.
  if (mix_pending_ && (catch_up || received_model_.has_value())) {
    MixRound();
    if (phase_ == Phase::kOver) return;
  }
  if (catch_up) CatchUp(view, mixing, now);
  if (received_model_.has_value()) {
    AdoptReceivedModel();
    ++s_.catchups;
  }
  // A clock raised without a step (caught up, or a model adopted) is said at once, before the
  // gate: a neighbour whose gate holds the old clock would otherwise wait for it while this
  // node's gate waits for that neighbour, each until W (after a late join, every node would
  // stall W).
  if (s_.step > clock_before) {
    Emit(Announce{s_.step, static_cast<uint64_t>(s_.samples), false});
    AnnounceClock();
  }
  // A member that finished steps no more: waiting for it would only run out max_wait.
  std::vector<NodeId> waited_for;
  for (NodeId id : mixing) {
    if (std::find(finished_ids_.begin(), finished_ids_.end(), id) == finished_ids_.end()) {
      waited_for.push_back(id);
    }
  }
  const auto gate = sync_.Gate(s_.step, waited_for, now);
  for (NodeId id : gate.newly_marked) {
    const auto [slowest, slowest_clock] = sync_.Slowest();
    MURMUR_LOG_INFO(
        "node {}: waited {:.2f} s for node {} (at a stretch or in recent short waits, "
        "half of a wait while it looked held; step {} vs {}; the slowest member it "
        "knows: node {} at step {}): marked a straggler, not waiting for it for {:.0f} s",
        o_.self, ToSeconds(sync_.EffectiveWait()), id, sync_.ClockOf(id), s_.step, slowest,
        slowest_clock, ToSeconds(o_.soft_sync.straggler_hold));
  }
  if (!gate.proceed) {
    Emit(Wait{now + std::chrono::milliseconds(1)});
    return;
  }
  step_view_ = view;
  step_mixing_ = mixing;
  computing_ = true;
  std::optional<double> lr;
  if (o_.lr_schedule.has_value()) {
    lr = o_.lr_schedule->At(ScheduleSamples());
    s_.lr = *lr;
  }
  Emit(ComputeStep{s_.step + 1, lr});
}

void GossipNode::AdoptReceivedModel() {
  if (received_model_->size() == x_.size()) {
    SetModel(*received_model_);
    if (outer_.has_value()) outer_->Restart(x_);
    Emit(ResetOptimizer{});
    s_.step = std::max(s_.step, received_model_clock_);
  }
  received_model_.reset();
  awaiting_model_from_ = 0;
  refused_models_.clear();
}

void GossipNode::CatchUp(const std::vector<NodeId>& view, const std::vector<NodeId>& mixing,
                         TimePoint now) {
  uint64_t clock = 0;
  for (NodeId id : mixing) clock = std::max(clock, sync_.ClockOf(id));
  // NeighbourAverage leaves x_ untouched when it has nothing to average.
  const bool averaged = clock > s_.step && choco_->NeighbourAverage(view, x_);
  if (averaged) {
    if (outer_.has_value()) outer_->Restart(x_);
    Emit(ResetOptimizer{});
    MURMUR_LOG_DEBUG("node {}: caught up from step {} to {} with the neighbours' average", o_.self,
                     s_.step, clock);
    s_.step = clock;
    ++s_.catchups;
  }
  // A dense model costs as much as ~100 compressed rounds, so a node asks the most advanced member
  // for it (at most once per model_retry) only when the copies fall short:
  // - without a fresher copy, once far behind (4 S: it was stopped or cut off, not merely slow);
  // - with an outer optimizer, after every catch-up: the copies hold the neighbours' models at
  //   the last round, before the outer step moved their anchors on (by η / (1 − μ) times the
  //   averaged progress at steady momentum, from outer_optimizer.h's step), and their average
  //   lacks that step. The average still moves the clock at once, so the neighbours' gates do
  //   not wait for the reply.
  const uint64_t far = 4 * static_cast<uint64_t>(std::max<int64_t>(o_.soft_sync.max_lead, 1));
  const bool ask = averaged ? OuterActive() : best_clock_ >= s_.step + far;
  if (!ask) return;
  if (awaiting_model_from_ != 0 && !model_refused_ && now - model_asked_at_ < o_.model_retry)
    return;
  if (AskForModel(now)) ++s_.model_requests;
}

void GossipNode::AnnounceClock() {
  const int64_t lead = o_.soft_sync.max_lead;
  if (lead < 0 || s_.step < clock_sent_ + static_cast<uint64_t>(std::max<int64_t>(lead / 2, 1))) {
    return;
  }
  clock_sent_ = s_.step;
  const std::vector<NodeId>& view = step_view_.empty() ? view_ : step_view_;
  for (NodeId to : choco_->Trackers(view, s_.rounds)) Emit(SendTo{to, NoPayload{}, nullptr});
}

namespace {
constexpr std::pair<GossipNode::Phase, const char*> kPhaseNames[] = {
    {GossipNode::Phase::kJoining, "joining"},
    {GossipNode::Phase::kAwaitingModel, "awaiting_model"},
    {GossipNode::Phase::kTraining, "training"},
    {GossipNode::Phase::kFinishing, "finishing"},
    {GossipNode::Phase::kLingering, "lingering"},
    {GossipNode::Phase::kOver, "over"}};
}  // namespace

const char* PhaseName(GossipNode::Phase phase) {
  for (const auto& [p, name] : kPhaseNames) {
    if (p == phase) return name;
  }
  MURMUR_CHECK(false) << "a phase without a name: " << static_cast<int>(phase);
  return "";
}

StatusOr<GossipNode::Phase> ParsePhase(std::string_view name) {
  for (const auto& [p, n] : kPhaseNames) {
    if (name == n) return p;
  }
  return InvalidArgumentError("unknown phase '" + std::string(name) + "'");
}

}  // namespace murmur::gossip
