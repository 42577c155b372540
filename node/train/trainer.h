#pragma once
// Single-node mini-batch training: seeded shuffling of this node's rows, SGD (momentum,
// Nesterov, weight decay) on the flat parameter vector, and evaluation on a test set.
// The gossip issues drive the same step from the node runtime; `Step` is that seam.
// Thread safety: one thread per Trainer.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "base/clock.h"
#include "base/lr_schedule.h"
#include "base/memory_use.h"
#include "base/status.h"
#include "kernels/memory.h"
#include "kernels/ops.h"
#include "node/train/dataset.h"
#include "node/train/model.h"

namespace murmur::node {

struct TrainOptions {
  int epochs = 3;
  int64_t batch_size = 64;
  kernels::SgdOptions sgd;  // sgd.learning_rate: the schedule's base rate
  // The learning-rate schedule's shape (base/lr_schedule.h: kind, milestones, factor, final);
  // ScheduleFor makes it one for a budget. Run and Step() follow `lr_schedule` when set (at
  // steps × batch_size samples), else sgd.learning_rate.
  LrScheduleOptions lr_shape;
  double warmup_epochs = 0;          // linear warm-up, in epochs of `epoch_samples`
  int64_t lr_reference_batch = 0;    // linear scaling rule: lr × global batch / this (0: off)
  std::optional<LrSchedule> lr_schedule;
  uint64_t seed = 1;
  int64_t eval_batch_size = 1000;
  // Called with each mini-batch gradient before the optimizer step; may rewrite it in place
  // (GradientCompression does). A non-OK status fails the step, which is then not applied.
  std::function<Status(std::span<float> gradient)> gradient_hook;
};

struct Evaluation {
  double loss = 0;
  // Fraction of correct predictions (classification); NaN for regression.
  double accuracy = 0;
  int64_t samples = 0;
};

// Emitted by Run after every step; cheap to build, so a reporter may throttle freely.
struct TrainProgress {
  int epoch = 0;  // 1-based
  int epochs = 0;
  int64_t step = 0;  // steps so far, over all epochs
  int64_t total_steps = 0;
  int64_t samples = 0;
  double recent_loss = 0;  // running mean over the current epoch
  double elapsed_seconds = 0;  // wall time since Run started, evaluation included
  double eval_seconds = 0;     // of which spent evaluating the test set
  bool epoch_done = false;
  std::optional<Evaluation> test;  // set when an epoch ends and a test set exists
};

struct TrainSummary {
  int epochs = 0;
  int64_t steps = 0;
  int64_t samples = 0;
  double wall_seconds = 0;
  double eval_seconds = 0;
  double samples_per_second = 0;  // training samples over training time (evaluation excluded)
  double final_train_loss = 0;  // mean over the last epoch
  Evaluation test;
  std::vector<Evaluation> test_per_epoch;
};

// Everything a step depends on besides the data and the options: what a checkpoint holds.
struct TrainerState {
  std::vector<float> params;
  std::vector<float> velocity;  // the momentum buffer
  std::string rng;              // the shuffling generator, as std::mt19937_64 streams itself
  std::vector<int64_t> order;   // this epoch's order of the shard's rows
  int64_t cursor = 0;           // next position in `order`
  int64_t steps = 0;
};

// The schedule `options` describe for a run of `total_samples` (0: none, constant only) whose
// epochs are `epoch_samples` and whose steps average `global_batch` samples over the cluster.
StatusOr<LrSchedule> ScheduleFor(const TrainOptions& options, int64_t total_samples,
                                          int64_t epoch_samples, int64_t global_batch);

// Accuracy and mean loss of `params` (memory of the model's device) on `data` (host), in batches;
// on a GPU each batch is copied over and only the outputs come back.
template <typename T>
StatusOr<Evaluation> Evaluate(Model<T>& model, std::span<const T> params, const Dataset& data,
                              int64_t batch_size = 1000);

// Trains on the model's device. On a GPU the parameters, gradient, momentum, activations and
// this node's training rows stay in device memory; a step sends 8 bytes per row of the batch
// (the rows' positions go up once per epoch) and brings back the loss.
class Trainer {
 public:
  // `rows` are the rows of `train` this node owns (a shard); `test` may be null. All references
  // must outlive the Trainer. kResourceExhausted / kUnavailable when the model's device cannot
  // hold the parameters and the shard.
  static StatusOr<std::unique_ptr<Trainer>> Create(Model<float>& model, const Dataset& train,
                                                   std::vector<int64_t> rows, const Dataset* test,
                                                   TrainOptions options, Clock& clock);
  // The same on the CPU, where allocation cannot fail short of running out of memory.
  // REQUIRES model.device() is the CPU.
  Trainer(Model<float>& model, const Dataset& train, std::vector<int64_t> rows,
          const Dataset* test, TrainOptions options, Clock& clock);

