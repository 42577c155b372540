#include "node/driver/gossip_driver.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/log.h"
#include "gossip/gossip_node.h"
#include "node/observe/telemetry.h"

namespace murmur::node {
namespace {

// A session's model and what it can do, for murmur's Trainer: its parameters on the model's
// device, its momentum, and evaluation on the test set (the periodic one on a subset).
class TrainerWork : public GossipWork {
 public:
  // `own_seed`: the node draws its own starting model from own_seed ^ f(its id).
  TrainerWork(Trainer& trainer, Model<float>& model, const Dataset* test, int64_t eval_samples,
              std::optional<uint64_t> own_seed)
      : trainer_(trainer), model_(model), test_(test), own_seed_(own_seed) {
    if (test != nullptr) {
      eval_subset_ = *test;
      eval_subset_.Truncate(eval_samples);
      eval_subset_.Densify();  // evaluated every eval_every steps: convert its rows once
    }
  }
  std::span<float> params() override { return trainer_.params(); }
  const kernels::Device& device() const override { return trainer_.device(); }
  void ResetOptimizerState() override { trainer_.ResetOptimizerState(); }
  std::optional<double> Evaluate(bool full) override {
    if (test_ == nullptr) return std::nullopt;
    auto r = node::Evaluate<float>(model_, trainer_.params(), full ? *test_ : eval_subset_);
    if (!r.ok()) return std::nullopt;
    return r->accuracy;
  }
  Status Started(gossip::NodeId id) override {
    if (!own_seed_.has_value()) return OkStatus();
    std::vector<float> own(static_cast<size_t>(model_.NumParams()));
    model_.Initialize(std::span<float>(own), *own_seed_ ^ (id * 0x9E3779B97F4A7C15ULL));
    return trainer_.SetParams(own);
  }

 private:
  Trainer& trainer_;
  Model<float>& model_;
  const Dataset* test_;
  Dataset eval_subset_;
  std::optional<uint64_t> own_seed_;
};

class GossipDriver {
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
        stop_(stop) {}

  StatusOr<GossipProgress> Run();

 private:
  // Resumes from the node's own checkpoint when there is one it may use; an error only for one
  // that belongs to another model, run or node.
  Status Restore();
  void WriteCheckpoint();

