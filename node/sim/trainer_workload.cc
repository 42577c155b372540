#include "node/sim/trainer_workload.h"

#include <cmath>

#include "base/check.h"

namespace murmur::sim {

TrainerWorkload::TrainerWorkload(node::TrainTest data, const TrainerWorkloadOptions& options)
    : data_(std::move(data)), eval_subset_(data_.test), options_(options) {
  if (options_.eval_samples > 0) eval_subset_.Truncate(options_.eval_samples);
}

StatusOr<std::unique_ptr<TrainerWorkload>> TrainerWorkload::Create(
    node::TrainTest data, const TrainerWorkloadOptions& options) {
  std::unique_ptr<TrainerWorkload> w(new TrainerWorkload(std::move(data), options));
  auto model = [&]() -> StatusOr<std::unique_ptr<node::Model<float>>> {
    MURMUR_ASSIGN_OR_RETURN(auto m,
                            node::Model<float>::Create(options.spec, kernels::Device::Cpu()));
    return std::make_unique<node::Model<float>>(std::move(m));
  };
  MURMUR_ASSIGN_OR_RETURN(w->eval_model_, model());
  for (size_t i = 0; i < options.nodes; ++i) {
    MURMUR_ASSIGN_OR_RETURN(auto m, model());
    w->models_.push_back(std::move(m));
    if (options.sync) {
      w->partials_.push_back(std::make_unique<node::PartialGradient>(
          *w->models_.back(), w->data_.train, options.global_batch, options.train.seed));
      w->sync_params_.emplace_back(w->dimension());
      continue;
    }
    MURMUR_ASSIGN_OR_RETURN(auto rows,
                            node::ShardRows(w->data_.train.rows, static_cast<int>(i),
                                            static_cast<int>(options.nodes), options.shards));
    node::TrainOptions train = options.train;
    train.seed = options.train.seed + i;  // every node its own batch order, as a real node's seed
    MURMUR_ASSIGN_OR_RETURN(
        auto trainer, node::Trainer::Create(*w->models_.back(), w->data_.train, std::move(rows),
                                            &w->eval_subset_, train, w->clock_));
    w->trainers_.push_back(std::move(trainer));
  }
  return w;
}

std::vector<float> TrainerWorkload::InitialModel() const {
  std::vector<float> x(dimension());
  eval_model_->Initialize(std::span<float>(x), options_.init_seed);
  return x;
}

std::vector<float> TrainerWorkload::OwnInitialModel(uint64_t node_id) const {
  std::vector<float> x(dimension());
  eval_model_->Initialize(std::span<float>(x), node::OwnInitSeed(options_.init_seed, node_id));
  return x;
}

int64_t TrainerWorkload::ShardRows(size_t node) const {
  return options_.sync ? data_.train.rows / static_cast<int64_t>(options_.nodes)
                       : trainers_[node]->shard_rows();
}

std::span<float> TrainerWorkload::Params(size_t node) {
  return options_.sync ? std::span<float>(sync_params_[node]) : trainers_[node]->params();
}

void TrainerWorkload::Reset(size_t node, std::span<const float> model) {
  if (options_.sync) {
    sync_params_[node].assign(model.begin(), model.end());
    return;
  }
  MURMUR_CHECK_OK(trainers_[node]->SetParams(model));
  trainers_[node]->ResetOptimizerState();
}

std::pair<double, int64_t> TrainerWorkload::Step(size_t node, std::optional<double> lr) {
  auto loss = trainers_[node]->Step(lr);
  return {loss.ok() ? static_cast<double>(*loss) : NAN, trainers_[node]->last_batch_rows()};
}

void TrainerWorkload::ResetOptimizer(size_t node) {
  if (!options_.sync) trainers_[node]->ResetOptimizerState();
}

std::span<const float> TrainerWorkload::Gradient(size_t node, uint64_t iteration,
                                                 std::span<const coding::WeightedSample> own,
                                                 std::span<const float> model) {
  auto partial = partials_[node]->Compute(iteration, own, model);
  MURMUR_CHECK(partial.ok()) << partial.status().ToString();
  return *partial;
}

std::pair<double, double> TrainerWorkload::Evaluate(std::span<const float> model, bool full) {
  auto e = node::Evaluate<float>(*eval_model_, model, full ? data_.test : eval_subset_);
  if (!e.ok()) return {-1, NAN};
  return {e->accuracy, e->loss};
}

}  // namespace murmur::sim