  // Initializes parameters from the seed (call once, or set params() yourself).
  void InitializeParams();
  // The parameters in the model's device memory (host memory on the CPU).
  std::span<float> params() { return params_.span(); }
  const kernels::Device& device() const { return device_; }
  // The parameters copied to the host, and replaced from the host.
  StatusOr<std::vector<float>> ParamsOnHost() const;
  Status SetParams(std::span<const float> host);
  // Its buffers besides params() (base/memory_use.h): gradient, optimizer_state (momentum),
  // activations (the model's, forward and back) and data (the shard's rows and the batch).
  void AddMemory(MemoryUse& memory) const;

  // One optimizer step on the next mini-batch of the current epoch, reshuffling at epoch
  // boundaries. Returns the batch loss; last_batch_rows() says how many rows it used. kFailedPrecondition when the loss is not finite
  // (the step is not applied, so the parameters stay as they were).
  StatusOr<float> Step() { return Step(std::nullopt); }
  // The same at learning rate `lr` (a gossip node follows the cluster's schedule).
  StatusOr<float> Step(std::optional<double> lr);

  // Trains options.epochs epochs, evaluating after each, calling `on_progress` after every step.
  // options.gradient_hook, when set, receives the gradient in the model's device memory.
  StatusOr<TrainSummary> Run(const std::function<void(const TrainProgress&)>& on_progress);

  // The state on the host, and restored from it: the next Step is the one that would have
  // followed when the state was saved. kInvalidArgument, with nothing changed, when `state` does
  // not fit: other sizes, an order that is not a permutation of this shard, a cursor outside it,
  // an RNG state that does not parse.
  StatusOr<TrainerState> SaveState() const;
  Status RestoreState(const TrainerState& state);

  // Zeroes the momentum buffer: after the parameters were replaced (a node adopting a peer's
  // model), the old velocity points the wrong way.
  void ResetOptimizerState();

  int64_t StepsPerEpoch() const;
  int64_t shard_rows() const { return static_cast<int64_t>(rows_.size()); }
  int64_t last_batch_rows() const { return last_batch_rows_; }
  double last_lr() const { return last_lr_; }  // of the latest step

 private:
  struct Uninitialized {};
  Trainer(Uninitialized, Model<float>& model, const Dataset& train, std::vector<int64_t> rows,
          const Dataset* test, TrainOptions options, Clock& clock);
  Status Allocate();
  Status Shuffle();
  StatusOr<Batch<float>> Gather(int64_t begin, int64_t count);

  Model<float>& model_;
  const Dataset& train_;
  std::vector<int64_t> rows_;
  const Dataset* test_;
  TrainOptions options_;
  Clock& clock_;
  std::mt19937_64 rng_;
  kernels::Device device_;

  // On device_.
  kernels::Buffer<float> params_;
  kernels::Buffer<float> grad_;
  kernels::Buffer<float> velocity_;
  kernels::Buffer<float> batch_x_;
  kernels::Buffer<int32_t> batch_labels_;
  kernels::Buffer<float> batch_targets_;
  // This shard's rows as floats (local row k is the training set's row rows_[k] as it was
  // given; on a GPU a compact set is converted once, here; on the CPU it stays bytes, each batch
  // converts its rows, and this is empty), and this epoch's order as local rows on a GPU (the
  // CPU maps each batch's rows through local_of_).
  kernels::Buffer<float> features_;
  kernels::Buffer<int32_t> labels_;
  kernels::Buffer<float> targets_;
  kernels::Buffer<int64_t> order_;
  std::vector<int64_t> local_of_;     // training-set row -> local row (-1: not in the shard)
  std::vector<int64_t> batch_local_;  // CPU: the current batch's local rows
  // Local rows of rows_ (this epoch's order).
  std::vector<int64_t> LocalOrder() const;
  int64_t cursor_ = 0;  // next position in rows_ within the current epoch
  int64_t steps_ = 0;
  int64_t last_batch_rows_ = 0;
  double last_lr_ = 0;
};

}  // namespace murmur::node
