#pragma once
// What a simulated node computes. The simulator models how long a computation takes
// (compute_model in simulator.h); a Workload decides what it does to the model, so the protocols
// see real values: snapshots, outlier checks, the consensus finish and CodedReduce's exact decode
// all run on them.
//   SyntheticWorkload   protocol fidelity: a least-squares task of any dimension whose rows are
//                       hashed from a seed (no data set), cheap enough for 1024 nodes.
//   TrainerWorkload     training fidelity (trainer_workload.h): the real Trainer and MLP on
//                       Fashion-MNIST or the synthetic classification tasks, for tens of nodes.
// Thread safety: none; the simulator's one thread.

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "base/status.h"
#include "coding/coded_tree.h"

namespace murmur::sim {

class Workload {
 public:
  virtual ~Workload() = default;
  virtual size_t nodes() const = 0;
  virtual size_t dimension() const = 0;
  virtual int64_t dataset_rows() const = 0;
  // The run's common initial model.
  virtual std::vector<float> InitialModel() const = 0;
  // Node `node_id`'s own initial model, for runs where every node draws its own (init =
  // per-node): what a real node of that id would draw.
  virtual std::vector<float> OwnInitialModel(uint64_t node_id) const = 0;
  // Gossip: node `node` trains on its shard; the machine's budget needs its size.
  virtual int64_t ShardRows(size_t node) const = 0;
  // Node `node`'s parameters (host memory, the trainer's own), valid for the workload's life: the
  // gossip machine reads and writes them between steps.
  virtual std::span<float> Params(size_t node) = 0;
  // A (re)start: the parameters become `model`, optimizer state and batch order start over.
  virtual void Reset(size_t node, std::span<const float> model) = 0;
  // One local optimizer step on Params(node) at `lr` (none: the workload's own): (loss, rows of
  // the mini-batch). A non-finite loss means nothing was applied.
  virtual std::pair<double, int64_t> Step(size_t node, std::optional<double> lr) = 0;
  // The node's optimizer state no longer fits its model (an adopted snapshot).
  virtual void ResetOptimizer(size_t node) { (void)node; }
  // Sync modes: Σ_{(p, w) ∈ own} w · ∇ℓ(model; row(iteration, p)), valid until the next call.
  virtual std::span<const float> Gradient(size_t node, uint64_t iteration,
                                          std::span<const coding::WeightedSample> own,
                                          std::span<const float> model) = 0;
  // (accuracy, loss) of a model on the test set (`full`), or on its periodic-evaluation subset;
  // accuracy < 0 when the task has none.
  virtual std::pair<double, double> Evaluate(std::span<const float> model, bool full) = 0;
  // The test rows Evaluate(…, full) computes on (what an evaluation costs); 0: free.
  virtual int64_t EvaluationRows(bool full) const {
    (void)full;
    return 0;
  }
  // How far a model is from the task's optimum (relative), or nullopt when unknown.
  virtual std::optional<double> OptimumDistance(std::span<const float> model) const {
    (void)model;
    return std::nullopt;
  }
};

// Least squares on hashed rows: row r's target t_r ∈ R^d is a part every row shares, plus half
// a row part (one of 61 hashed vectors, r mod 61: the mini-batch noise), plus a quarter of a part
// shared by the block of rows it is in (16 blocks), so contiguous shards have different optima
// (non-iid, as a sorted data set gives; the shards' optima lie about 0.1 of ‖x*‖ apart, as the
// nodes of a real model's training do) and only the cluster's average reaches the global one,
// x* = mean_r t_r. The tables hold 77 d values, so a step costs batch × d additions whatever the
// rows. ℓ_r(x) = ½ ‖x − t_r‖² / d. A gossip step draws `batch` rows of the node's contiguous shard
// (seeded, with replacement); a sync position p of iteration t is row (t·B + p) mod rows.
class SyntheticWorkload final : public Workload {
 public:
  SyntheticWorkload(size_t nodes, size_t dimension, int64_t rows, int64_t batch, double lr,
                    uint64_t seed);

  size_t nodes() const override { return params_.size(); }
  size_t dimension() const override { return dimension_; }
  int64_t dataset_rows() const override { return rows_; }
  std::vector<float> InitialModel() const override;
  std::vector<float> OwnInitialModel(uint64_t node_id) const override;
  int64_t ShardRows(size_t node) const override;
  std::span<float> Params(size_t node) override { return params_[node]; }
  void Reset(size_t node, std::span<const float> model) override;
  std::pair<double, int64_t> Step(size_t node, std::optional<double> lr) override;
  std::span<const float> Gradient(size_t node, uint64_t iteration,
                                  std::span<const coding::WeightedSample> own,
                                  std::span<const float> model) override;
  std::pair<double, double> Evaluate(std::span<const float> model, bool full) override;
  std::optional<double> OptimumDistance(std::span<const float> model) const override;

  // t_r[j].
  float Target(int64_t row, size_t j) const;

 private:
  size_t dimension_;
  int64_t rows_;
  int64_t batch_;
  double lr_;
  uint64_t seed_;
  std::vector<float> row_part_;    // 61 × d, the shared part included
  std::vector<float> block_part_;  // 16 × d, scaled
  std::vector<float> optimum_;
  std::vector<std::vector<float>> params_;  // per node
  std::vector<uint64_t> cursor_;            // per node: rows drawn so far
  std::vector<float> gradient_;
};

// max_i ‖x_i − x̄‖ / ‖x̄‖ over `models` (equal sizes): how far the cluster is from one model; 0
// for fewer than two.
double MaxRelativeDistance(const std::vector<std::span<const float>>& models);

}  // namespace murmur::sim
