#pragma once
// Single-node mini-batch training: seeded shuffling of this node's rows, SGD (momentum,
// Nesterov, weight decay) on the flat parameter vector, and evaluation on a test set.
// The gossip issues drive the same step from the node runtime; `Step` is that seam.
// Thread safety: one thread per Trainer.

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "kernels/ops.h"
#include "node/dataset.h"
#include "node/model.h"

namespace murmur::node {

struct TrainOptions {
  int epochs = 3;
  int64_t batch_size = 64;
  kernels::SgdOptions sgd;
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

// Accuracy and mean loss of `params` on `data`, in batches.
template <typename T>
StatusOr<Evaluation> Evaluate(Model<T>& model, std::span<const T> params, const Dataset& data,
                              int64_t batch_size = 1000);

class Trainer {
 public:
  // `rows` are the rows of `train` this node owns (a shard); `test` may be null. All references
  // must outlive the Trainer.
  Trainer(Model<float>& model, const Dataset& train, std::vector<int64_t> rows,
          const Dataset* test, TrainOptions options, Clock& clock);

  // Initializes parameters from the seed (call once, or set params() yourself).
  void InitializeParams();
  std::span<float> params() { return params_; }

  // One optimizer step on the next mini-batch of the current epoch, reshuffling at epoch
  // boundaries. Returns the batch loss; last_batch_rows() says how many rows it used. kFailedPrecondition when the loss is not finite
  // (the step is not applied, so the parameters stay as they were).
  StatusOr<float> Step();

  // Trains options.epochs epochs, evaluating after each, calling `on_progress` after every step.
  StatusOr<TrainSummary> Run(const std::function<void(const TrainProgress&)>& on_progress);

  // Zeroes the momentum buffer: after the parameters were replaced (a node adopting a peer's
  // model), the old velocity points the wrong way.
  void ResetOptimizerState();

  int64_t StepsPerEpoch() const;
  int64_t shard_rows() const { return static_cast<int64_t>(rows_.size()); }
  int64_t last_batch_rows() const { return last_batch_rows_; }

 private:
  void Shuffle();
  Batch<float> Gather(int64_t begin, int64_t count);

  Model<float>& model_;
  const Dataset& train_;
  std::vector<int64_t> rows_;
  const Dataset* test_;
  TrainOptions options_;
  Clock& clock_;
  std::mt19937_64 rng_;
  kernels::Device device_ = kernels::Device::Cpu();

  std::vector<float> params_;
  std::vector<float> grad_;
  std::vector<float> velocity_;
  std::vector<float> batch_x_;
  std::vector<int32_t> batch_labels_;
  std::vector<float> batch_targets_;
  int64_t cursor_ = 0;  // next position in rows_ within the current epoch
  int64_t steps_ = 0;
  int64_t last_batch_rows_ = 0;
};

}  // namespace murmur::node
