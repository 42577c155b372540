#include "node/driver/gossip_session.h"

#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <thread>
#include <utility>

#include "base/check.h"
#include "base/log.h"
#include "kernels/memory.h"
#include "node/observe/process_stats.h"
#include "node/observe/telemetry.h"

namespace murmur::node {
namespace {

double CpuSeconds(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

}  // namespace

GossipSession::GossipSession(GossipPeerOptions options, GossipWork& work, NodeTelemetry* telemetry,
                             GossipProgressFn on_progress, std::function<bool()> stop)
    : o_(std::move(options)),
      telemetry_(telemetry),
      work_(work),
      on_progress_(std::move(on_progress)),
      stop_(std::move(stop)),
      injector_(o_.straggler) {}

GossipSession::~GossipSession() {
  if (telemetry_ != nullptr) telemetry_->AttachPeer(nullptr);  // before peer_ goes
}

gossip::NodeId GossipSession::id() const { return peer_ != nullptr ? peer_->id() : 0; }

void GossipSession::Rejected(std::string_view reason) {
  if (telemetry_ != nullptr) telemetry_->CountRejected(reason);
  if (reason == "wrong_dimension" && o_.wrong_dimension_limit > 0 &&
      ++wrong_dimension_ >= o_.wrong_dimension_limit && !over_.has_value()) {
    over_ = FailedPreconditionError(fmt::format(
        "{} messages from peers carried a model of another size than this one's {} values: every "
        "process of a cluster must train the same model (the log names the sizes)",
        wrong_dimension_, work_.params().size()));
  }
}
void GossipSession::Staleness(double steps) {
  if (telemetry_ != nullptr) telemetry_->ObserveStaleness(steps);
}
void GossipSession::Clipped(uint64_t terms) {
  if (telemetry_ != nullptr) telemetry_->AddClipped(terms);
}
void GossipSession::LateDropped() {
  if (telemetry_ != nullptr) telemetry_->AddLateDropped(1);
}
void GossipSession::Round(double density, double residual_norm, double consensus) {
  mixed_at_ = clock_.Now();
  if (telemetry_ == nullptr) return;
  telemetry_->SetCompression(density, residual_norm);
  telemetry_->SetConsensusDistance(consensus);
}
void GossipSession::Finish(bool averaged, uint32_t contributors, double moved) {
  if (telemetry_ != nullptr) telemetry_->SetFinish(averaged ? contributors : 0, moved);
  SampleMemory(peer_->Snapshot());  // the finish's buffers are at their largest now
}

void GossipSession::SampleMemory(const PeerSnapshot& snap) {
  MemoryUse m = node_->Memory();
  work_.AddMemory(m);
  m.Add("inbox", snap.transport.inbox_bytes);
  m.Add("training_queue", snap.training_queue_bytes);
  if (telemetry_ != nullptr) telemetry_->SetMemory(m);
  p_.peak_resident_bytes = PeakResidentBytes();
  if (m.Total() < p_.memory.Total()) return;
  p_.memory = std::move(m);  // /proc is read only for a new largest table
  p_.memory_resident_bytes = static_cast<uint64_t>(ReadProcess().resident_bytes);
}

// The injection's pause rule is the machine's to apply (it still ends with the cluster).
void GossipSession::TakePause(TimePoint now) {
  node_->Step(gossip::InjectedPause{injector_.options().pause_from, injector_.options().pause_to},
              now);
}

void GossipSession::CloseTrainingPhase() {
  if (phase_closed_) return;
  phase_closed_ = true;
  p_.phase_thread_cpu_s = CpuSeconds(CLOCK_THREAD_CPUTIME_ID) - thread_cpu0_;
  p_.phase_process_cpu_s = CpuSeconds(CLOCK_PROCESS_CPUTIME_ID) - process_cpu0_;
}

void GossipSession::AddPhases(const StepTimes& t) {
  StepTimes& p = p_.phases;
  p.compute += t.compute;
  p.compress += t.compress;
  p.mix += t.mix;
  p.apply += t.apply;
  p.send += t.send;
  p.waiting += t.waiting;
  p.evaluate += t.evaluate;
  p.injected += t.injected;
  p.other += t.other;
}

void BoundPeerByModel(size_t dimension, PeerNodeOptions& o) {
  // The largest frame a member sends: a dense update (fp32 values, a bitmap at most, the
  // codec's header), a snapshot or a final model; the rest is slack for headers.
  const size_t frame = dimension * sizeof(float) + dimension / 8 + 64 * 1024;
  o.transport.max_frame_bytes = std::min(o.transport.max_frame_bytes, frame);
  o.transport.max_inbox_bytes = std::min(o.transport.max_inbox_bytes, kInboxModels * frame);
  o.max_training_queue_bytes = std::min(o.max_training_queue_bytes, kInboxModels * frame);
}

Status GossipSession::Start() {
  MURMUR_RETURN_IF_ERROR(o_.Validate());
  MURMUR_ASSIGN_OR_RETURN(lr_schedule_, o_.Schedule());
  // The starting values, before the caller's Started() may draw its own model.
  std::vector<float> initial(work_.params().size());
  MURMUR_RETURN_IF_ERROR(kernels::CopyBytes(kernels::Device::Cpu(), initial.data(), work_.device(),
                                            work_.params().data(), work_.params().size_bytes()));
  p_.budget_samples = o_.BudgetSamples();
  BoundPeerByModel(work_.params().size(), o_.peer);
  MURMUR_ASSIGN_OR_RETURN(peer_, PeerNode::Start(o_.peer));
  for (const std::string& seed : o_.peer.seeds) {
    if (seed == peer_->endpoint() || "tcp://" + seed == peer_->endpoint()) continue;
    other_seeds_ += (other_seeds_.empty() ? "" : ", ") + seed;
  }
  if (lr_schedule_.has_value()) {
    MURMUR_LOG_INFO("node {}: learning rate {} over the cluster's samples", peer_->id(),
                    lr_schedule_->ToString());
  }
  p_.id = peer_->id();
  peer_->SetSendInjection(o_.straggler.send_delay, o_.straggler.drop, o_.straggler.seed);
  if (telemetry_ != nullptr) {
    telemetry_->AttachPeer(peer_.get());
    telemetry_->SetJoined(false, "joining: waiting for the cluster and its model");
    ApplyInjectionChange(telemetry_->straggler(), injection_version_, injector_, *peer_);
  }
  start_ = clock_.Now();
  MURMUR_RETURN_IF_ERROR(work_.Started(peer_->id()));
  gossip::GossipNodeOptions g = o_.node;  // the machine's keys, whole; its per-run fields:
  g.choco.device = work_.device();
  p_.device = g.choco.device.ToString();
  MURMUR_LOG_INFO("node {}: training on {}", peer_->id(), p_.device);
  g.self = peer_->id();
  g.incarnation = peer_->Snapshot().incarnation;
  g.expect_members = o_.expect_members;
  // A peer with no seeds and no members to wait for starts a cluster: nobody can tell it of a
  // running one, so it trains at once (later peers join it by its snapshot).
  if (o_.peer.seeds.empty() && o_.expect_members <= 0) g.join_wait = Duration{0};
  g.shard_rows = o_.ShardRows();
  g.budget_samples = o_.BudgetSamples();
  g.lr_schedule = lr_schedule_;
  MURMUR_ASSIGN_OR_RETURN(node_, gossip::GossipNode::Create(g, work_.params(), std::move(initial),
                                                            o_.same_init, start_));
  node_->set_observer(this);
  return OkStatus();
}

Duration GossipSession::Drain(Duration wait) {
  const TimePoint t0 = clock_.Now();
  // The wait is exact: cast to milliseconds, a gate's 1 ms wait became a busy loop of polls for
  // most of its length (the spin was most of a gated node's "other").
  auto m = peer_->TakeTraining(wait);
  const TimePoint t1 = clock_.Now();
  for (int i = 0; m.has_value() && i < 4096; ++i) {
    const gossip::Envelope& e = m->envelope;
    gossip::Incoming in{e.sender_id, e.incarnation, e.step_clock, e.payload, {}, m->frames.size()};
    if (!m->frames.empty()) in.frame = m->frames[0].bytes();
    node_->Step(in, clock_.Now());
    m = peer_->TakeTraining(Duration(0));
  }
  step_.apply += clock_.Now() - t1;
  return t1 - t0;
}

void GossipSession::RefreshMembers(TimePoint now) {
  node_->Step(gossip::MemberView{peer_->Members()}, now);
  if (telemetry_ != nullptr) {
    if (ApplyInjectionChange(telemetry_->straggler(), injection_version_, injector_, *peer_)) {
      TakePause(now);
    }
    telemetry_->SetStragglers(node_->Stragglers(now), node_->soft_sync().stragglers_detected());
  }
  // live_members counts the view the machine was just given (alive and suspect members).
  saw_peer_ |= node_->state().live_members > 1;
  if (o_.join_timeout.count() > 0 && !other_seeds_.empty() && !saw_peer_ &&
      now - start_ >= o_.join_timeout && !over_.has_value()) {
    over_ = UnavailableError(fmt::format(
        "no other member answered within {:.3g} s (seeds: {}): check the seeds' addresses, the "
        "cluster id and the cluster key",
        ToSeconds(o_.join_timeout), other_seeds_));
  }
  if (node_->joined()) {
    // Training while no other member answered: its seeds are unreachable (a wrong address, a
    // firewall, a cluster id or key that differs). Said loudly, every 10 s, and in /healthz
    // (503) until a peer appears; the node keeps trying its seeds meanwhile.
    const bool alone = !other_seeds_.empty() && !saw_peer_;
    if (alone && now >= next_alone_warning_) {
      MURMUR_LOG_ERROR(
          "node {}: TRAINING ALONE: no other member has answered (seeds: {}); check "
          "the seeds' addresses, --cluster and the cluster key. Still trying them",
          peer_->id(), other_seeds_);
      next_alone_warning_ = now + std::chrono::seconds(10);
    }
    if (telemetry_ != nullptr && (!joined_reported_ || alone != alone_reported_)) {
      telemetry_->SetJoined(!alone, alone ? "training alone: no other member has answered "
                                            "(seeds: " +
                                                other_seeds_ + ")"
                                          : "joined");
      if (!alone && alone_reported_)
        MURMUR_LOG_INFO("node {}: a peer answered: no longer alone", peer_->id());
      joined_reported_ = true;
      alone_reported_ = alone;
    }
  }
  last_refresh_ = now;
}

bool GossipSession::Perform(std::vector<gossip::NodeAction> actions) {
  for (gossip::NodeAction& action : actions) {
    if (auto* send = std::get_if<gossip::SendTo>(&action)) {
      const TimePoint t0 = clock_.Now();
      std::vector<transport::Frame> frames;
      if (send->frame) frames.push_back(SharedFrame(std::move(send->frame)));
      peer_->SendTo(send->to, std::move(send->payload), std::move(frames));
      step_.send += clock_.Now() - t0;
    } else if (auto* a = std::get_if<gossip::Announce>(&action)) {
      peer_->SetProgress(a->step_clock, a->samples, a->finished);
    } else if (auto* c = std::get_if<gossip::ComputeStep>(&action)) {
      compute_asked_ = true;
      lr_ = c->lr;
    } else if (std::holds_alternative<gossip::ResetOptimizer>(action)) {
      work_.ResetOptimizerState();
    } else if (auto* e = std::get_if<gossip::Evaluate>(&action)) {
      const TimePoint t0 = clock_.Now();
      Evaluate(*e);
      step_.evaluate += clock_.Now() - t0;
    } else if (auto* w = std::get_if<gossip::Wait>(&action)) {
      wait_until_ = w->until;
    } else if (auto* f = std::get_if<gossip::Finished>(&action)) {
      if (telemetry_ != nullptr) telemetry_->SetFinished(f->reason);
      p_.finished = true;
    } else if (auto* over = std::get_if<gossip::RunOver>(&action)) {
      over_ = over->status;
      return false;
    }
  }
  return true;
}

void GossipSession::Evaluate(const gossip::Evaluate& e) {
  const std::optional<double> accuracy = work_.Evaluate(e.full);
  if (accuracy.has_value() && telemetry_ != nullptr) telemetry_->SetAccuracy(*accuracy);
  node_->Step(gossip::Evaluated{accuracy.value_or(-1), 0}, clock_.Now());
  // A fresh accuracy is always reported (time-to-accuracy reads it).
  if (!e.full) Report(true);
}

bool GossipSession::Next() {
  if (over_.has_value()) return false;
  if (!running_) {
    running_ = true;
    // The machine's first step, which may start training at once (a lone node, expect_members
    // met): after a resume from a checkpoint (machine().Resume), never before it.
    TakePause(clock_.Now());
    last_step_end_ = clock_.Now();
    RefreshMembers(clock_.Now());
  }
  while (Perform(node_->TakeOutput()) && !over_.has_value()) {
    if (stepped_ && node_->phase() != gossip::GossipNode::Phase::kTraining) CloseTrainingPhase();
    const TimePoint now = clock_.Now();
    if (now - last_refresh_ >= std::chrono::milliseconds(20)) RefreshMembers(now);
    if (!stop_sent_ && Stopping()) {
      stop_sent_ = true;
      node_->Step(gossip::StopRequested{}, now);
      continue;
    }
    if (!end_sent_ && end_training_.load()) {
      end_sent_ = true;
      node_->Step(gossip::StopRequested{.finish = true}, now);
      continue;
    }
    if (compute_asked_) {
      if (!stepped_) {
        // The training phase begins: joining and the wait for a model are not a step's time.
        stepped_ = true;
        step_ = StepTimes{};
        last_step_end_ = now;
        thread_cpu0_ = CpuSeconds(CLOCK_THREAD_CPUTIME_ID);
        process_cpu0_ = CpuSeconds(CLOCK_PROCESS_CPUTIME_ID);
      }
      step_start_ = now;
      return true;
    }
    const Duration wait =
        std::clamp<Duration>(wait_until_ - now, Duration(0), std::chrono::milliseconds(20));
    step_.waiting += Drain(wait);
    node_->Tick(clock_.Now());
    // Before training nothing else reports: say what the node waits for (joining, a snapshot).
    if (node_->phase() == gossip::GossipNode::Phase::kJoining ||
        node_->phase() == gossip::GossipNode::Phase::kAwaitingModel) {
      Report(false);
    }
  }
  return false;
}

void GossipSession::Computed(const StatusOr<std::optional<float>>& loss, int64_t rows,
                             Duration compute) {
  MURMUR_CHECK(compute_asked_) << "Computed without a step asked for by Next()";
  const Duration pause = injector_.AfterStep(compute);
  if (pause.count() > 0) std::this_thread::sleep_for(pause);
  compute_asked_ = false;
  Drain(Duration(0));  // what arrived meanwhile is applied before the round
  const bool has_loss = loss.ok() && loss->has_value();
  const bool ok = loss.ok() && (!has_loss || std::isfinite(**loss));
  if (!ok) {
    if (telemetry_ != nullptr) telemetry_->CountNonFiniteStep();
    MURMUR_LOG_WARN("node {}: step skipped: {}", peer_->id(),
                    loss.ok() ? fmt::format("the loss was {}", **loss) : loss.status().ToString());
  }
  const TimePoint round_start = clock_.Now();
  published_at_ = TimePoint{};
  node_->Step(gossip::StepComputed{ok, ok && has_loss ? **loss : 0.0, rows, has_loss}, round_start);
  const TimePoint end = clock_.Now();
  if (published_at_ != TimePoint{} && mixed_at_ >= published_at_) {
    // This step's round ran: compress, then mix; the rest of the machine's work (the gate for
    // the next step) is the driver's "other".
    step_.compress += published_at_ - round_start;
    step_.mix += mixed_at_ - published_at_;
  }
  // The step's wall time since the previous one ended, by phase; what no phase claims is the
  // driver's own (membership views, reports, handing messages to the peer) or, for a library
  // caller, its own time between steps.
  step_.compute = compute;
  step_.injected = pause;
  const Duration claimed = step_.compute + step_.compress + step_.mix + step_.apply +
                           step_.send + step_.waiting + step_.evaluate + step_.injected;
  step_.other = std::max(Duration(0), (end - last_step_end_) - claimed);
  last_step_end_ = end;
  AddPhases(step_);
  p_.phase_samples += rows;
  if (telemetry_ != nullptr) {
    telemetry_->ObserveStep(step_, rows);
    telemetry_->SetStepClock(static_cast<int64_t>(node_->state().step));
    if (node_->state().have_loss) telemetry_->SetLoss(node_->state().loss);
  }
  step_ = StepTimes{};
  Report(false);
}

// Progress for the caller, at most once per report_interval (building it takes the peer's locks).
void GossipSession::Report(bool force) {
  const TimePoint now = clock_.Now();
  if (!on_progress_ || (!force && now < next_report_)) return;
  next_report_ = now + o_.report_interval;
  Fill(now);
  on_progress_(p_);
}

void GossipSession::Fill(TimePoint now) {
  const auto snap = peer_->Snapshot();
  static_cast<gossip::GossipNodeState&>(p_) = node_->state();
  p_.bytes_sent = snap.transport.sent_bytes;
  p_.bytes_received = snap.transport.received_bytes;
  p_.wait_s = ToSeconds(node_->soft_sync().total_wait());
  p_.stragglers = node_->Stragglers(now);
  p_.stragglers_detected = node_->soft_sync().stragglers_detected();
  p_.perplexity = o_.language_model && p_.have_loss ? std::exp(p_.loss) : -1;
  p_.elapsed_s = ToSeconds(now - start_);
  p_.phase = node_->phase();
  p_.activity = node_->Activity();
  const kernels::DeviceMemoryStats memory = kernels::GetDeviceMemoryStats();
  p_.device_memory_bytes = memory.allocated_bytes;
  p_.host_device_bytes = memory.transferred_bytes;
  SampleMemory(snap);
}

StatusOr<GossipProgress> GossipSession::End() {
  MURMUR_CHECK(over_.has_value()) << "End before Next() returned false";
  if (stepped_) CloseTrainingPhase();
  // A run that never had a peer says so at its end, also one short enough to end before the
  // periodic warning (a busy machine decides which comes first).
  if (over_->ok() && !saw_peer_ && !other_seeds_.empty() && !alone_ended_reported_) {
    alone_ended_reported_ = true;
    MURMUR_LOG_ERROR(
        "node {}: TRAINED ALONE: no other member ever answered (seeds: {}); check the seeds' "
        "addresses, --cluster and the cluster key",
        peer_->id(), other_seeds_);
  }
  if (!over_reported_) {
    over_reported_ = true;
    Fill(clock_.Now());
    if (on_progress_) on_progress_(p_);
  }
  if (!over_->ok()) return *over_;
  return p_;
}

void GossipSession::Leave() {
  if (left_ || peer_ == nullptr) return;
  left_ = true;
  peer_->Leave();
}

}  // namespace murmur::node
