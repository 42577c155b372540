#include "gossip/sync_node.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "base/log.h"
#include "coding/update_codec.h"
#include "kernels/compress_ops.h"
#include "kernels/ops.h"

namespace murmur::gossip {

StatusOr<SyncPlan> MakeSyncPlan(Mode mode, int n, int layers, int s, uint64_t code_seed,
                                const PsOptions& ps) {
  if (!IsSyncMode(mode)) {
    return InvalidArgumentError("mode '" + std::string(ModeName(mode)) +
                                "': expected coded-tree, tree, gc, ring or ps");
  }
  SyncPlan plan;
  plan.mode = mode;
  MURMUR_ASSIGN_OR_RETURN(coding::TreeLayout tree, coding::TreeLayout::Create(n, layers));
  plan.workers = tree.workers();
  if (mode == Mode::kPs) {
    MURMUR_RETURN_IF_ERROR(ValidatePs(ps, plan.workers));
    plan.ps = ps;
    plan.processes = ps.servers + plan.workers;
    return plan;
  }
  if (mode == Mode::kCodedTree || mode == Mode::kTree) {
    if (mode == Mode::kCodedTree && (s < 0 || s >= n)) {
      return InvalidArgumentError(fmt::format("coded-tree: s = {} must be in [0, n) = [0, {})", s, n));
    }
    MURMUR_ASSIGN_OR_RETURN(coding::GradientCode code,
                            coding::GradientCode::Create({.n = n, .s = mode == Mode::kTree ? 0 : s,
                                                          .seed = code_seed}));
    plan.layout = tree;
    plan.code = std::move(code);
    plan.processes = tree.size();
  } else if (mode == Mode::kGc) {
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
  } else {
    plan.processes = plan.workers;
  }
  return plan;
}

Status SyncNodeOptions::Validate() const {
  if (iterations < 1) return InvalidArgumentError("iterations must be >= 1");
  if (batch < 1) return InvalidArgumentError("the batch must have at least one position");
  if (nesterov && momentum <= 0) return InvalidArgumentError("nesterov needs momentum > 0");
  return OkStatus();
}

StatusOr<std::unique_ptr<SyncNode>> SyncNode::Create(SyncPlan plan, const SyncNodeOptions& options,
                                                     std::vector<float> initial_model,
                                                     TimePoint now) {
  MURMUR_RETURN_IF_ERROR(options.Validate());
  if (initial_model.empty()) return InvalidArgumentError("the model has no parameters");
  if (plan.processes < 1 ||
      (plan.mode != Mode::kRing && plan.mode != Mode::kPs && (!plan.layout || !plan.code))) {
    return InvalidArgumentError("the plan has no shape: build it with MakeSyncPlan");
  }
  MURMUR_ASSIGN_OR_RETURN(auto params,
                          kernels::Buffer<float>::FromHost(options.device, initial_model));
  auto node = std::unique_ptr<SyncNode>(new SyncNode(std::move(plan), options, std::move(params), now));
  const size_t d = initial_model.size();
  MURMUR_ASSIGN_OR_RETURN(node->step_grad_, kernels::Buffer<float>::Create(options.device, d));
  MURMUR_ASSIGN_OR_RETURN(node->compute_model_, kernels::Buffer<float>::Create(options.device, d));
  if (options.momentum > 0) {
    MURMUR_ASSIGN_OR_RETURN(node->velocity_, kernels::Buffer<float>::Create(options.device, d));
  }
  node->params_host_ = std::move(initial_model);
  node->host_stale_ = false;
  return node;
}

SyncNode::SyncNode(SyncPlan plan, const SyncNodeOptions& options, kernels::Buffer<float> params,
                   TimePoint now)
    : plan_(std::move(plan)), o_(options), created_(now), params_(std::move(params)) {
  s_.loss = std::nan("");
  s_.accuracy = std::nan("");
  detail_ = fmt::format("assembling the {}: waiting for {} nodes", ModeName(plan_.mode), plan_.processes);
}

std::string SyncNode::role() const {
  if (rank_ < 0) return "";
  if (plan_.mode == Mode::kRing) return "ring";
  if (plan_.mode == Mode::kPs) return IsServer() ? "server" : "worker";
  if (rank_ == 0) return "root";
  return plan_.layout->IsLeaf(rank_) ? "leaf" : "parent";
}

CodedStats SyncNode::stats() const {
  if (tree_) return tree_->stats();
  if (ring_) return ring_->stats();
  if (server_) return server_->stats();
  if (worker_) return worker_->stats();
  return {};
}

std::vector<NodeAction> SyncNode::TakeOutput() { return output_.Take(); }

std::span<const float> SyncNode::model() {
  if (host_stale_) {
    params_host_.resize(params_.size());
    MURMUR_CHECK_OK(params_.CopyToHost(params_host_));
    host_stale_ = false;
  }
  return params_host_;
}

void SyncNode::Emit(NodeAction action) { output_.Emit(std::move(action)); }

void SyncNode::Fail(Status status) {
  EnterPhase(Phase::kOver);
  detail_ = std::string(status.message());
  Emit(RunOver{std::move(status)});
}

void SyncNode::Step(const MemberView& view, TimePoint now) {
  for (const MemberEntry& m : view.members) {
    // ps: only a server's end ends the run (a worker stopped by its operator just leaves it).
    auto r = rank_of_.find(m.id);
    if (m.id != o_.self && m.finished && r != rank_of_.end() &&
        (plan_.mode != Mode::kPs || r->second < plan_.ps.servers)) {
      peer_finished_ = true;
    }
  }
  const std::vector<NodeId> live = LiveIds(view, o_.self);
  if (phase_ == Phase::kAssembling) {
    // Members that finished while this node was still settling ran the run without it (they
    // assembled first and leave once done): it is over, and there is nothing to join.
    const auto finished =
        std::find_if(view.members.begin(), view.members.end(),
                     [&](const MemberEntry& m) { return m.id != o_.self && m.finished; });
    if (finished != view.members.end()) {
      MURMUR_LOG_WARN(
          "node {}: member {} finished the {} run before this node assembled: "
          "nothing to join",
          o_.self, finished->id, ModeName(plan_.mode));
      EnterPhase(Phase::kOver);
      s_.end_reason = "peer";
      detail_ = "the run ended before this node assembled";
      Emit(Finished{s_.end_reason});
      Emit(RunOver{OkStatus()});
      return;
    }
    Assemble(live, now);
  } else {
    others_live_ = others_unfinished_ = 0;
    for (const MemberEntry& m : view.members) {
      if (m.id == o_.self || !rank_of_.count(m.id) ||
          !std::binary_search(live.begin(), live.end(), m.id))
        continue;
      ++others_live_;
      others_unfinished_ += !m.finished;
    }
    if (plan_.mode == Mode::kPs && phase_ == Phase::kRunning) CheckPsMembers(view, live, now);
    if (phase_ == Phase::kRunning) CheckRunMembers(view, live);
    if (phase_ == Phase::kOver) return;
  }
  Tick(now);
}

bool SyncNode::Settled() const {
  if (plan_.mode == Mode::kPs) return rank_ == 0 ? others_live_ == 0 : !IsServer() || final_sent_;
  if (!tree_) return others_unfinished_ == 0;  // every other ring rank is past its last iteration
  if (rank_ == 0) return others_live_ == 0;
  return s_.end_reason == "peer";
}

void SyncNode::Assemble(const std::vector<NodeId>& live, TimePoint now) {
  const auto need = static_cast<size_t>(plan_.processes);
  live_seen_ = live.size();
  if (live.size() > need) {
    return Fail(FailedPreconditionError(fmt::format(
        "{} mode needs exactly {} nodes and the cluster has {} alive: check --n/--L and the "
        "number of nodes started", ModeName(plan_.mode), plan_.processes, live.size())));
  }
  if (live.size() < need) {
    if (!candidate_.empty()) {
      ++s_.refused_views;
      MURMUR_LOG_WARN("node {}: the {}-node view lost a member before it settled ({} live): "
                      "assembly starts over", o_.self, need, live.size());
      candidate_.clear();
    }
    detail_ = fmt::format("assembling the {}: {} of {} nodes alive", ModeName(plan_.mode),
                          live.size(), plan_.processes);
    return;
  }
  if (candidate_ != live) {
    if (!candidate_.empty()) {
      ++s_.refused_views;
      MURMUR_LOG_WARN("node {}: the view changed while the {} was assembling (a member was "
                      "replaced): refused, assembly starts over", o_.self, ModeName(plan_.mode));
    }
    candidate_ = live;
    candidate_since_ = now;
  }
  detail_ = fmt::format("assembling the {}: {} of {} nodes alive, settling", ModeName(plan_.mode),
                        live.size(), plan_.processes);
  if (now - candidate_since_ < o_.settle) return;
  ids_ = candidate_;
  for (size_t r = 0; r < ids_.size(); ++r) rank_of_[ids_[r]] = static_cast<int64_t>(r);
  auto self = rank_of_.find(o_.self);
  MURMUR_CHECK(self != rank_of_.end()) << "LiveIds always holds this node";
  rank_ = self->second;
  StartRunning(now);
}

void SyncNode::StartRunning(TimePoint now) {
  const auto dim = static_cast<uint32_t>(params_.size());
  if (plan_.mode == Mode::kPs) {
    StartPs();
    if (phase_ == Phase::kOver) return;  // the worker's compressor did not fit
  } else if (plan_.mode == Mode::kRing) {
    const int64_t n = plan_.processes;
    for (int64_t p = o_.batch * rank_ / n; p < o_.batch * (rank_ + 1) / n; ++p) own_.push_back({p, 1.0});
    ring_.emplace(RingAllReduce::Options{rank_, plan_.processes, dim, o_.device});
  } else {
    auto alloc = coding::AllocateTree(*plan_.layout, *plan_.code, o_.batch);
    MURMUR_CHECK_OK(alloc.status());
    own_ = std::move(alloc->own[static_cast<size_t>(rank_)]);
    tree_.emplace(*plan_.layout, *plan_.code,
                  TreeAggregator::Options{rank_, dim, o_.report_after, o_.device});
  }
  EnterPhase(Phase::kRunning);
  last_progress_ = now;
  detail_ = "assembled";
  start_ = now;  // iteration times and the time limit count from the assembled cluster
  MURMUR_LOG_INFO("node {}: {} rank {} of {} ({}), {} weighted samples per iteration of {}", o_.self,
                  ModeName(plan_.mode), rank_, plan_.processes, role(), own_.size(), o_.batch);
  if (ring_) {
    pending_ = ComputeRequest{0, {}};
  } else if (worker_) {
    worker_->Start();
    Dispatch(worker_->TakeOutput(), now);
  } else if (server_) {
    iteration_start_ = now;
  } else if (rank_ == 0) {
    iteration_start_ = now;
    tree_->StartIteration(0, model(), now);
    Dispatch(tree_->TakeOutput(), now);
  }
  MaybeCompute(now);
  // Messages that came before the ranks were known.
  std::deque<Early> early = std::move(early_);
  early_.clear();
  early_from_.clear();
  for (Early& e : early) {
    e.message.frame = e.frame;
    Handle(e.message, now);
  }
}

void SyncNode::Dispatch(std::vector<CodedAction> actions, TimePoint now) {
  for (CodedAction& action : actions) {
    if (auto* send = std::get_if<CodedSend>(&action)) {
      auto bytes = std::make_shared<std::vector<std::byte>>(std::move(send->encoded));
      if (bytes->empty()) coding::EncodeDense(send->vector, *bytes);
      SendTo out{ids_[static_cast<size_t>(send->to)], send->header, std::move(bytes)};
      Sent(out);
      Emit(std::move(out));
    } else if (auto* compute = std::get_if<ComputeRequest>(&action)) {
      pending_ = std::move(*compute);  // only the newest model is worth computing on
    } else if (auto* done = std::get_if<Aggregated>(&action)) {
      Applied(*done, now);
    } else if (auto* report = std::get_if<CodedReport>(&action)) {
      MURMUR_LOG_WARN("{}", report->text);
    }
  }
}

void SyncNode::Applied(const Aggregated& done, TimePoint now) {
  s_.iteration_ms.push_back(1e3 * ToSeconds(now - iteration_start_));
  Update(done);
  ++s_.iteration;
  Emit(Announce{s_.iteration, 0, false});
  if (server_) {
    iteration_start_ = now;
    // Only the server's slice comes back to the host: the rest of its model never changes.
    slice_host_.resize(done.gradient.size());
    MURMUR_CHECK_OK(kernels::Copy<float>(kernels::Device::Cpu(), slice_host_, o_.device,
                                         params_.span().subspan(done.offset, slice_host_.size())));
    server_->Applied(slice_host_, last_lr_);
  }
  const uint64_t every = static_cast<uint64_t>(o_.eval_every) * UpdatesPerIteration();
  if (every > 0 && s_.iteration % every == 0 && rank_ == 0 &&
      (plan_.mode != Mode::kPs || plan_.ps.servers == 1)) {
    s_.evaluated_at = s_.iteration;
    Emit(Evaluate{false, model()});
  }
  if (BudgetSpent(now)) {
    if (server_) server_->TakeOutput();  // no replies: the run is over
    Finish(now, static_cast<int64_t>(s_.iteration) >= o_.iterations ? "iterations" : "time");
    return;
  }
  if (server_) {
    Dispatch(server_->TakeOutput(), now);
  } else if (tree_) {
    iteration_start_ = now;
    tree_->StartIteration(s_.iteration, model(), now);
    Dispatch(tree_->TakeOutput(), now);
  } else if (!ring_->busy() && s_.iteration == ring_started_) {
    pending_ = ComputeRequest{ring_started_, {}};
  }
}

void SyncNode::MaybeCompute(TimePoint now) {
  if (computing_ || !pending_ || phase_ != Phase::kRunning) return;
  computing_ = true;
  if (ring_) iteration_start_ = now;  // a ring iteration starts with its own computation
  // A ring computes at its own model, which changes only once this computation is in (its
  // Aggregated needs it); a tree rank's model from its parent goes up to the device.
  std::span<const float> model = params_.span();
  if (!pending_->model.empty()) {
    MURMUR_CHECK_OK(compute_model_.CopyFromHost(pending_->model));
    model = compute_model_.span();
  }
  Emit(ComputeGradient{pending_->iteration, model});
  pending_.reset();
}

void SyncNode::Step(const GradientComputed& result, TimePoint now) {
  if (!computing_) return;
  computing_ = false;
  if (phase_ != Phase::kRunning) return;
  last_progress_ = now;
  if (result.partial.size() != params_.size()) {
    return Fail(InvalidArgumentError(fmt::format("a partial gradient of {} values for a model of {}",
                                                 result.partial.size(), params_.size())));
  }
  int64_t non_finite = 0;
  MURMUR_CHECK_OK(kernels::CountNonFinite(o_.device, result.partial, &non_finite));
  if (non_finite > 0) {
    return Fail(FailedPreconditionError(fmt::format(
        "iteration {}: the gradient has {} non-finite values: training diverged (try a lower "
        "--lr{})",
        result.iteration, non_finite,
        plan_.mode == Mode::kPs && plan_.ps.sync != PsSync::kFull
            ? ", or --staleness-lr: asynchrony adds momentum of its own"
            : "")));
  }
  if (worker_) {
    worker_->Step(OwnPart{result.iteration, result.partial}, o_.device);
    s_.iteration = worker_->stats().iterations;
    Dispatch(worker_->TakeOutput(), now);
  } else if (ring_) {
    ring_->Step(OwnPart{result.iteration, result.partial});
    ring_started_ = result.iteration + 1;
    Dispatch(ring_->TakeOutput(), now);
  } else {
    // Newer models that arrived meanwhile make this result stale (the aggregator drops it).
    tree_->Step(OwnPart{result.iteration, result.partial}, now);
    Dispatch(tree_->TakeOutput(), now);
    if (rank_ != 0) s_.iteration = tree_->stats().iterations;
  }
  MaybeCompute(now);
  Tick(now);
}

void SyncNode::Update(const Aggregated& done) {
  // The mean gradient sum / B (or the aggregator's weight × sum), as one float product per
  // element (0 + inv · sum_i), on the slice the aggregate covers (a ps server's; else all).
  const float inv = done.weight > 0 ? static_cast<float>(done.weight)
                                    : 1.0f / static_cast<float>(std::max<int64_t>(o_.batch, 1));
  const size_t n = done.gradient.size();
  auto grad = step_grad_.span().subspan(done.offset, n);
  MURMUR_CHECK_OK(kernels::ZeroBytes(o_.device, grad.data(), n * sizeof(float)));
  MURMUR_CHECK_OK(kernels::Axpy(o_.device, inv, done.gradient, grad));
  // The schedule runs over samples: B per iteration, one worker's B / N per async update.
  const int64_t samples =
      static_cast<int64_t>(s_.iteration) * o_.batch / static_cast<int64_t>(UpdatesPerIteration());
  const double lr = o_.lr_schedule.has_value() ? o_.lr_schedule->At(samples) : o_.lr;
  last_lr_ = lr;
  // A DANA server's vector is its worker's velocity already (param_server.h): a plain step.
  const bool own_velocity = !done.with_momentum && !velocity_.empty();
  kernels::SgdOptions sgd{.learning_rate = lr,
                          .momentum = own_velocity ? o_.momentum : 0.0,
                          .weight_decay = o_.weight_decay,
                          .nesterov = own_velocity && o_.nesterov};
  MURMUR_CHECK_OK(kernels::SgdStep<float>(
      o_.device, sgd, grad,
      own_velocity ? velocity_.span().subspan(done.offset, n) : std::span<float>(),
      params_.span().subspan(done.offset, n)));
  host_stale_ = true;
}

void SyncNode::Step(const Evaluated& result, TimePoint now) {
  s_.loss = result.loss;
  s_.accuracy = result.accuracy;
  if (evaluating_final_) {
    evaluating_final_ = false;
    linger_until_ = now + o_.linger;
  }
  Tick(now);
}

void SyncNode::Step(const StopRequested&, TimePoint now) {
  stop_requested_ = true;
  Tick(now);
}

bool SyncNode::BudgetSpent(TimePoint now) const {
  if (s_.iteration >= static_cast<uint64_t>(o_.iterations) * UpdatesPerIteration()) return true;
  return o_.time_limit.count() > 0 && now - start_ >= o_.time_limit;
}

void SyncNode::Finish(TimePoint now, std::string reason) {
  if (phase_ != Phase::kRunning) return;
  EnterPhase(Phase::kLingering);
  s_.end_reason = reason;
  linger_until_ = now + o_.linger;
  if (plan_.mode == Mode::kPs) {
    FinishPs();
  } else if (rank_ == 0) {
    evaluating_final_ = true;
    s_.evaluated_at = s_.iteration;
    Emit(Evaluate{true, model()});
  }
  Emit(Finished{std::move(reason)});
  Emit(Announce{s_.iteration, 0, true});
}

void SyncNode::ExcludeOwnAbsence(TimePoint now) {
  if (last_turn_.has_value()) {
    const TimePoint since = std::max(*last_turn_, last_progress_);
    if (now - since > o_.stall_timeout / 10) last_progress_ += now - since;
  }
  last_turn_ = now;
}

void SyncNode::Sent(const SendTo& send) {
  // An asynchronous server applies a push it gets twice twice: nothing is sent again there.
  if (plan_.mode == Mode::kPs && plan_.ps.sync != PsSync::kFull) return;
  std::deque<SendTo>& kept = sent_[send.to];
  kept.push_back(send);
  if (kept.size() > ResendDepth()) kept.pop_front();
}

size_t SyncNode::ResendDepth() const {
  return plan_.mode == Mode::kRing ? static_cast<size_t>(2 * (plan_.processes - 1)) : 2;
}

void SyncNode::MaybeResend(TimePoint now) {
  const Duration every = o_.stall_timeout / 4;
  if (computing_ || now - last_progress_ < every) return;
  if (resent_at_.has_value() && *resent_at_ > last_progress_ && now - *resent_at_ < every) return;
  resent_at_ = now;
  for (const auto& [to, kept] : sent_) {
    for (const SendTo& send : kept) {
      Emit(SendTo(send));
      ++s_.resent_messages;
    }
  }
}

void SyncNode::Tick(TimePoint now) {
  switch (phase_) {
    case Phase::kAssembling:
      if (now - created_ > o_.join_timeout || stop_requested_) {
        return Fail(DeadlineExceededError(fmt::format(
            "{} mode needs {} nodes; only {} joined within {:.0f} s", ModeName(plan_.mode),
            plan_.processes, live_seen_, ToSeconds(o_.join_timeout))));
      }
      Emit(Wait{now + std::chrono::milliseconds(20)});
      return;
    case Phase::kRunning: {
      if (tree_) {
        tree_->Tick(now);
        Dispatch(tree_->TakeOutput(), now);
        if (phase_ != Phase::kRunning) return;
      }
      const bool root = (tree_ && rank_ == 0) || server_;
      if (stop_requested_) return Finish(now, "stopped");
      if (peer_finished_ && (!root || server_)) return Finish(now, "peer");
      if (root && o_.time_limit.count() > 0 && BudgetSpent(now)) return Finish(now, "time");
      ExcludeOwnAbsence(now);
      MaybeResend(now);
      if (!computing_ && now - last_progress_ > o_.stall_timeout) {
        return Fail(DeadlineExceededError(fmt::format(
            "{} rank {}: no message taken and nothing computed for {:.1f} s at iteration {} "
            "(stall_timeout_s): a message this rank waits for was lost, or a member went quiet "
            "while alive",
            ModeName(plan_.mode), rank_, ToSeconds(now - last_progress_), s_.iteration)));
      }
      MaybeCompute(now);
      Emit(Wait{now + std::chrono::milliseconds(20)});
      return;
    }
    case Phase::kLingering:
      if (evaluating_final_ && !final_sent_ && IsServer() &&
          now > linger_until_ + o_.join_timeout) {
        return Fail(DeadlineExceededError(
            "server 0 never got every other server's final slice: the final model is incomplete"));
      }
      if (!evaluating_final_ && LingerIsOver(now, linger_until_, Settled(), output_)) {
        EnterPhase(Phase::kOver);
      }
      return;
    case Phase::kOver:
      return;
  }
}

}  // namespace murmur::gossip
