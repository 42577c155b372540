#include "node/coded_trainer.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <numeric>
#include <random>
#include <thread>

#include "node/telemetry.h"
#include "base/check.h"
#include "base/log.h"
#include "coding/update_codec.h"
#include "coding/vector_ops.h"
#include "kernels/ops.h"
#include "node/telemetry.h"
#include "node/trainer.h"

namespace murmur::node {
namespace {

using gossip::CodedAction;
using gossip::NodeId;

constexpr int64_t kComputeChunk = 4096;   // rows per forward/backward call
constexpr int64_t kEvalTrainRows = 10000;  // training loss is measured on at most this many rows

class CodedRunner {
 public:
  CodedRunner(const CodedTrainerOptions& o, CodedPlan plan, PeerNode& peer, Model<float>& model,
              const Dataset& train, const Dataset* test, Duration report_interval,
              const std::function<void(const CodedProgress&)>& on_progress,
              const std::function<bool()>& stop)
      : o_(o),
        plan_(std::move(plan)),
        peer_(peer),
        model_(model),
        train_(train),
        test_(test),
        report_interval_(report_interval),
        on_progress_(on_progress),
        stop_(stop),
        injector_(o.straggle),
        batch_(o.global_batch > 0 ? o.global_batch : train.rows) {}

  StatusOr<CodedProgress> Run();

 private:
  Status Assemble();
  void Allocate();
  int64_t SampleAt(uint64_t iteration, int64_t position);
  Status ComputeOwn(uint64_t iteration, std::span<const float> params, std::vector<float>& out);
  void Handle(TrainingMessage& m);
  void Dispatch(std::vector<CodedAction> actions);
  void Update(const std::vector<float>& sum);
  void Evaluate();
  bool PeerFinished();
  void Report(bool final);
  void RunTree();
  void RunRing();
  void DrainFor(Duration wait);
  // Computes this rank's part for `iteration` at `params`, then sleeps the injected delay.
  std::vector<float> ComputeWithInjection(uint64_t iteration, std::span<const float> params);
  bool BudgetSpent() const;
  void ApplyInjection();

  const CodedTrainerOptions& o_;
  const CodedPlan plan_;
  PeerNode& peer_;
  Model<float>& model_;
  const Dataset& train_;
  const Dataset* test_;
  const Duration report_interval_;
  const std::function<void(const CodedProgress&)>& on_progress_;
  const std::function<bool()>& stop_;
  RealClock clock_;
  StragglerInjector injector_;
  const int64_t batch_;  // B: positions per iteration

