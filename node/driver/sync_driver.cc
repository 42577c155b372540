#include "node/driver/sync_driver.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <numeric>
#include <thread>

#include "base/check.h"
#include "base/log.h"
#include "gossip/sync_node.h"
#include "kernels/memory.h"
#include "node/observe/telemetry.h"
#include "node/train/partial_gradient.h"
#include "node/train/trainer.h"

namespace murmur::node {
namespace {

using gossip::NodeId;

constexpr int64_t kEvalTrainRows = 10000;  // training loss is measured on at most this many rows

class SyncDriver : public gossip::SyncNodeObserver {
 public:
  SyncDriver(const CodedTrainerOptions& o, PeerNode& peer, Model<float>& model, const Dataset& train,
             const Dataset* test, Duration report_interval,
             const std::function<void(const CodedProgress&)>& on_progress,
             const std::function<bool()>& stop)
      : o_(o),
        peer_(peer),
        model_(model),
        train_(train),
        test_(test),
        report_interval_(report_interval),
        on_progress_(on_progress),
        stop_(stop),
        injector_(o.straggle),
        partial_(model, train, o.global_batch, o.seed),
        device_(model.device()) {}

  StatusOr<CodedProgress> Run(gossip::SyncPlan plan);

  void Rejected(std::string_view reason) override {
    if (o_.telemetry != nullptr) o_.telemetry->CountRejected(reason);
  }
  void Staleness(double iterations) override {
    if (o_.telemetry != nullptr) o_.telemetry->ObserveStaleness(iterations);
  }

 private:
  // `buffer` (on device_) = `host`, reallocated when the size differs.
  template <typename T>
  Status Put(std::span<const T> host, kernels::Buffer<T>& buffer);
  // This rank's part for `iteration` at `params` (device memory), then the injected delay. The
  // partial is in device memory, valid until the next computation.
  std::span<const float> ComputeWithInjection(uint64_t iteration, std::span<const float> params);
  void Drain(Duration wait);
  bool Perform(std::vector<gossip::NodeAction> actions);
  void OnAssembled();
  void Evaluate(std::span<const float> params);
  void Report(bool final);
  void ApplyInjection() {
    if (o_.telemetry != nullptr) {
      ApplyInjectionChange(o_.telemetry->straggler(), injection_version_, injector_, peer_);
    }
  }

  const CodedTrainerOptions& o_;
  PeerNode& peer_;
  Model<float>& model_;
  const Dataset& train_;
  const Dataset* test_;
  const Duration report_interval_;
  const std::function<void(const CodedProgress&)>& on_progress_;
  const std::function<bool()>& stop_;
  RealClock clock_;
  StragglerInjector injector_;
  PartialGradient partial_;
  // The model's device, which is also the SyncNode's: the node hands the iteration's model and
  // takes the partial in device memory (the decode and the SGD step run there too).
  const kernels::Device device_;
  kernels::Buffer<float> params_dev_;  // a model to evaluate
  std::unique_ptr<gossip::SyncNode> node_;

