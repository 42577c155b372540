#include "node/driver/gossip_driver.h"

#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <thread>

#include "base/log.h"
#include "gossip/gossip_node.h"
#include "kernels/memory.h"
#include "node/observe/telemetry.h"

namespace murmur::node {
namespace {

using gossip::NodeId;

double CpuSeconds(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

class GossipDriver : public gossip::GossipNodeObserver {
 public:
  GossipDriver(const GossipTrainerOptions& o, Model<float>& model, const Dataset& train,
               std::vector<int64_t> rows, const Dataset* test, const GossipProgressFn& on_progress,
               const std::function<bool()>& stop)
      : o_(o),
        model_(model),
        train_(train),
        rows_(std::move(rows)),
        test_(test),
        on_progress_(on_progress),
        stop_(stop),
        injector_(o.straggler) {
    if (test != nullptr) {
      eval_subset_ = *test;
      eval_subset_.Truncate(o.eval_samples);
      eval_subset_.Densify();  // evaluated every eval_every steps: convert its rows once
    }
  }
  ~GossipDriver() override {
    if (o_.telemetry != nullptr) o_.telemetry->AttachPeer(nullptr);  // before peer_ goes
  }

  StatusOr<GossipProgress> Run();

  // GossipNodeObserver: the machine's counters go to the metrics.
  void Rejected(std::string_view reason) override {
    if (o_.telemetry != nullptr) o_.telemetry->CountRejected(reason);
  }
  void Staleness(double steps) override {
    if (o_.telemetry != nullptr) o_.telemetry->ObserveStaleness(steps);
  }
  void LateDropped() override {
    if (o_.telemetry != nullptr) o_.telemetry->AddLateDropped(1);
  }
  void RoundPublished() override { published_at_ = clock_.Now(); }
  void Round(double density, double residual_norm, double consensus) override {
    mixed_at_ = clock_.Now();
    if (o_.telemetry == nullptr) return;
    o_.telemetry->SetCompression(density, residual_norm);
    o_.telemetry->SetConsensusDistance(consensus);
  }
  void Finish(bool averaged, uint32_t contributors, double moved) override {
    if (o_.telemetry != nullptr) o_.telemetry->SetFinish(averaged ? contributors : 0, moved);
  }

 private:
  Status Start();
  // Feeds what arrived (waiting up to `wait` for the first message) to the machine; the time
  // spent blocked is returned, the time the machine took goes to the step's apply phase.
  Duration Drain(Duration wait);
  void RefreshMembers(TimePoint now);
  // The injection's pause rule is the machine's to apply (it still ends with the cluster).
  void TakePause(TimePoint now) {
    node_->Step(gossip::InjectedPause{injector_.options().pause_from, injector_.options().pause_to}, now);
  }
  // Runs the machine's outputs; false once it emitted RunOver.
  bool Perform(std::vector<gossip::NodeAction> actions);
  void ComputeStep();
  void CloseTrainingPhase() {
    if (phase_closed_) return;
    phase_closed_ = true;
    p_.phase_thread_cpu_s = CpuSeconds(CLOCK_THREAD_CPUTIME_ID) - thread_cpu0_;
    p_.phase_process_cpu_s = CpuSeconds(CLOCK_PROCESS_CPUTIME_ID) - process_cpu0_;
  }
  void AddPhases(const StepTimes& t) {
    StepTimes& p = p_.phases;
    p.compute += t.compute;
    p.compress += t.compress;
    p.mix += t.mix;
    p.apply += t.apply;
    p.waiting += t.waiting;
    p.evaluate += t.evaluate;
    p.injected += t.injected;
    p.other += t.other;
  }
  // Resumes from the node's own checkpoint when there is one it may use; an error only for one
  // that belongs to another model, run or node.
  Status Restore();
  void WriteCheckpoint();
  void Evaluate(const gossip::Evaluate& e);
  void Report(bool force);
  bool Stopping() const { return stop_ && stop_(); }

  const GossipTrainerOptions& o_;
  Model<float>& model_;
  RealClock clock_;
  const Dataset& train_;
  std::vector<int64_t> rows_;  // until the trainer takes them
  std::unique_ptr<Trainer> trainer_;  // on the model's device
  const Dataset* test_;
  Dataset eval_subset_;
  const GossipProgressFn& on_progress_;
  const std::function<bool()>& stop_;
  StragglerInjector injector_;
  std::unique_ptr<PeerNode> peer_;
  std::unique_ptr<gossip::GossipNode> node_;
  TimePoint start_{};
  TimePoint last_refresh_{};
  TimePoint last_step_end_{};
  TimePoint wait_until_{};
  TimePoint next_report_{};
  bool compute_asked_ = false;
  std::optional<double> compute_lr_;  // the cluster schedule's rate for the asked step
  bool stop_sent_ = false;
  bool joined_reported_ = false;
  bool alone_reported_ = false;
  bool saw_peer_ = false;  // another member was live at some point (then left: not "alone")
  std::string other_seeds_;  // the seeds other than this node, as given ("" when none)
  TimePoint next_alone_warning_{};
  std::optional<Status> over_;
  uint64_t injection_version_ = ~uint64_t{0};  // none taken yet
  // The current step's phases so far (StepTimes: the time since the previous step ended), the
  // training phase's totals, and the CPU clocks at its start.
  StepTimes step_;
  TimePoint published_at_{};  // the last round's RoundPublished and Round (mixed)
  TimePoint mixed_at_{};
  bool stepped_ = false;       // a step was computed: the training phase has begun
  bool phase_closed_ = false;  // ... and it ended (the CPU clocks are read once at each end)
  double thread_cpu0_ = 0, process_cpu0_ = 0;
  GossipProgress p_;
  GossipCheckpointOptions checkpoint_ = o_.checkpoint;
};

Status GossipDriver::Start() {
  p_.budget_samples = o_.epochs > 0 ? static_cast<int64_t>(std::ceil(o_.epochs * static_cast<double>(o_.dataset_rows))) : 0;
  // The schedule runs on the cluster's samples; the linear scaling rule's global batch is every
  // expected member's mini-batch. Made before the peer starts: a bad option never joins.
  if (o_.train.lr_reference_batch > 0 && o_.node.expect_members <= 0) {
    return InvalidArgumentError(
        "lr_reference_batch (the linear scaling rule) needs expect_members: the cluster's size "
        "makes its global batch");
  }
  auto schedule = ScheduleFor(o_.train, p_.budget_samples, o_.dataset_rows,
                              o_.train.batch_size * std::max(1, o_.node.expect_members));
  if (!schedule.ok()) return schedule.status();
  // The model, its optimizer state and this node's shard go to the model's device before the
  // node joins: a device that cannot hold them is refused here.
  MURMUR_ASSIGN_OR_RETURN(trainer_, Trainer::Create(model_, train_, std::move(rows_), test_,
                                                    o_.train, clock_));
  MURMUR_ASSIGN_OR_RETURN(peer_, PeerNode::Start(o_.peer));
  for (const std::string& seed : o_.peer.seeds) {
    if (seed == peer_->endpoint() || "tcp://" + seed == peer_->endpoint()) continue;
    other_seeds_ += (other_seeds_.empty() ? "" : ", ") + seed;
  }
  MURMUR_LOG_INFO("node {}: learning rate {} over the cluster's samples", peer_->id(),
                  schedule->ToString());
  p_.id = peer_->id();
  peer_->SetSendInjection(o_.straggler.send_delay, o_.straggler.drop, o_.straggler.seed);
  if (o_.telemetry != nullptr) {
    o_.telemetry->AttachPeer(peer_.get());
    o_.telemetry->SetJoined(false, "joining: waiting for the cluster and its model");
    ApplyInjectionChange(o_.telemetry->straggler(), injection_version_, injector_, *peer_);
  }
  start_ = clock_.Now();
  // The cluster's common initial model, or one of this node's own.
  std::vector<float> x0(static_cast<size_t>(model_.NumParams()));
  model_.Initialize(std::span<float>(x0), o_.init_seed);
  if (o_.per_node_init) {
    std::vector<float> own(x0.size());
    model_.Initialize(std::span<float>(own), o_.init_seed ^ (peer_->id() * 0x9E3779B97F4A7C15ULL));
    MURMUR_RETURN_IF_ERROR(trainer_->SetParams(own));
  } else {
    MURMUR_RETURN_IF_ERROR(trainer_->SetParams(x0));
  }
  auto x = trainer_->params();
  gossip::GossipNodeOptions g = o_.node;
  g.device = trainer_->device();
  p_.device = g.device.ToString();
  MURMUR_LOG_INFO("node {}: training on {}", peer_->id(), p_.device);
  g.self = peer_->id();
  g.incarnation = peer_->Snapshot().incarnation;
  g.shard_rows = std::max<int64_t>(1, trainer_->shard_rows());
  g.budget_samples = p_.budget_samples;
  g.lr_schedule = *schedule;
  MURMUR_ASSIGN_OR_RETURN(node_, gossip::GossipNode::Create(g, x, std::move(x0), !o_.per_node_init, start_));
  node_->set_observer(this);
  MURMUR_RETURN_IF_ERROR(Restore());
  TakePause(start_);
  return OkStatus();
}

Status GossipDriver::Restore() {
  if (checkpoint_.dir.empty()) return OkStatus();
  checkpoint_.model = model_.spec().ToString();
  checkpoint_.node_id = peer_->id();
  const std::string path = checkpoint_.Path();
  auto read = ReadCheckpoint(path);
  auto count = [&](std::string_view what, int64_t step) {
    if (o_.telemetry != nullptr) o_.telemetry->CountCheckpoint(what, step);
  };
  if (read.status().code() == StatusCode::kNotFound) {
    MURMUR_LOG_INFO("node {}: no checkpoint in '{}': starting afresh", peer_->id(), checkpoint_.dir);
    count("none", 0);
    return OkStatus();
  }
  StatusOr<GossipResume> resume = read.ok() ? ReadGossipCheckpoint(checkpoint_, *read)
                                            : StatusOr<GossipResume>(read.status());
  if (resume.status().code() == StatusCode::kFailedPrecondition) return resume.status();
  Status restored = resume.ok() ? trainer_->RestoreState(resume->trainer) : resume.status();
  if (restored.ok()) restored = node_->Resume(std::move(resume->node));
  if (!restored.ok()) {
    // Written atomically and checksummed, so this is a damaged disk or a foreign file: set it
    // aside for a person to look at and join from a peer.
    const std::string aside = path + ".corrupt";
    std::rename(path.c_str(), aside.c_str());
    MURMUR_LOG_ERROR("node {}: cannot resume from '{}' ({}); moved it to '{}' and joining with a "
                     "peer's model", peer_->id(), path, restored.ToString(), aside);
    count("corrupt", 0);
    return OkStatus();
  }
  MURMUR_LOG_INFO("node {}: resumed from '{}' at step {} ({} local steps, {} samples)", peer_->id(),
                  path, node_->state().step, node_->state().local_steps, node_->state().samples);
  count("resumed", static_cast<int64_t>(node_->state().step));
  return OkStatus();
}

void GossipDriver::WriteCheckpoint() {
  if (checkpoint_.dir.empty() || !node_->joined()) return;
  const TimePoint t0 = clock_.Now();
  auto state = trainer_->SaveState();
  Status written = state.status();
  if (state.ok()) {
    written = node::WriteCheckpoint(
        checkpoint_.Path(),
        MakeGossipCheckpoint(checkpoint_, *std::move(state), node_->state(), node_->PublicCopyOnHost()));
  }
  const int64_t step = static_cast<int64_t>(node_->state().step);
  if (!written.ok()) {
    MURMUR_LOG_ERROR("node {}: checkpoint at step {} failed: {}", peer_->id(), step, written.ToString());
  }
  if (o_.telemetry != nullptr) {
    o_.telemetry->CountCheckpoint(written.ok() ? "written" : "write_failed", step, clock_.Now() - t0);
  }
}

Duration GossipDriver::Drain(Duration wait) {
  const TimePoint t0 = clock_.Now();
  auto m = peer_->TakeTraining(std::chrono::duration_cast<std::chrono::milliseconds>(wait));
  const TimePoint t1 = clock_.Now();
  for (int i = 0; m.has_value() && i < 4096; ++i) {
    const gossip::Envelope& e = m->envelope;
    gossip::Incoming in{e.sender_id, e.incarnation, e.step_clock, e.payload, {}, m->frames.size()};
    if (!m->frames.empty()) in.frame = m->frames[0].bytes();
    node_->Step(in, clock_.Now());
    m = peer_->TakeTraining(std::chrono::milliseconds(0));
  }
  step_.apply += clock_.Now() - t1;
  return t1 - t0;
}

void GossipDriver::RefreshMembers(TimePoint now) {
  node_->Step(gossip::MemberView{peer_->Members()}, now);
  if (o_.telemetry != nullptr) {
    if (ApplyInjectionChange(o_.telemetry->straggler(), injection_version_, injector_, *peer_)) {
      TakePause(now);
    }
    o_.telemetry->SetStragglers(node_->Stragglers(now), node_->soft_sync().stragglers_detected());
  }
  if (node_->joined()) {
    // Training while no other member answered: its seeds are unreachable (a wrong address, a
    // firewall, a cluster id or key that differs). Said loudly, every 10 s, and in /healthz
    // (503) until a peer appears; the node keeps trying its seeds meanwhile.
    // live_members counts the view the machine was just given (alive and suspect members).
    saw_peer_ |= node_->state().live_members > 1;
    const bool alone = !other_seeds_.empty() && !saw_peer_;
    if (alone && now >= next_alone_warning_) {
      MURMUR_LOG_ERROR("node {}: TRAINING ALONE: no other member has answered (seeds: {}); check "
                       "the seeds' addresses, --cluster and the cluster key. Still trying them",
                       peer_->id(), other_seeds_);
      next_alone_warning_ = now + std::chrono::seconds(10);
    }
    if (o_.telemetry != nullptr && (!joined_reported_ || alone != alone_reported_)) {
      o_.telemetry->SetJoined(!alone, alone ? "training alone: no other member has answered "
                                              "(seeds: " + other_seeds_ + ")" : "joined");
      if (!alone && alone_reported_) MURMUR_LOG_INFO("node {}: a peer answered: no longer alone", peer_->id());
      joined_reported_ = true;
      alone_reported_ = alone;
    }
  }
  last_refresh_ = now;
}

bool GossipDriver::Perform(std::vector<gossip::NodeAction> actions) {
  for (gossip::NodeAction& action : actions) {
    if (auto* send = std::get_if<gossip::SendTo>(&action)) {
      std::vector<transport::Frame> frames;
      if (send->frame) frames.push_back(SharedFrame(std::move(send->frame)));
      peer_->SendTo(send->to, std::move(send->payload), std::move(frames));
    } else if (auto* a = std::get_if<gossip::Announce>(&action)) {
      peer_->SetProgress(a->step_clock, a->samples, a->finished);
    } else if (auto* c = std::get_if<gossip::ComputeStep>(&action)) {
      compute_asked_ = true;
      compute_lr_ = c->lr;
    } else if (std::holds_alternative<gossip::ResetOptimizer>(action)) {
      trainer_->ResetOptimizerState();
    } else if (auto* e = std::get_if<gossip::Evaluate>(&action)) {
      const TimePoint t0 = clock_.Now();
      Evaluate(*e);
      step_.evaluate += clock_.Now() - t0;
    } else if (auto* w = std::get_if<gossip::Wait>(&action)) {
      wait_until_ = w->until;
    } else if (auto* f = std::get_if<gossip::Finished>(&action)) {
      if (o_.telemetry != nullptr) o_.telemetry->SetFinished(f->reason);
      p_.finished = true;
    } else if (auto* over = std::get_if<gossip::RunOver>(&action)) {
      over_ = over->status;
      return false;
    }
  }
  return true;
}

void GossipDriver::Evaluate(const gossip::Evaluate& e) {
  double accuracy = -1;
  if (test_ != nullptr) {
    auto r = node::Evaluate<float>(model_, trainer_->params(), e.full ? *test_ : eval_subset_);
    if (r.ok()) {
      accuracy = r->accuracy;
      if (o_.telemetry != nullptr) o_.telemetry->SetAccuracy(accuracy);
    }
  }
  node_->Step(gossip::Evaluated{accuracy, 0}, clock_.Now());
  // A fresh accuracy is always reported (time-to-accuracy reads it).
  if (!e.full) Report(true);
}

void GossipDriver::ComputeStep() {
  const TimePoint t0 = clock_.Now();
  if (!stepped_) {
    // The training phase begins: joining and the wait for a model are not a step's time.
    stepped_ = true;
    step_ = StepTimes{};
    last_step_end_ = t0;
    thread_cpu0_ = CpuSeconds(CLOCK_THREAD_CPUTIME_ID);
    process_cpu0_ = CpuSeconds(CLOCK_PROCESS_CPUTIME_ID);
  }
  auto loss = trainer_->Step(compute_lr_);
  const Duration compute = clock_.Now() - t0;
  const Duration pause = injector_.AfterStep(compute);
  if (pause.count() > 0) std::this_thread::sleep_for(pause);
  compute_asked_ = false;
  Drain(Duration(0));  // what arrived meanwhile is applied before the round
  if (!loss.ok()) {
    if (o_.telemetry != nullptr) o_.telemetry->CountNonFiniteStep();
    MURMUR_LOG_WARN("node {}: step skipped: {}", peer_->id(), loss.status().ToString());
  }
  const TimePoint round_start = clock_.Now();
  published_at_ = TimePoint{};
  node_->Step(gossip::StepComputed{loss.ok(), loss.ok() ? *loss : 0.0, trainer_->last_batch_rows()},
              round_start);
  const TimePoint end = clock_.Now();
  if (published_at_ != TimePoint{} && mixed_at_ >= published_at_) {
    // This step's round ran: compress, then mix; the rest of the machine's work (the gate for
    // the next step) is the driver's "other".
    step_.compress += published_at_ - round_start;
    step_.mix += mixed_at_ - published_at_;
  }
  // The step's wall time since the previous one ended, by phase; what no phase claims is the
  // driver's own (membership views, reports, handing messages to the peer).
  step_.compute = compute;
  step_.injected = pause;
  const Duration claimed = step_.compute + step_.compress + step_.mix + step_.apply +
                           step_.waiting + step_.evaluate + step_.injected;
  step_.other = std::max(Duration(0), (end - last_step_end_) - claimed);
  last_step_end_ = end;
  AddPhases(step_);
  p_.phase_samples += trainer_->last_batch_rows();
  if (o_.telemetry != nullptr) {
    o_.telemetry->ObserveStep(step_, trainer_->last_batch_rows());
    o_.telemetry->SetStepClock(static_cast<int64_t>(node_->state().step));
    if (node_->state().have_loss) o_.telemetry->SetLoss(node_->state().loss);
  }
  step_ = StepTimes{};
  const int64_t done = node_->state().local_steps;
  if (checkpoint_.every > 0 && done > 0 && done % checkpoint_.every == 0) WriteCheckpoint();
  Report(false);
}

// Progress for the caller, at most once per report_interval (building it takes the peer's locks).
void GossipDriver::Report(bool force) {
  const TimePoint now = clock_.Now();
  if (!on_progress_ || (!force && now < next_report_)) return;
  next_report_ = now + o_.report_interval;
  const auto snap = peer_->Snapshot();
  static_cast<gossip::GossipNodeState&>(p_) = node_->state();
  p_.bytes_sent = snap.transport.sent_bytes;
  p_.bytes_received = snap.transport.received_bytes;
  p_.wait_s = ToSeconds(node_->soft_sync().total_wait());
  p_.stragglers = node_->Stragglers(now);
  p_.stragglers_detected = node_->soft_sync().stragglers_detected();
  p_.elapsed_s = ToSeconds(now - start_);
  p_.activity = node_->Activity();
  const kernels::DeviceMemoryStats memory = kernels::GetDeviceMemoryStats();
  p_.device_memory_bytes = memory.allocated_bytes;
  p_.host_device_bytes = memory.transferred_bytes;
  on_progress_(p_);
}

StatusOr<GossipProgress> GossipDriver::Run() {
  MURMUR_RETURN_IF_ERROR(Start());
  last_step_end_ = clock_.Now();
  RefreshMembers(clock_.Now());
  while (Perform(node_->TakeOutput())) {
    if (stepped_ && node_->phase() != gossip::GossipNode::Phase::kTraining) CloseTrainingPhase();
    const TimePoint now = clock_.Now();
    if (now - last_refresh_ >= std::chrono::milliseconds(20)) RefreshMembers(now);
    if (!stop_sent_ && Stopping()) {
      stop_sent_ = true;
      node_->Step(gossip::StopRequested{}, now);
      continue;
    }
    if (compute_asked_) {
      ComputeStep();
      continue;
    }
    const Duration wait = std::clamp<Duration>(wait_until_ - now, Duration(0), std::chrono::milliseconds(20));
    step_.waiting += Drain(wait);
    node_->Tick(clock_.Now());
    // Before training nothing else reports: say what the node waits for (joining, a snapshot).
    if (node_->phase() == gossip::GossipNode::Phase::kJoining ||
        node_->phase() == gossip::GossipNode::Phase::kAwaitingModel) {
      Report(false);
    }
  }
  if (stepped_) CloseTrainingPhase();
  Report(true);
  WriteCheckpoint();  // the run's end or a SIGTERM: a restart resumes from here
  if (!over_->ok()) return *over_;
  if (!o_.save_model.empty()) {
    MURMUR_ASSIGN_OR_RETURN(const std::vector<float> params, trainer_->ParamsOnHost());
    MURMUR_RETURN_IF_ERROR(SaveModel(o_.save_model, model_.spec().ToString(), params));
  }
  MURMUR_LOG_INFO("node {}: done ({}) at step {}, test accuracy {}", peer_->id(),
                  p_.end_reason.empty() ? "stopped before training" : p_.end_reason, p_.step,
                  p_.accuracy >= 0 ? fmt::format("{:.4f}", p_.accuracy) : "not evaluated");
  peer_->Leave();
  return p_;
}

}  // namespace

Status GossipTrainerOptions::Validate() const {
  if (epochs <= 0 && node.target_accuracy <= 0 && node.time_limit.count() <= 0) {
    return InvalidArgumentError("gossip training needs a budget: epochs, target_accuracy or time_limit");
  }
  if (epochs > 0 && dataset_rows <= 0) return InvalidArgumentError("an epoch budget needs the data set size");
  if (node.target_accuracy < 0 || node.target_accuracy > 1) {
    return InvalidArgumentError("target_accuracy is a fraction in [0, 1]");
  }
  if (eval_samples < 1) return InvalidArgumentError("eval_samples must be at least 1");
  if (checkpoint.every < 0) return InvalidArgumentError("checkpoint_every must be at least 0");
  return node.Validate();
}

StatusOr<GossipProgress> RunGossipTrainer(const GossipTrainerOptions& options, Model<float>& model,
                                          const Dataset& train, std::vector<int64_t> rows,
                                          const Dataset* test, const GossipProgressFn& on_progress,
                                          const std::function<bool()>& stop) {
  MURMUR_RETURN_IF_ERROR(options.Validate());
  GossipDriver driver(options, model, train, std::move(rows), test, on_progress, stop);
  return driver.Run();
}

}  // namespace murmur::node