  TimePoint start_{};
  TimePoint last_report_{};
  TimePoint last_member_check_{};
  int64_t rank_ = -1;
  std::vector<NodeId> ids_;            // rank -> node id
  std::map<NodeId, int64_t> rank_of_;  // node id -> rank
  std::optional<gossip::TreeAggregator> tree_;
  std::optional<gossip::RingAllReduce> ring_;
  std::vector<coding::WeightedSample> own_;  // (position, weight)
  // Full batch: this rank's rows gathered once.
  bool gathered_ = false;
  std::vector<float> x_, targets_, weights_;
  std::vector<int32_t> labels_;
  std::vector<float> grad_;
  std::vector<float> params_;    // root / ring ranks: the model
  std::vector<float> velocity_;
  std::vector<float> step_grad_;
  uint64_t perm_epoch_ = ~uint64_t{0};
  std::vector<int64_t> perm_;
  std::optional<Dataset> eval_train_;
  std::optional<gossip::ComputeRequest> pending_;
  TimePoint iteration_start_{};
  bool done_ = false;
  bool peer_finished_ = false;
  uint64_t rejections_logged_ = 0;
  uint64_t injection_version_ = ~uint64_t{0};
  Duration waited_{0};           // blocked waiting for messages since the last own computation
  TimePoint last_compute_end_{};
  CodedProgress p_;
};

void CodedRunner::ApplyInjection() {
  if (o_.telemetry != nullptr) {
    ApplyInjectionChange(o_.telemetry->straggler(), injection_version_, injector_, peer_);
  }
}

Status CodedRunner::Assemble() {
  const TimePoint deadline = clock_.Now() + o_.join_timeout;
  for (;;) {
    std::vector<NodeId> view = peer_.LiveView();
    if (o_.telemetry != nullptr) {
      o_.telemetry->SetJoined(false, fmt::format("assembling the {}: {} of {} nodes alive",
                                                 plan_.mode, view.size(), plan_.processes));
    }
    if (static_cast<int64_t>(view.size()) == plan_.processes) {
      std::sort(view.begin(), view.end());
      ids_ = view;
      for (size_t r = 0; r < ids_.size(); ++r) rank_of_[ids_[r]] = static_cast<int64_t>(r);
      rank_ = rank_of_.at(peer_.id());
      return OkStatus();
    }
    if (static_cast<int64_t>(view.size()) > plan_.processes) {
      return FailedPreconditionError(fmt::format(
          "{} mode needs exactly {} nodes and the cluster has {} alive: check --n/--L and the "
          "number of nodes started", plan_.mode, plan_.processes, view.size()));
    }
    if (clock_.Now() > deadline || stop_()) {
      return DeadlineExceededError(fmt::format(
          "{} mode needs {} nodes; only {} joined within {:.0f} s", plan_.mode, plan_.processes,
          view.size(), ToSeconds(o_.join_timeout)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void CodedRunner::Allocate() {
  if (plan_.mode == "ring") {
    const int64_t n = plan_.processes;
    for (int64_t p = batch_ * rank_ / n; p < batch_ * (rank_ + 1) / n; ++p) own_.push_back({p, 1.0});
    return;
  }
  auto alloc = coding::AllocateTree(*plan_.layout, *plan_.code, batch_);
  MURMUR_CHECK_OK(alloc.status());
  own_ = std::move(alloc->own[static_cast<size_t>(rank_)]);
}

int64_t CodedRunner::SampleAt(uint64_t iteration, int64_t position) {
  if (o_.global_batch <= 0) return position;  // full batch: the identity
  const auto m = static_cast<uint64_t>(train_.rows);
  const uint64_t k = iteration * static_cast<uint64_t>(batch_) + static_cast<uint64_t>(position);
  const uint64_t epoch = k / m;
  if (epoch != perm_epoch_) {
    perm_.resize(m);
    std::iota(perm_.begin(), perm_.end(), int64_t{0});
    std::mt19937_64 rng(o_.seed * 1000003 + epoch);
    std::shuffle(perm_.begin(), perm_.end(), rng);
    perm_epoch_ = epoch;
  }
  return perm_[k % m];
}

Status CodedRunner::ComputeOwn(uint64_t iteration, std::span<const float> params,
                               std::vector<float>& out) {
  out.assign(static_cast<size_t>(model_.NumParams()), 0.0f);
  if (own_.empty()) return OkStatus();
  const int64_t cols = train_.cols;
  const bool classes = train_.task == TaskKind::kMulticlass;
  if (!gathered_ || o_.global_batch > 0) {
    const size_t rows = own_.size();
    x_.resize(rows * static_cast<size_t>(cols));
    weights_.resize(rows);
    labels_.resize(classes ? rows : 0);
    targets_.resize(classes ? 0 : rows);
    for (size_t i = 0; i < rows; ++i) {
      const int64_t sample = SampleAt(iteration, own_[i].sample);
      std::copy_n(train_.features.begin() + sample * cols, cols, x_.begin() + static_cast<int64_t>(i) * cols);
      weights_[i] = static_cast<float>(own_[i].weight);
      if (classes) {
        labels_[i] = train_.labels[static_cast<size_t>(sample)];
      } else {
        targets_[i] = train_.targets[static_cast<size_t>(sample)];
      }
    }
    gathered_ = true;
  }
  grad_.resize(out.size());
  const auto rows = static_cast<int64_t>(own_.size());
  for (int64_t begin = 0; begin < rows; begin += kComputeChunk) {
    const int64_t count = std::min(kComputeChunk, rows - begin);
    Batch<float> b;
    b.x = kernels::ConstMatrixView<float>(x_.data() + begin * cols, count, cols);
    b.weights = std::span<const float>(weights_.data() + begin, static_cast<size_t>(count));
    if (classes) {
      b.labels = std::span<const int32_t>(labels_.data() + begin, static_cast<size_t>(count));
    } else {
      b.targets = std::span<const float>(targets_.data() + begin, static_cast<size_t>(count));
    }
    MURMUR_RETURN_IF_ERROR(model_.LossAndGradient(params, b, grad_).status());
    // The loss is a mean over the chunk: scale back to a sum of weighted per-sample gradients.
    const auto scale = static_cast<float>(count);
    for (size_t i = 0; i < out.size(); ++i) out[i] += scale * grad_[i];
  }
  return OkStatus();
}

std::vector<float> CodedRunner::ComputeWithInjection(uint64_t iteration,
                                                     std::span<const float> params) {
  std::vector<float> partial;
  const TimePoint t0 = clock_.Now();
  Status s = ComputeOwn(iteration, params, partial);
  MURMUR_CHECK_OK(s);  // shapes were checked when the run started
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
    o_.telemetry->ObserveStep(t, static_cast<int64_t>(own_.size()));
    last_compute_end_ = end;
  }
  waited_ = Duration(0);
  return partial;
}

void CodedRunner::Handle(TrainingMessage& m) {
  const gossip::Envelope& e = m.envelope;
  auto reject = [&](std::string_view reason, const std::string& why) {
    ++p_.rejected_messages;
    if (o_.telemetry != nullptr) o_.telemetry->CountRejected(reason);
    if (rejections_logged_++ % 1000 == 0) {
      MURMUR_LOG_WARN("node {} ({} rank {}): message from {} rejected ({} so far): {}", peer_.id(),
                      plan_.mode, rank_, e.sender_id, p_.rejected_messages, why);
    }
  };
  const auto* header = std::get_if<gossip::CodedMessage>(&e.payload);
  if (header == nullptr) {
    return reject(kRejectWrongMode,
                  "not a CodedReduce message (is every node started with the same --mode?)");
  }
  auto it = rank_of_.find(e.sender_id);
  if (it == rank_of_.end()) {
    return reject(kRejectUnknownSender, "sender is not a member of this run's tree or ring");
  }
  if (m.frames.size() != 1) return reject(kRejectFrames, "expected one tensor frame");
  size_t expected = static_cast<size_t>(model_.NumParams());
  if (ring_) {
    expected = ring_->ExpectedLength(header->tree_position);
    if (header->tree_position >= 2 * (plan_.processes - 1)) {
      return reject(kRejectProtocol, "ring step out of range");
    }
  }
  coding::Update u;
  coding::DecodeFailure failure = coding::DecodeFailure::kNone;
  if (Status s = coding::DecodeUpdate(m.frames[0].bytes(), static_cast<uint32_t>(expected), u, &failure);
      !s.ok() || !u.dense) {
    return reject(failure == coding::DecodeFailure::kNone ? kRejectProtocol
                                                          : coding::DecodeFailureName(failure),
                  fmt::format("payload {}: {}", coding::DecodeFailureName(failure), s.message()));
  }
  if (auto bad = coding::FirstNonFinite(u.values)) {
    return reject(coding::DecodeFailureName(coding::DecodeFailure::kNonFinite),
                  fmt::format("non-finite value at index {}", *bad));
  }
  if (o_.telemetry != nullptr) {
    o_.telemetry->ObserveStaleness(static_cast<double>(p_.iteration) -
                                   static_cast<double>(header->iteration));
  }
  const uint64_t before = tree_ ? tree_->stats().rejected : ring_->stats().rejected;
  if (tree_) {
    tree_->Step(it->second, *header, u.values, clock_.Now());
    Dispatch(tree_->TakeActions());
  } else {
    ring_->Step(it->second, *header, u.values);
    Dispatch(ring_->TakeActions());
  }
  const uint64_t after = tree_ ? tree_->stats().rejected : ring_->stats().rejected;
  if (after != before) {
    reject(kRejectProtocol, "the protocol refused it (wrong sender, kind, length or iteration)");
  }
}

void CodedRunner::Dispatch(std::vector<CodedAction> actions) {
  for (CodedAction& action : actions) {
    if (auto* send = std::get_if<gossip::CodedSend>(&action)) {
      peer_.SendTo(ids_[static_cast<size_t>(send->to)], send->header, {DenseFrame(send->vector)});
    } else if (auto* compute = std::get_if<gossip::ComputeRequest>(&action)) {
      pending_ = std::move(*compute);  // only the newest model is worth computing on
    } else if (auto* done = std::get_if<gossip::Aggregated>(&action)) {
      p_.iteration_ms.push_back(1e3 * ToSeconds(clock_.Now() - iteration_start_));
      Update(done->gradient);
      ++p_.iteration;
      if (o_.eval_every > 0 && p_.iteration % static_cast<uint64_t>(o_.eval_every) == 0) Evaluate();
      if (BudgetSpent()) {
        done_ = true;
      } else if (tree_) {
        iteration_start_ = clock_.Now();
        tree_->StartIteration(p_.iteration, params_, iteration_start_);
        Dispatch(tree_->TakeActions());
      }
    } else if (auto* report = std::get_if<gossip::CodedReport>(&action)) {
      MURMUR_LOG_WARN("{}", report->text);
    }
  }
}

void CodedRunner::Update(const std::vector<float>& sum) {
  step_grad_.resize(sum.size());
  const float inv = 1.0f / static_cast<float>(std::max<int64_t>(batch_, 1));
  for (size_t i = 0; i < sum.size(); ++i) step_grad_[i] = sum[i] * inv;
  kernels::SgdOptions sgd{.learning_rate = o_.lr, .momentum = o_.momentum,
                          .weight_decay = o_.weight_decay};
  if (o_.momentum > 0) velocity_.resize(params_.size(), 0.0f);
  MURMUR_CHECK_OK(kernels::SgdStep<float>(kernels::Device::Cpu(), sgd, step_grad_, velocity_, params_));
}

void CodedRunner::Evaluate() {
  if (!eval_train_) {
    eval_train_ = train_;
    eval_train_->Truncate(kEvalTrainRows);
  }
  auto loss = murmur::node::Evaluate<float>(model_, params_, *eval_train_);
  p_.loss = loss.ok() ? loss->loss : std::nan("");
  p_.accuracy = std::nan("");
  if (test_ != nullptr && test_->rows > 0) {
    auto acc = murmur::node::Evaluate<float>(model_, params_, *test_);
    if (acc.ok()) p_.accuracy = acc->accuracy;
  }
  p_.evaluated_at = p_.iteration;
}

bool CodedRunner::BudgetSpent() const {
  if (static_cast<int64_t>(p_.iteration) >= o_.iterations) return true;
  return o_.time_limit.count() > 0 && clock_.Now() - start_ >= o_.time_limit;
}

bool CodedRunner::PeerFinished() {
  const TimePoint now = clock_.Now();
  if (now - last_member_check_ < std::chrono::milliseconds(100)) return peer_finished_;
  last_member_check_ = now;
  for (const auto& m : peer_.Members()) {
    if (m.id != peer_.id() && m.finished && rank_of_.count(m.id)) peer_finished_ = true;
  }
  return peer_finished_;
}

void CodedRunner::Report(bool final) {
  const TimePoint now = clock_.Now();
  ApplyInjection();
  if (o_.telemetry != nullptr) {
    o_.telemetry->SetCodedStats(tree_ ? tree_->stats() : ring_->stats());
    o_.telemetry->SetStepClock(static_cast<int64_t>(p_.iteration));
    o_.telemetry->SetLoss(p_.loss);
    o_.telemetry->SetAccuracy(p_.accuracy);
  }
  if (!final && now - last_report_ < report_interval_) return;
  last_report_ = now;
  p_.elapsed_s = ToSeconds(now - start_);
  p_.stats = tree_ ? tree_->stats() : ring_->stats();
  p_.final = final;
  if (on_progress_) on_progress_(p_);
}

void CodedRunner::DrainFor(Duration wait) {
  const TimePoint w0 = clock_.Now();
  auto m = peer_.TakeTraining(std::chrono::duration_cast<std::chrono::milliseconds>(wait));
  if (wait.count() > 0) waited_ += clock_.Now() - w0;
  for (int i = 0; m.has_value() && i < 4096; ++i) {
    Handle(*m);
    m = peer_.TakeTraining(std::chrono::milliseconds(0));
  }
}

void CodedRunner::RunTree() {
  const bool root = rank_ == 0;
  if (root) {
    iteration_start_ = clock_.Now();
    tree_->StartIteration(0, params_, iteration_start_);
    Dispatch(tree_->TakeActions());
  }
  while (!done_ && !stop_() && !(PeerFinished() && !root)) {
    DrainFor(pending_ ? Duration(0) : Duration(std::chrono::milliseconds(20)));
    tree_->Tick(clock_.Now());
    Dispatch(tree_->TakeActions());
    if (pending_) {
      gossip::ComputeRequest request = std::move(*pending_);
      pending_.reset();
      std::vector<float> partial = ComputeWithInjection(request.iteration, request.model);
      // Newer models that arrived meanwhile make this result stale (the machine drops it).
      DrainFor(Duration(0));
      tree_->OwnResult(request.iteration, partial, clock_.Now());
      Dispatch(tree_->TakeActions());
      if (!root) p_.iteration = tree_->stats().iterations;
    }
    if (root && o_.time_limit.count() > 0 && BudgetSpent()) done_ = true;
    Report(false);
  }
}

void CodedRunner::RunRing() {
  uint64_t started = 0;
  auto begin = [&] {
    iteration_start_ = clock_.Now();
    std::vector<float> partial = ComputeWithInjection(started, params_);
    ring_->Start(started, partial);
    ++started;
    Dispatch(ring_->TakeActions());
  };
  begin();
  while (!done_ && !stop_() && !PeerFinished()) {
    DrainFor(Duration(std::chrono::milliseconds(20)));
    if (!done_ && !ring_->busy() && p_.iteration == started) begin();
    Report(false);
  }
}

StatusOr<CodedProgress> CodedRunner::Run() {
  p_.mode = plan_.mode;
  p_.accuracy = std::nan("");
  p_.loss = std::nan("");
  MURMUR_RETURN_IF_ERROR(Assemble());
  p_.rank = rank_;
  last_compute_end_ = clock_.Now();
  Allocate();
  p_.own_samples = static_cast<int64_t>(own_.size());
  const auto dim = static_cast<uint32_t>(model_.NumParams());
  if (plan_.mode == "ring") {
    p_.role = "ring";
    ring_.emplace(gossip::RingAllReduce::Options{rank_, plan_.processes, dim});
  } else {
    p_.role = rank_ == 0 ? "root" : (plan_.layout->IsLeaf(rank_) ? "leaf" : "parent");
    tree_.emplace(*plan_.layout, *plan_.code,
                  gossip::TreeAggregator::Options{rank_, dim, o_.report_after});
  }
  params_.resize(static_cast<size_t>(dim));
  model_.Initialize(params_, o_.seed);
  if (o_.straggle.send_delay.count() > 0 || o_.straggle.drop > 0) {
    peer_.SetSendInjection(o_.straggle.send_delay, o_.straggle.drop, o_.straggle.seed);
  }
  if (o_.telemetry != nullptr) {
    o_.telemetry->SetRole(rank_, p_.role);
    o_.telemetry->SetJoined(true, "assembled");
    ApplyInjection();
  }
  MURMUR_LOG_INFO("node {}: {} rank {} of {} ({}), {} weighted samples per iteration of {}",
                  peer_.id(), plan_.mode, rank_, plan_.processes, p_.role, own_.size(), batch_);
  start_ = clock_.Now();  // iteration times and the time limit count from the assembled cluster
  if (ring_) {
    RunRing();
  } else {
    RunTree();
  }
  const bool measures = rank_ == 0;
  if (measures) Evaluate();
  if (o_.telemetry != nullptr) o_.telemetry->SetFinished(done_ ? "iterations" : "stopped");
  peer_.SetProgress(p_.iteration, 0, true);
  // Linger so the last messages leave and "finished" spreads before this node goes.
  const TimePoint linger = clock_.Now() + std::chrono::milliseconds(500);
  while (clock_.Now() < linger) DrainFor(Duration(std::chrono::milliseconds(20)));
  Report(true);
  return p_;
}

}  // namespace

StatusOr<CodedPlan> MakeCodedPlan(const std::string& mode, int n, int layers, int s,
                                  uint64_t code_seed) {
  CodedPlan plan;
  plan.mode = mode;
  MURMUR_ASSIGN_OR_RETURN(coding::TreeLayout tree, coding::TreeLayout::Create(n, layers));
  plan.workers = tree.workers();
  if (mode == "coded-tree" || mode == "tree") {
    if (mode == "coded-tree" && (s < 0 || s >= n)) {
      return InvalidArgumentError(fmt::format("coded-tree: s = {} must be in [0, n) = [0, {})", s, n));
    }
    MURMUR_ASSIGN_OR_RETURN(coding::GradientCode code,
                            coding::GradientCode::Create({.n = n, .s = mode == "tree" ? 0 : s,
                                                          .seed = code_seed}));
    plan.layout = tree;
    plan.code = std::move(code);
    plan.processes = tree.size();
  } else if (mode == "gc") {
    if (plan.workers > coding::kMaxCodeWorkers) {
      return InvalidArgumentError(fmt::format(
          "gc: {} workers under one aggregator; flat gradient coding supports up to {}",
          plan.workers, coding::kMaxCodeWorkers));
    }
    if (s < 0 || s >= plan.workers) {
      return InvalidArgumentError(fmt::format("gc: s = {} must be in [0, N) = [0, {})", s, plan.workers));
    }
    MURMUR_ASSIGN_OR_RETURN(coding::TreeLayout flat,
                            coding::TreeLayout::Create(static_cast<int>(plan.workers), 1));
    MURMUR_ASSIGN_OR_RETURN(coding::GradientCode code,
                            coding::GradientCode::Create({.n = static_cast<int>(plan.workers),
                                                          .s = s, .seed = code_seed}));
    plan.layout = flat;
    plan.code = std::move(code);
    plan.processes = flat.size();
  } else if (mode == "ring") {
    plan.processes = plan.workers;
  } else {
    return InvalidArgumentError("mode '" + mode + "': expected coded-tree, tree, gc or ring");
  }
  return plan;
}

std::pair<double, double> MeanAndP95(std::vector<double> values) {
  if (values.empty()) return {0, 0};
  const double mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  std::sort(values.begin(), values.end());
  const size_t k = static_cast<size_t>(std::ceil(0.95 * static_cast<double>(values.size()))) - 1;
  return {mean, values[std::min(k, values.size() - 1)]};
}

StatusOr<CodedProgress> RunCodedTrainer(const CodedTrainerOptions& options, PeerNode& peer,
                                        Model<float>& model, const Dataset& train,
                                        const Dataset* test, Duration report_interval,
                                        const std::function<void(const CodedProgress&)>& on_progress,
                                        const std::function<bool()>& stop) {
  MURMUR_ASSIGN_OR_RETURN(CodedPlan plan, MakeCodedPlan(options.mode, options.n, options.layers,
                                                        options.s, options.code_seed));
  if (options.iterations < 1) return InvalidArgumentError("iterations must be >= 1");
  if (train.rows < 1) return InvalidArgumentError("the training set is empty");
  if (train.cols != model.NumInputs()) {
    return InvalidArgumentError(fmt::format("model takes {} features, data has {}",
                                            model.NumInputs(), train.cols));
  }
  CodedRunner runner(options, std::move(plan), peer, model, train, test, report_interval,
                     on_progress, stop);
  return runner.Run();
}

}  // namespace murmur::node