  TimePoint start_{};
  TimePoint last_report_{};
  TimePoint last_refresh_{};
  TimePoint wait_until_{};
  std::optional<gossip::ComputeGradient> compute_;  // asked for, not computed yet
  bool assembled_ = false;
  bool stop_sent_ = false;
  std::optional<Status> over_;
  std::optional<Dataset> eval_train_;
  uint64_t injection_version_ = ~uint64_t{0};
  Duration waited_{0};  // blocked waiting for messages since the last own computation
  TimePoint last_compute_end_{};
  CodedProgress p_;
};

template <typename T>
Status SyncDriver::Put(std::span<const T> host, kernels::Buffer<T>& buffer) {
  if (buffer.size() != host.size()) {
    MURMUR_ASSIGN_OR_RETURN(buffer, kernels::Buffer<T>::Create(device_, host.size()));
  }
  return buffer.CopyFromHost(host);
}

std::span<const float> SyncDriver::ComputeWithInjection(uint64_t iteration,
                                                        std::span<const float> params) {
  const TimePoint t0 = clock_.Now();
  auto partial = partial_.Compute(iteration, node_->own(), params);
  MURMUR_CHECK_OK(partial.status());  // shapes were checked when the run started
  const Duration compute = clock_.Now() - t0;
  p_.compute_s += ToSeconds(compute);
  const Duration extra = injector_.AfterStep(compute);
  if (extra.count() > 0) {
    p_.injected_s += ToSeconds(extra);
    std::this_thread::sleep_for(extra);
  }
  if (o_.telemetry != nullptr) {
    // One own computation is this rank's step: since the previous one ended it waited for the
    // model (or the ring's neighbours), handled messages, computed and slept the injection.
    const TimePoint end = clock_.Now();
    StepTimes t;
    t.compute = compute;
    t.injected = extra;
    t.waiting = std::min(waited_, std::max(Duration(0), t0 - last_compute_end_));
    t.communication = std::max(Duration(0), (t0 - last_compute_end_) - t.waiting);
    o_.telemetry->ObserveStep(t, static_cast<int64_t>(node_->own().size()));
    last_compute_end_ = end;
  }
  waited_ = Duration(0);
  return *partial;
}

void SyncDriver::Drain(Duration wait) {
  const TimePoint w0 = clock_.Now();
  auto m = peer_.TakeTraining(wait);
  if (wait.count() > 0) waited_ += clock_.Now() - w0;
  for (int i = 0; m.has_value() && i < 4096; ++i) {
    const gossip::Envelope& e = m->envelope;
    gossip::Incoming in{e.sender_id, e.incarnation, e.step_clock, e.payload, {}, m->frames.size()};
    if (!m->frames.empty()) in.frame = m->frames[0].bytes();
    node_->Step(in, clock_.Now());
    m = peer_.TakeTraining(Duration(0));
  }
}

void SyncDriver::OnAssembled() {
  assembled_ = true;
  p_.rank = node_->rank();
  p_.role = node_->role();
  p_.own_samples = static_cast<int64_t>(node_->own().size());
  start_ = clock_.Now();
  last_compute_end_ = start_;
  if (o_.telemetry != nullptr) {
    o_.telemetry->SetRole(p_.rank, p_.role);
    o_.telemetry->SetJoined(true, "assembled");
    ApplyInjection();
  }
}

bool SyncDriver::Perform(std::vector<gossip::NodeAction> actions) {
  for (gossip::NodeAction& action : actions) {
    if (!assembled_ && node_->assembled()) OnAssembled();
    if (auto* send = std::get_if<gossip::SendTo>(&action)) {
      std::vector<transport::Frame> frames;
      if (send->frame) frames.push_back(SharedFrame(std::move(send->frame)));
      peer_.SendTo(send->to, std::move(send->payload), std::move(frames));
    } else if (auto* a = std::get_if<gossip::Announce>(&action)) {
      peer_.SetProgress(a->step_clock, a->samples, a->finished);
    } else if (auto* c = std::get_if<gossip::ComputeGradient>(&action)) {
      compute_ = std::move(*c);  // after every send of this batch has gone out
    } else if (auto* e = std::get_if<gossip::Evaluate>(&action)) {
      Evaluate(e->model);
    } else if (auto* w = std::get_if<gossip::Wait>(&action)) {
      wait_until_ = w->until;
    } else if (auto* f = std::get_if<gossip::Finished>(&action)) {
      if (o_.telemetry != nullptr) {
        o_.telemetry->SetFinished(f->reason == "iterations" || f->reason == "time" ? "iterations" : "stopped");
      }
    } else if (auto* over = std::get_if<gossip::RunOver>(&action)) {
      over_ = over->status;
      return false;
    }
  }
  return true;
}

void SyncDriver::Evaluate(std::span<const float> params) {
  if (!eval_train_) {
    eval_train_ = train_;
    eval_train_->Truncate(kEvalTrainRows);
    eval_train_->Densify();  // evaluated periodically: convert its rows once
  }
  // The model's copy on its device (on the CPU a plain copy).
  if (Status s = Put<float>(params, params_dev_); !s.ok()) {
    node_->Step(gossip::Evaluated{std::nan(""), std::nan("")}, clock_.Now());
    return;
  }
  auto loss = murmur::node::Evaluate<float>(model_, params_dev_.span(), *eval_train_);
  double accuracy = std::nan("");
  if (test_ != nullptr && test_->rows > 0) {
    auto acc = murmur::node::Evaluate<float>(model_, params_dev_.span(), *test_);
    if (acc.ok()) accuracy = acc->accuracy;
  }
  node_->Step(gossip::Evaluated{accuracy, loss.ok() ? loss->loss : std::nan("")}, clock_.Now());
}

void SyncDriver::Report(bool final) {
  const TimePoint now = clock_.Now();
  const gossip::SyncNodeState& s = node_->state();
  if (assembled_) ApplyInjection();
  if (o_.telemetry != nullptr) {
    if (!assembled_) o_.telemetry->SetJoined(false, node_->detail());
    // Superseded before assembly = arrived after the sender was done with it.
    gossip::CodedStats stats = node_->stats();
    stats.late_dropped += s.early_dropped;
    o_.telemetry->SetCodedStats(stats);
    o_.telemetry->SetStepClock(static_cast<int64_t>(s.iteration));
    o_.telemetry->SetLoss(s.loss);
    o_.telemetry->SetAccuracy(s.accuracy);
  }
  if (!final && now - last_report_ < report_interval_) return;
  last_report_ = now;
  static_cast<gossip::SyncNodeState&>(p_) = s;
  p_.elapsed_s = assembled_ ? ToSeconds(now - start_) : 0;
  p_.stats = node_->stats();
  const transport::TransportStats wire = peer_.Snapshot().transport;
  p_.bytes_sent = wire.sent_bytes;
  p_.bytes_received = wire.received_bytes;
  p_.final = final;
  if (on_progress_ && (assembled_ || final)) on_progress_(p_);
}

StatusOr<CodedProgress> SyncDriver::Run(gossip::SyncPlan plan) {
  p_.mode = o_.mode;
  p_.accuracy = std::nan("");
  p_.loss = std::nan("");
  std::vector<float> initial(static_cast<size_t>(model_.NumParams()));
  model_.Initialize(initial, o_.seed);
  gossip::SyncNodeOptions so = o_.node;
  so.self = peer_.id();
  so.batch = partial_.batch();
  auto schedule = CodedSchedule(o_, train_.rows);
  if (!schedule.ok()) return schedule.status();
  so.lr_schedule = *schedule;
  so.device = device_;
  MURMUR_ASSIGN_OR_RETURN(node_, gossip::SyncNode::Create(std::move(plan), so, std::move(initial), clock_.Now()));
  node_->set_observer(this);
  if (o_.straggle.send_delay.count() > 0 || o_.straggle.drop > 0) {
    peer_.SetSendInjection(o_.straggle.send_delay, o_.straggle.drop, o_.straggle.seed);
  }
  node_->Step(gossip::MemberView{peer_.Members()}, clock_.Now());
  last_refresh_ = clock_.Now();
  while (Perform(node_->TakeOutput())) {
    const TimePoint now = clock_.Now();
    if (now - last_refresh_ >= std::chrono::milliseconds(20)) {
      node_->Step(gossip::MemberView{peer_.Members()}, now);
      last_refresh_ = now;
    }
    if (!stop_sent_ && stop_ && stop_()) {
      stop_sent_ = true;
      node_->Step(gossip::StopRequested{}, now);
    }
    Report(false);  // also on a rank that always has the next part to compute
    if (compute_.has_value()) {
      gossip::ComputeGradient c = *std::move(compute_);
      compute_.reset();
      const std::span<const float> partial = ComputeWithInjection(c.iteration, c.model);
      Drain(Duration(0));  // newer models that arrived meanwhile make this result stale
      node_->Step(gossip::GradientComputed{c.iteration, partial}, clock_.Now());
      continue;  // its sends go out before anything waits
    }
    Drain(std::clamp<Duration>(wait_until_ - now, Duration(0), std::chrono::milliseconds(20)));
    node_->Tick(clock_.Now());
  }
  if (!over_->ok()) return *over_;
  Report(true);
  return p_;
}

}  // namespace

std::pair<double, double> MeanAndP95(std::vector<double> values) {
  if (values.empty()) return {0, 0};
  const double mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  std::sort(values.begin(), values.end());
  const size_t k = static_cast<size_t>(std::ceil(0.95 * static_cast<double>(values.size()))) - 1;
  return {mean, values[std::min(k, values.size() - 1)]};
}

StatusOr<LrSchedule> CodedSchedule(const CodedTrainerOptions& o, int64_t train_rows) {
  const int64_t batch = o.global_batch > 0 ? o.global_batch : train_rows;
  TrainOptions lr = o.schedule;
  lr.sgd.learning_rate = o.node.lr;
  return ScheduleFor(lr, o.node.iterations * batch, train_rows, batch);
}

StatusOr<CodedProgress> RunCodedTrainer(const CodedTrainerOptions& options, PeerNode& peer,
                                        Model<float>& model, const Dataset& train,
                                        const Dataset* test, Duration report_interval,
                                        const std::function<void(const CodedProgress&)>& on_progress,
                                        const std::function<bool()>& stop) {
  MURMUR_ASSIGN_OR_RETURN(gossip::SyncPlan plan,
                          gossip::MakeSyncPlan(options.mode, options.n, options.layers, options.s,
                                               options.code_seed, options.ps));
  MURMUR_RETURN_IF_ERROR(options.node.Validate());
  if (train.rows < 1) return InvalidArgumentError("the training set is empty");
  if (train.cols != model.NumInputs()) {
    return InvalidArgumentError(fmt::format("model takes {} features, data has {}",
                                            model.NumInputs(), train.cols));
  }
  SyncDriver driver(options, peer, model, train, test, report_interval, on_progress, stop);
  return driver.Run(std::move(plan));
}

}  // namespace murmur::node
