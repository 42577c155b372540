#include "node/gossip_trainer.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <thread>

#include "base/log.h"
#include "coding/update_codec.h"
#include "coding/vector_ops.h"
#include "node/telemetry.h"

namespace murmur::node {
namespace {

using gossip::NodeId;

// Everything one run needs, so the steps below are small functions over shared state.
class Runner {
 public:
  Runner(const GossipTrainerOptions& o, Model<float>& model, const Dataset& train,
         std::vector<int64_t> rows, const Dataset* test, const GossipProgressFn& on_progress,
         const std::function<bool()>& stop)
      : o_(o),
        model_(model),
        trainer_(model, train, std::move(rows), test, o.train, clock_),
        test_(test),
        on_progress_(on_progress),
        stop_(stop),
        sync_(o.soft_sync),
        injector_(o.straggler) {
    if (test != nullptr) {
      eval_subset_ = *test;
      eval_subset_.Truncate(o.eval_samples);
    }
  }

  ~Runner() {
    if (o_.telemetry != nullptr) o_.telemetry->AttachPeer(nullptr);  // before peer_ goes
  }

  StatusOr<GossipProgress> Run();

 private:
  // Takes a run-time change of the straggler injection (the admin port's /straggler).
  void ApplyInjection();
  void CountRejected(std::string_view reason);
  Status Join();
  void Drain(std::chrono::milliseconds wait);
  void Handle(TrainingMessage& m);
  void ServeModel(NodeId to);
  void RefreshMembers();
  bool BudgetSpent();
  void CatchUp(const std::vector<NodeId>& view, const std::vector<NodeId>& mixing);
  Status GossipRound(const std::vector<NodeId>& view);
  void Evaluate(bool full);
  void Send(std::vector<gossip::ChocoOutgoing> out);
  void Report(bool force);
  void AdoptReceivedModel();
  int CurrentH() const;
  std::vector<NodeId> MixingPeers(const std::vector<NodeId>& view) const;
  bool Stopping() const { return stop_ && stop_(); }