  const GossipTrainerOptions& o_;
  Model<float>& model_;
  RealClock clock_;
  const Dataset& train_;
  std::vector<int64_t> rows_;  // until the trainer takes them
  const Dataset* test_;
  const GossipProgressFn& on_progress_;
  const std::function<bool()>& stop_;
  std::unique_ptr<Trainer> trainer_;  // on the model's device
  std::unique_ptr<TrainerWork> work_;
  std::unique_ptr<GossipSession> session_;
  GossipCheckpointOptions checkpoint_ = o_.checkpoint;
};

StatusOr<GossipProgress> GossipDriver::Run() {
  const int64_t budget =
      o_.epochs > 0
          ? static_cast<int64_t>(std::ceil(o_.epochs * static_cast<double>(o_.dataset_rows)))
          : 0;
  // The schedule runs on the cluster's samples; the linear scaling rule's global batch is every
  // expected member's mini-batch. Made before the peer starts: a bad option never joins.
  if (o_.train.lr_reference_batch > 0 && o_.node.expect_members <= 0) {
    return InvalidArgumentError(
        "lr_reference_batch (the linear scaling rule) needs expect_members: the cluster's size "
        "makes its global batch");
  }
  auto schedule = ScheduleFor(o_.train, budget, o_.dataset_rows,
                              o_.train.batch_size * std::max(1, o_.node.expect_members));
  if (!schedule.ok()) return schedule.status();
  // The model, its optimizer state and this node's shard go to the model's device before the
  // node joins: a device that cannot hold them is refused here.
  MURMUR_ASSIGN_OR_RETURN(trainer_, Trainer::Create(model_, train_, std::move(rows_), test_,
                                                    o_.train, clock_));
  work_ = std::make_unique<TrainerWork>(
      *trainer_, model_, test_, o_.eval_samples,
      o_.per_node_init ? std::optional<uint64_t>(o_.init_seed) : std::nullopt);
  GossipSessionOptions s;
  s.peer = o_.peer;
  s.node = o_.node;
  s.shard_rows = trainer_->shard_rows();
  s.budget_samples = budget;
  s.lr_schedule = *schedule;
  s.straggler = o_.straggler;
  s.report_interval = o_.report_interval;
  s.telemetry = o_.telemetry;
  // The cluster's common initial model, or one of this node's own.
  s.initial.resize(static_cast<size_t>(model_.NumParams()));
  model_.Initialize(std::span<float>(s.initial), o_.init_seed);
  s.from_initial = !o_.per_node_init;
  MURMUR_RETURN_IF_ERROR(trainer_->SetParams(s.initial));
  std::function<bool()> stop = stop_ ? stop_ : std::function<bool()>();
  session_ = std::make_unique<GossipSession>(std::move(s), *work_, on_progress_, stop);
  MURMUR_RETURN_IF_ERROR(session_->Start());
  MURMUR_RETURN_IF_ERROR(Restore());
  while (session_->Next()) {
    const TimePoint t0 = clock_.Now();
    auto loss = trainer_->Step(session_->lr());
    session_->Computed(loss, trainer_->last_batch_rows(), clock_.Now() - t0);
    const int64_t done = session_->machine().state().local_steps;
    if (checkpoint_.every > 0 && done > 0 && done % checkpoint_.every == 0) WriteCheckpoint();
  }
  auto result = session_->End();
  WriteCheckpoint();  // the run's end or a SIGTERM: a restart resumes from here
  if (!result.ok()) return result.status();
  if (!o_.save_model.empty()) {
    MURMUR_ASSIGN_OR_RETURN(const std::vector<float> params, trainer_->ParamsOnHost());
    MURMUR_RETURN_IF_ERROR(SaveModel(o_.save_model, model_.spec().ToString(), params));
  }
  MURMUR_LOG_INFO(
      "node {}: done ({}) at step {}, test accuracy {}", result->id,
      result->end_reason.empty() ? "stopped before training" : result->end_reason, result->step,
      result->accuracy >= 0 ? fmt::format("{:.4f}", result->accuracy) : "not evaluated");
  session_->Leave();
  return result;
}

Status GossipDriver::Restore() {
  if (checkpoint_.dir.empty()) return OkStatus();
  checkpoint_.model = model_.spec().ToString();
  checkpoint_.node_id = session_->id();
  const std::string path = checkpoint_.Path();
  auto read = ReadCheckpoint(path);
  auto count = [&](std::string_view what, int64_t step) {
    if (o_.telemetry != nullptr) o_.telemetry->CountCheckpoint(what, step);
  };
  if (read.status().code() == StatusCode::kNotFound) {
    MURMUR_LOG_INFO("node {}: no checkpoint in '{}': starting afresh", session_->id(),
                    checkpoint_.dir);
    count("none", 0);
    return OkStatus();
  }
  StatusOr<GossipResume> resume = read.ok() ? ReadGossipCheckpoint(checkpoint_, *read)
                                            : StatusOr<GossipResume>(read.status());
  if (resume.status().code() == StatusCode::kFailedPrecondition) return resume.status();
  Status restored = resume.ok() ? trainer_->RestoreState(resume->trainer) : resume.status();
  if (restored.ok()) restored = session_->machine().Resume(std::move(resume->node));
  if (!restored.ok()) {
    // Written atomically and checksummed, so this is a damaged disk or a foreign file: set it
    // aside for a person to look at and join from a peer.
    const std::string aside = path + ".corrupt";
    std::rename(path.c_str(), aside.c_str());
    MURMUR_LOG_ERROR(
        "node {}: cannot resume from '{}' ({}); moved it to '{}' and joining with a "
        "peer's model",
        session_->id(), path, restored.ToString(), aside);
    count("corrupt", 0);
    return OkStatus();
  }
  MURMUR_LOG_INFO("node {}: resumed from '{}' at step {} ({} local steps, {} samples)",
                  session_->id(), path, session_->machine().state().step,
                  session_->machine().state().local_steps, session_->machine().state().samples);
  count("resumed", static_cast<int64_t>(session_->machine().state().step));
  return OkStatus();
}

void GossipDriver::WriteCheckpoint() {
  if (checkpoint_.dir.empty() || session_ == nullptr || !session_->joined()) return;
  const TimePoint t0 = clock_.Now();
  auto state = trainer_->SaveState();
  Status written = state.status();
  if (state.ok()) {
    written = node::WriteCheckpoint(
        checkpoint_.Path(),
        MakeGossipCheckpoint(checkpoint_, *std::move(state), session_->machine().state(),
                             session_->machine().PublicCopyOnHost()));
  }
  const int64_t step = static_cast<int64_t>(session_->machine().state().step);
  if (!written.ok()) {
    MURMUR_LOG_ERROR("node {}: checkpoint at step {} failed: {}", session_->id(), step,
                     written.ToString());
  }
  if (o_.telemetry != nullptr) {
    o_.telemetry->CountCheckpoint(written.ok() ? "written" : "write_failed", step, clock_.Now() - t0);
  }
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
