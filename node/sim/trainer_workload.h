#pragma once
// Training fidelity: every simulated node computes with the real Trainer (gossip: its
// shard, its mini-batches, its optimizer and the cluster's learning-rate schedule) or the real
// PartialGradient (the synchronous modes: its rank's weighted positions), on the CPU, so a
// simulated run learns what a real one would; only time is modeled. Tens of nodes: every node
// holds its shard's features and a model's buffers.
// Thread safety: none.

#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "node/sim/workload.h"
#include "node/train/dataset.h"
#include "node/train/model.h"
#include "node/train/partial_gradient.h"
#include "node/train/sharding.h"
#include "node/train/trainer.h"

namespace murmur::sim {

struct TrainerWorkloadOptions {
  size_t nodes = 1;
  bool sync = false;  // PartialGradient per node instead of a Trainer
  node::ModelSpec spec;
  node::TrainOptions train;  // batch size, optimizer, seed (gossip)
  node::ShardStrategy shards = node::ShardStrategy::kContiguous;
  int64_t global_batch = 0;     // sync: positions per iteration (0: the whole training set)
  int64_t eval_samples = 2000;  // test rows of a periodic evaluation
  uint64_t init_seed = 1;       // the common initial model
};

class TrainerWorkload final : public Workload {
 public:
  static StatusOr<std::unique_ptr<TrainerWorkload>> Create(node::TrainTest data,
                                                           const TrainerWorkloadOptions& options);

  size_t nodes() const override { return options_.nodes; }
  size_t dimension() const override { return static_cast<size_t>(eval_model_->NumParams()); }
  int64_t dataset_rows() const override { return data_.train.rows; }
  std::vector<float> InitialModel() const override;
  std::vector<float> OwnInitialModel(uint64_t node_id) const override;
  int64_t ShardRows(size_t node) const override;
  std::span<float> Params(size_t node) override;
  void Reset(size_t node, std::span<const float> model) override;
  std::pair<double, int64_t> Step(size_t node, std::optional<double> lr) override;
  void ResetOptimizer(size_t node) override;
  std::span<const float> Gradient(size_t node, uint64_t iteration,
                                  std::span<const coding::WeightedSample> own,
                                  std::span<const float> model) override;
  std::pair<double, double> Evaluate(std::span<const float> model, bool full) override;
  int64_t EvaluationRows(bool full) const override {
    return full ? data_.test.rows : eval_subset_.rows;
  }

 private:
  TrainerWorkload(node::TrainTest data, const TrainerWorkloadOptions& options);

  node::TrainTest data_;
  node::Dataset eval_subset_;
  TrainerWorkloadOptions options_;
  ManualClock clock_;
  std::unique_ptr<node::Model<float>> eval_model_;
  std::vector<std::unique_ptr<node::Model<float>>> models_;
  std::vector<std::unique_ptr<node::Trainer>> trainers_;
  std::vector<std::unique_ptr<node::PartialGradient>> partials_;
  std::vector<std::vector<float>> sync_params_;  // sync: Params() of a node (unused by the machine)
};

}  // namespace murmur::sim