  const GossipTrainerOptions& o_;
  Model<float>& model_;
  RealClock clock_;
  Trainer trainer_;
  const Dataset* test_;
  Dataset eval_subset_;
  const GossipProgressFn& on_progress_;
  const std::function<bool()>& stop_;
  gossip::SoftSync sync_;
  StragglerInjector injector_;
  std::unique_ptr<PeerNode> peer_;
  std::unique_ptr<gossip::ChocoGossip> choco_;
  TimePoint start_{};
  GossipProgress p_;
  std::vector<gossip::MemberEntry> members_;
  uint64_t best_clock_ = 0;     // most advanced live peer
  bool peer_finished_ = false;
  // A model snapshot asked for (join, or a catch-up with no ready copy).
  NodeId awaiting_model_from_ = 0;
  TimePoint model_asked_at_{};
  std::optional<std::vector<float>> received_model_;
  uint64_t received_model_clock_ = 0;
  uint64_t rejections_logged_ = 0;
  double loss_ema_ = 0;
  bool have_loss_ = false;
  TimePoint next_report_{};
  uint64_t injection_version_ = ~uint64_t{0};  // none taken yet
  Duration waited_{0};  // blocked in the gate or a pause since the last step
};

void Runner::ApplyInjection() {
  if (o_.telemetry != nullptr) {
    ApplyInjectionChange(o_.telemetry->straggler(), injection_version_, injector_, *peer_);
  }
}

void Runner::CountRejected(std::string_view reason) {
  ++p_.rejected_messages;
  if (o_.telemetry != nullptr) o_.telemetry->CountRejected(reason);
}

Status Runner::Join() {
  // Wait to see the cluster: the expected size, or a short while.
  const TimePoint deadline = clock_.Now() + (o_.expect_members > 0 ? std::chrono::seconds(30) : o_.join_wait);
  while (clock_.Now() < deadline && !Stopping()) {
    if (o_.expect_members > 0 &&
        static_cast<int>(peer_->LiveView().size()) >= o_.expect_members) {
      break;
    }
    Drain(std::chrono::milliseconds(20));
  }
  RefreshMembers();
  std::vector<float> x0(static_cast<size_t>(model_.NumParams()));
  model_.Initialize(std::span<float>(x0), o_.init_seed);
  auto x = trainer_.params();
  if (o_.per_node_init) {
    model_.Initialize(x, o_.init_seed ^ (peer_->id() * 0x9E3779B97F4A7C15ULL));
  } else {
    std::copy(x0.begin(), x0.end(), x.begin());
  }
  // A running cluster: take the most advanced live peer's model (new node, or a restart). Peers
  // only a few steps in are starting together with this node, which then starts like them.
  const bool running = best_clock_ > static_cast<uint64_t>(o_.join_after_steps);
  for (int attempt = 0; attempt < 3 && running && !Stopping(); ++attempt) {
    NodeId best = 0;
    uint64_t clock = 0;
    for (const auto& m : members_) {
      if (m.id != peer_->id() && m.state == gossip::MemberState::kAlive && m.step_clock > clock) {
        best = m.id, clock = m.step_clock;
      }
    }
    if (best == 0) break;
    awaiting_model_from_ = best;
    model_asked_at_ = clock_.Now();
    peer_->SendTo(best, gossip::SnapshotRequest{0, true}, {});
    const TimePoint until = clock_.Now() + std::chrono::seconds(5);
    while (!received_model_.has_value() && clock_.Now() < until && !Stopping()) {
      Drain(std::chrono::milliseconds(20));
    }
    if (received_model_.has_value()) break;
    MURMUR_LOG_WARN("node {}: no model snapshot from {} in 5 s; asking again", peer_->id(), best);
    RefreshMembers();
  }
  bool from_initial = !o_.per_node_init;
  if (received_model_.has_value()) {
    AdoptReceivedModel();
    p_.joined_by_snapshot = true;
    from_initial = false;
    MURMUR_LOG_INFO("node {}: joined a running cluster at step {} with a peer's model",
                    peer_->id(), p_.step);
  }
  gossip::ChocoOptions c;
  c.self = peer_->id();
  c.incarnation = peer_->Snapshot().incarnation;
  c.dimension = static_cast<uint32_t>(model_.NumParams());
  c.compressor = o_.compressor;
  c.gamma = o_.gamma;
  c.sampling = o_.sampling;
  MURMUR_ASSIGN_OR_RETURN(choco_, gossip::ChocoGossip::Create(c, x, x0, from_initial));
  peer_->SetProgress(static_cast<uint64_t>(p_.step), 0, false);
  return OkStatus();
}

void Runner::Drain(std::chrono::milliseconds wait) {
  auto m = peer_->TakeTraining(wait);
  for (int i = 0; m.has_value() && i < 4096; ++i) {
    Handle(*m);
    m = peer_->TakeTraining(std::chrono::milliseconds(0));
  }
}

void Runner::Handle(TrainingMessage& m) {
  const gossip::Envelope& e = m.envelope;
  sync_.Observe(e.sender_id, e.step_clock);
  std::span<const std::byte> frame;
  if (!m.frames.empty()) frame = m.frames[0].bytes();
  if (const auto* r = std::get_if<gossip::SnapshotRequest>(&e.payload); r != nullptr && r->model) {
    return ServeModel(e.sender_id);
  }
  if (const auto* r = std::get_if<gossip::SnapshotReply>(&e.payload); r != nullptr && r->model) {
    if (e.sender_id != awaiting_model_from_) return;  // late or unasked: ignore
    coding::Update u;
    coding::DecodeFailure failure = coding::DecodeFailure::kNone;
    Status s = coding::DecodeUpdate(frame, static_cast<uint32_t>(model_.NumParams()), u, &failure);
    if (!s.ok() || !u.dense) {
      CountRejected(failure == coding::DecodeFailure::kNone ? kRejectProtocol
                                                            : coding::DecodeFailureName(failure));
      MURMUR_LOG_WARN("node {}: model snapshot from {} rejected ({}): {}", peer_->id(), e.sender_id,
                      coding::DecodeFailureName(failure), s.ToString());
      return;
    }
    received_model_ = std::move(u.values);
    received_model_clock_ = std::max(r->round, e.step_clock);
    return;
  }
  if (std::holds_alternative<gossip::CodedMessage>(e.payload)) {
    CountRejected(kRejectWrongMode);
    if (rejections_logged_++ % 1000 == 0) {
      MURMUR_LOG_WARN("node {}: a CodedReduce message from {} in gossip mode: is every node "
                      "started with the same --mode?", peer_->id(), e.sender_id);
    }
    return;
  }
  if (!choco_) return;  // still joining: the streams start afterwards
  const auto result = choco_->Step({e.sender_id, e.incarnation, e.payload, frame}, clock_.Now());
  ++p_.verdicts[gossip::ChocoVerdictName(result.verdict)];
  if (o_.telemetry != nullptr) {
    if (result.verdict == gossip::ChocoVerdict::kApplied &&
        std::holds_alternative<gossip::UpdateHeader>(e.payload)) {
      o_.telemetry->ObserveStaleness(static_cast<double>(p_.step) - static_cast<double>(e.step_clock));
    } else if (result.verdict == gossip::ChocoVerdict::kAwaitingSnapshot ||
               result.verdict == gossip::ChocoVerdict::kStaleIncarnation) {
      o_.telemetry->AddLateDropped(1);
    }
  }
  if (result.verdict == gossip::ChocoVerdict::kRejected) {
    CountRejected(result.failure == coding::DecodeFailure::kNone
                      ? kRejectProtocol
                      : coding::DecodeFailureName(result.failure));
    if (rejections_logged_++ % 1000 == 0) {
      MURMUR_LOG_WARN("node {}: update from {} rejected ({}, {} so far): {}", peer_->id(),
                      e.sender_id, coding::DecodeFailureName(result.failure), p_.rejected_messages,
                      result.status.ToString());
    }
  }
  Send(choco_->TakeOutput());
}

void Runner::ServeModel(NodeId to) {
  peer_->SendTo(to, gossip::SnapshotReply{static_cast<uint64_t>(p_.step),
                                          static_cast<uint32_t>(model_.NumParams()), true},
                {DenseFrame(trainer_.params())});
}

void Runner::Send(std::vector<gossip::ChocoOutgoing> out) {
  for (auto& m : out) {
    std::vector<transport::Frame> frames;
    if (m.frame) frames.push_back(SharedFrame(std::move(m.frame)));
    peer_->SendTo(m.to, std::move(m.payload), std::move(frames));
  }
}

void Runner::RefreshMembers() {
  members_ = peer_->Members();
  best_clock_ = 0;
  p_.cluster_samples = 0;
  p_.live_members = 0;
  for (const auto& m : members_) {
    p_.cluster_samples += static_cast<int64_t>(m.id == peer_->id() ? p_.samples : m.samples);
    if (m.id == peer_->id()) continue;
    if (m.finished) peer_finished_ = true;
    if (m.state == gossip::MemberState::kAlive || m.state == gossip::MemberState::kSuspect) {
      ++p_.live_members;
      sync_.Observe(m.id, m.step_clock);
      best_clock_ = std::max(best_clock_, sync_.ClockOf(m.id));
    } else {
      sync_.Forget(m.id);
      if (choco_) choco_->Forget(m.id);
    }
  }
  ++p_.live_members;  // this node
}

bool Runner::BudgetSpent() {
  const double elapsed = ToSeconds(clock_.Now() - start_);
  if (o_.epochs > 0 && p_.cluster_samples >= p_.budget_samples) {
    p_.end_reason = "epochs";
  } else if (o_.target_accuracy > 0 && p_.accuracy >= o_.target_accuracy) {
    p_.end_reason = "accuracy";
  } else if (o_.time_limit.count() > 0 && elapsed >= ToSeconds(o_.time_limit)) {
    p_.end_reason = "time";
  } else if (peer_finished_) {
    p_.end_reason = "peer";
  } else if (Stopping()) {
    p_.end_reason = "stopped";
  } else {
    return false;
  }
  return true;
}

std::vector<NodeId> Runner::MixingPeers(const std::vector<NodeId>& view) const {
  std::vector<NodeId> out;
  for (const auto& n : choco_->Peers(view, p_.rounds).receive_from) out.push_back(n.id);
  return out;
}

// Installs the model snapshot that arrived (join or catch-up) with its step clock.
void Runner::AdoptReceivedModel() {
  auto x = trainer_.params();
  std::copy(received_model_->begin(), received_model_->end(), x.begin());
  trainer_.ResetOptimizerState();
  p_.step = std::max(p_.step, static_cast<int64_t>(received_model_clock_));
  received_model_.reset();
  awaiting_model_from_ = 0;
}

void Runner::CatchUp(const std::vector<NodeId>& view, const std::vector<NodeId>& mixing) {
  auto x = trainer_.params();
  std::vector<float> average(x.size());
  uint64_t clock = 0;
  for (NodeId id : mixing) clock = std::max(clock, sync_.ClockOf(id));
  if (clock > static_cast<uint64_t>(p_.step) && choco_->NeighbourAverage(view, average)) {
    std::copy(average.begin(), average.end(), x.begin());
    trainer_.ResetOptimizerState();
    MURMUR_LOG_DEBUG("node {}: caught up from step {} to {} with the neighbours' average",
                     peer_->id(), p_.step, clock);
    p_.step = static_cast<int64_t>(clock);
    ++p_.catchups;
    return;
  }
  // No fresher neighbour copy. A dense model costs as much as ~100 compressed rounds, so only a
  // node far behind (4 S: it was stopped or cut off, not merely slow) asks the most advanced
  // peer for its model, at most once per 2 s.
  const uint64_t far = 4 * static_cast<uint64_t>(std::max<int64_t>(o_.soft_sync.max_lead, 1));
  if (best_clock_ < static_cast<uint64_t>(p_.step) + far) return;
  if (awaiting_model_from_ != 0 && clock_.Now() - model_asked_at_ < std::chrono::seconds(2)) return;
  for (const auto& m : members_) {
    if (m.id != peer_->id() && m.state == gossip::MemberState::kAlive &&
        sync_.ClockOf(m.id) == best_clock_) {
      awaiting_model_from_ = m.id;
      model_asked_at_ = clock_.Now();
      peer_->SendTo(m.id, gossip::SnapshotRequest{0, true}, {});
      ++p_.model_requests;
      return;
    }
  }
}

int Runner::CurrentH() const {
  if (o_.post_local_epoch >= 0 && p_.local_epoch >= o_.post_local_epoch) return o_.post_local_steps;
  return o_.local_steps;
}

Status Runner::GossipRound(const std::vector<NodeId>& view) {
  const uint64_t self_clock = static_cast<uint64_t>(p_.step);
  auto damping = [&](NodeId id) { return sync_.Damping(self_clock, id); };
  auto stats = choco_->Round(trainer_.params(), view, p_.rounds, damping);
  if (!stats.ok()) return stats.status();
  ++p_.rounds;
  Send(choco_->TakeOutput());
  p_.consensus_distance = stats->consensus_distance;
  if (o_.telemetry != nullptr) {
    const auto x = trainer_.params();
    const auto x_hat = choco_->public_copy();
    double residual = 0;
    for (size_t i = 0; i < x.size() && i < x_hat.size(); ++i) {
      const double d = static_cast<double>(x[i]) - static_cast<double>(x_hat[i]);
      residual += d * d;
    }
    o_.telemetry->SetCompression(
        x.empty() ? 0.0 : static_cast<double>(stats->sent_values) / static_cast<double>(x.size()),
        std::sqrt(residual));
    o_.telemetry->SetConsensusDistance(stats->consensus_distance);
  }
  p_.gamma = choco_->gamma();
  p_.gamma_halvings = choco_->gamma_halvings();
  if (stats->gamma_halved) {
    MURMUR_LOG_WARN("node {}: consensus distance grew for {} checks in a row ({:.3g} relative): "
                    "halving the consensus step to {:.4g} (set --gamma lower to avoid this)",
                    peer_->id(), choco_->options().guard_checks, stats->consensus_distance,
                    choco_->gamma());
  }
  return OkStatus();
}

void Runner::Evaluate(bool full) {
  if (test_ == nullptr) return;
  const Dataset& data = full ? *test_ : eval_subset_;
  auto e = node::Evaluate<float>(model_, trainer_.params(), data);
  if (e.ok()) {
    p_.accuracy = e->accuracy;
    p_.accuracy_step = p_.step;
    if (o_.telemetry != nullptr) o_.telemetry->SetAccuracy(e->accuracy);
  }
}

// Progress for the caller, at most once per report_interval (building it takes the peer's locks).
void Runner::Report(bool force) {
  const TimePoint now = clock_.Now();
  if (!on_progress_ || (!force && now < next_report_)) return;
  next_report_ = now + o_.report_interval;
  const auto snap = peer_->Snapshot();
  p_.bytes_sent = snap.transport.sent_bytes;
  p_.bytes_received = snap.transport.received_bytes;
  p_.elapsed_s = ToSeconds(clock_.Now() - start_);
  p_.wait_s = ToSeconds(sync_.total_wait());
  p_.stragglers = sync_.Stragglers(clock_.Now());
  p_.stragglers_detected = sync_.stragglers_detected();
  p_.loss = loss_ema_;
  on_progress_(p_);
}

StatusOr<GossipProgress> Runner::Run() {
  MURMUR_ASSIGN_OR_RETURN(peer_, PeerNode::Start(o_.peer));
  p_.id = peer_->id();
  peer_->SetSendInjection(o_.straggler.send_delay, o_.straggler.drop, o_.straggler.seed);
  NodeTelemetry* const telemetry = o_.telemetry;
  if (telemetry != nullptr) {
    telemetry->AttachPeer(peer_.get());
    telemetry->SetJoined(false, "joining: waiting for the cluster and its model");
    ApplyInjection();
  }
  start_ = clock_.Now();
  p_.budget_samples = o_.epochs > 0 ? static_cast<int64_t>(std::ceil(o_.epochs * static_cast<double>(o_.dataset_rows))) : 0;
  MURMUR_RETURN_IF_ERROR(Join());
  if (telemetry != nullptr) telemetry->SetJoined(true, "joined");
  const int64_t shard = std::max<int64_t>(1, trainer_.shard_rows());
  TimePoint last_refresh{};
  TimePoint last_step_end = clock_.Now();
  while (true) {
    Drain(std::chrono::milliseconds(0));
    const TimePoint now = clock_.Now();
    if (now - last_refresh >= std::chrono::milliseconds(20)) {
      RefreshMembers();
      ApplyInjection();
      if (telemetry != nullptr) {
        telemetry->SetStragglers(sync_.Stragglers(now), sync_.stragglers_detected());
      }
      last_refresh = now;
    }
    if (BudgetSpent()) break;
    if (injector_.Paused(p_.step, best_clock_)) {
      const TimePoint w0 = clock_.Now();
      Drain(std::chrono::milliseconds(10));
      RefreshMembers();
      ApplyInjection();
      waited_ += clock_.Now() - w0;
      continue;
    }
    const std::vector<NodeId> view = peer_->LiveView();
    const std::vector<NodeId> mixing = MixingPeers(view);
    if (sync_.ShouldCatchUp(static_cast<uint64_t>(p_.step), best_clock_)) CatchUp(view, mixing);
    if (received_model_.has_value()) {
      AdoptReceivedModel();
      ++p_.catchups;
    }
    const auto gate = sync_.Gate(static_cast<uint64_t>(p_.step), mixing, now);
    for (NodeId id : gate.newly_marked) {
      MURMUR_LOG_INFO("node {}: waited {:.2f} s for node {} (at a stretch or in recent short "
                      "waits; step {} vs {}): marked a straggler, not waiting for it for {:.0f} s",
                      peer_->id(), ToSeconds(o_.soft_sync.max_wait), id, sync_.ClockOf(id),
                      p_.step, ToSeconds(o_.soft_sync.straggler_hold));
    }
    if (!gate.proceed) {
      const TimePoint w0 = clock_.Now();
      Drain(std::chrono::milliseconds(1));
      waited_ += clock_.Now() - w0;
      continue;
    }
    const TimePoint t0 = clock_.Now();
    auto loss = trainer_.Step();
    const Duration compute = clock_.Now() - t0;
    if (!loss.ok()) {
      ++p_.skipped_steps;
      if (telemetry != nullptr) telemetry->CountNonFiniteStep();
      MURMUR_LOG_WARN("node {}: step {} skipped: {}", peer_->id(), p_.step, loss.status().ToString());
    } else {
      loss_ema_ = have_loss_ ? 0.98 * loss_ema_ + 0.02 * *loss : *loss;
      have_loss_ = true;
    }
    ++p_.step;
    ++p_.local_steps;
    p_.samples += trainer_.last_batch_rows();
    p_.local_epoch = static_cast<double>(p_.samples) / static_cast<double>(shard);
    const Duration pause = injector_.AfterStep(compute);
    if (pause.count() > 0) std::this_thread::sleep_for(pause);
    if (p_.local_steps % CurrentH() == 0) {
      Drain(std::chrono::milliseconds(0));
      if (Status s = GossipRound(view); !s.ok()) {
        MURMUR_LOG_ERROR("node {}: {}", peer_->id(), s.ToString());
        return s;
      }
    }
    peer_->SetProgress(static_cast<uint64_t>(p_.step), static_cast<uint64_t>(p_.samples), false);
    uint64_t lag = 0;
    for (NodeId id : mixing) lag = std::max(lag, sync_.Lag(static_cast<uint64_t>(p_.step), id));
    p_.max_lag = lag;
    if (telemetry != nullptr) {
      // The step's wall time since the previous one ended, by phase; what is neither compute,
      // injection nor waiting is communication (handling messages, compressing, encoding).
      const TimePoint end = clock_.Now();
      StepTimes t;
      t.compute = compute;
      t.injected = pause;
      t.waiting = waited_;
      t.communication = std::max(Duration(0), (end - last_step_end) - compute - pause - waited_);
      telemetry->ObserveStep(t, trainer_.last_batch_rows());
      telemetry->SetStepClock(p_.step);
      if (have_loss_) telemetry->SetLoss(loss_ema_);
      last_step_end = end;
    }
    waited_ = Duration(0);
    const bool evaluated = o_.eval_every > 0 && p_.local_steps % o_.eval_every == 0;
    if (evaluated) Evaluate(false);
    Report(evaluated);  // a fresh accuracy is always reported (time-to-accuracy reads it)
  }
  // The end: a full evaluation, "finished" gossiped so every member stops, a short linger to
  // answer snapshot requests, then a graceful leave.
  Evaluate(true);
  if (telemetry != nullptr) telemetry->SetFinished(p_.end_reason);
  p_.finished = true;
  peer_->SetProgress(static_cast<uint64_t>(p_.step), static_cast<uint64_t>(p_.samples), true);
  const TimePoint linger_until = clock_.Now() + o_.linger;
  while (clock_.Now() < linger_until) Drain(std::chrono::milliseconds(10));
  Report(true);
  if (!o_.save_model.empty()) MURMUR_RETURN_IF_ERROR(SaveParams(o_.save_model, trainer_.params()));
  MURMUR_LOG_INFO("node {}: done ({}) at step {}, test accuracy {:.4f}", peer_->id(), p_.end_reason,
                  p_.step, p_.accuracy);
  peer_->Leave();
  return p_;
}

}  // namespace

Status GossipTrainerOptions::Validate() const {
  if (epochs <= 0 && target_accuracy <= 0 && time_limit.count() <= 0) {
    return InvalidArgumentError("gossip training needs a budget: epochs, target_accuracy or time_limit");
  }
  if (epochs > 0 && dataset_rows <= 0) return InvalidArgumentError("an epoch budget needs the data set size");
  if (local_steps < 1 || post_local_steps < 1) {
    return InvalidArgumentError("local_steps and post_local_steps must be at least 1");
  }
  if (target_accuracy < 0 || target_accuracy > 1) {
    return InvalidArgumentError("target_accuracy is a fraction in [0, 1]");
  }
  if (eval_samples < 1) return InvalidArgumentError("eval_samples must be at least 1");
  return OkStatus();
}

StatusOr<GossipProgress> RunGossipTrainer(const GossipTrainerOptions& options, Model<float>& model,
                                          const Dataset& train, std::vector<int64_t> rows,
                                          const Dataset* test, const GossipProgressFn& on_progress,
                                          const std::function<bool()>& stop) {
  MURMUR_RETURN_IF_ERROR(options.Validate());
  Runner runner(options, model, train, std::move(rows), test, on_progress, stop);
  return runner.Run();
}

Status SaveParams(const std::string& path, std::span<const float> params) {
  const std::string tmp = path + ".tmp";
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(params.data()), static_cast<std::streamsize>(params.size_bytes()));
  out.close();
  if (!out) return UnavailableError("cannot write the model to '" + tmp + "'");
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return UnavailableError("cannot rename '" + tmp + "' to '" + path + "'");
  }
  return OkStatus();
}

StatusOr<std::vector<float>> LoadParams(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return NotFoundError("no saved model at '" + path + "'");
  const std::streamsize size = in.tellg();
  if (size % 4 != 0) return DataLossError("'" + path + "' is not a whole number of float32 values");
  std::vector<float> params(static_cast<size_t>(size / 4));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(params.data()), size);
  if (!in) return DataLossError("cannot read '" + path + "'");
  return params;
}

}  // namespace murmur::node
