#include "node/trainer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace murmur::node {

template <typename T>
StatusOr<Evaluation> Evaluate(Model<T>& model, std::span<const T> params, const Dataset& data,
                              int64_t batch_size) {
  if (batch_size < 1) return InvalidArgumentError("evaluation batch size must be >= 1");
  Evaluation out;
  out.samples = data.rows;
  if (data.rows == 0) {
    out.accuracy = std::numeric_limits<double>::quiet_NaN();
    return out;
  }
  std::vector<T> x;
  std::vector<T> targets;
  double loss_sum = 0;
  int64_t correct = 0;
  for (int64_t begin = 0; begin < data.rows; begin += batch_size) {
    const int64_t n = std::min(batch_size, data.rows - begin);
    Batch<T> batch;
    if constexpr (std::is_same_v<T, float>) {
      batch.x = data.Features().RowBlock(begin, n);
    } else {  // gradient checks evaluate in double: convert this block
      x.assign(data.features.begin() + begin * data.cols,
               data.features.begin() + (begin + n) * data.cols);
      batch.x = kernels::ConstMatrixView<T>(x.data(), n, data.cols);
    }
    if (data.task == TaskKind::kMulticlass) {
      batch.labels = std::span<const int32_t>(data.labels.data() + begin, static_cast<size_t>(n));
    } else {
      targets.assign(data.targets.begin() + begin, data.targets.begin() + begin + n);
      batch.targets = targets;
    }
    MURMUR_ASSIGN_OR_RETURN(T loss, model.LossAndGradient(params, batch, {}));
    loss_sum += static_cast<double>(loss) * static_cast<double>(n);
    const kernels::ConstMatrixView<T> outputs = model.LastOutputs();
    for (int64_t r = 0; r < n; ++r) {
      if (data.task == TaskKind::kMulticlass) {
        int best = 0;
        for (int64_t c = 1; c < outputs.cols; ++c) {
          if (outputs(r, c) > outputs(r, best)) best = static_cast<int>(c);
        }
        correct += best == data.labels[static_cast<size_t>(begin + r)];
      } else if (data.task == TaskKind::kBinary) {
        correct += (outputs(r, 0) > 0) == (data.targets[static_cast<size_t>(begin + r)] > 0.5f);
      }
    }
  }
  out.loss = loss_sum / static_cast<double>(data.rows);
  out.accuracy = data.task == TaskKind::kRegression
                     ? std::numeric_limits<double>::quiet_NaN()
                     : static_cast<double>(correct) / static_cast<double>(data.rows);
  return out;
}

template StatusOr<Evaluation> Evaluate<float>(Model<float>&, std::span<const float>,
                                              const Dataset&, int64_t);
template StatusOr<Evaluation> Evaluate<double>(Model<double>&, std::span<const double>,
                                               const Dataset&, int64_t);

Trainer::Trainer(Model<float>& model, const Dataset& train, std::vector<int64_t> rows,
                 const Dataset* test, TrainOptions options, Clock& clock)
    : model_(model),
      train_(train),
      rows_(std::move(rows)),
      test_(test),
      options_(options),
      clock_(clock),
      rng_(options.seed),
      params_(static_cast<size_t>(model.NumParams())),
      grad_(params_.size()),
      velocity_(options.sgd.momentum != 0 ? params_.size() : 0) {}

void Trainer::InitializeParams() { model_.Initialize(params_, options_.seed); }

void Trainer::ResetOptimizerState() { std::fill(velocity_.begin(), velocity_.end(), 0.0f); }

int64_t Trainer::StepsPerEpoch() const {
  const auto n = static_cast<int64_t>(rows_.size());
  return (n + options_.batch_size - 1) / options_.batch_size;
}

void Trainer::Shuffle() { std::shuffle(rows_.begin(), rows_.end(), rng_); }

Batch<float> Trainer::Gather(int64_t begin, int64_t count) {
  const int64_t cols = train_.cols;
  batch_x_.resize(static_cast<size_t>(count * cols));
  for (int64_t i = 0; i < count; ++i) {
    const int64_t row = rows_[static_cast<size_t>(begin + i)];
    std::memcpy(batch_x_.data() + i * cols, train_.features.data() + row * cols,
                sizeof(float) * static_cast<size_t>(cols));
  }
  Batch<float> batch;
  batch.x = kernels::ConstMatrixView<float>(batch_x_.data(), count, cols);
  if (train_.task == TaskKind::kMulticlass) {
    batch_labels_.resize(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      batch_labels_[static_cast<size_t>(i)] = train_.labels[static_cast<size_t>(rows_[static_cast<size_t>(begin + i)])];
    }
    batch.labels = batch_labels_;
  } else {
    batch_targets_.resize(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      batch_targets_[static_cast<size_t>(i)] = train_.targets[static_cast<size_t>(rows_[static_cast<size_t>(begin + i)])];
    }
    batch.targets = batch_targets_;
  }
  return batch;
}

StatusOr<float> Trainer::Step() {
  if (rows_.empty()) return FailedPreconditionError("this node's shard has no training rows");
  if (cursor_ == 0) Shuffle();
  const int64_t n = std::min<int64_t>(options_.batch_size, static_cast<int64_t>(rows_.size()) - cursor_);
  const Batch<float> batch = Gather(cursor_, n);
  MURMUR_ASSIGN_OR_RETURN(float loss, model_.LossAndGradient(params_, batch, grad_));
  if (!std::isfinite(loss)) {
    return FailedPreconditionError("training loss became " + std::to_string(loss) + " at step " +
                                   std::to_string(steps_ + 1) +
                                   "; the step was not applied (try a smaller learning rate)");
  }
  if (options_.gradient_hook) MURMUR_RETURN_IF_ERROR(options_.gradient_hook(grad_));
  MURMUR_RETURN_IF_ERROR(kernels::SgdStep<float>(device_, options_.sgd, grad_, velocity_, params_));
  cursor_ += n;
  last_batch_rows_ = n;
  if (cursor_ >= static_cast<int64_t>(rows_.size())) cursor_ = 0;
  ++steps_;
  return loss;
}

StatusOr<TrainSummary> Trainer::Run(const std::function<void(const TrainProgress&)>& on_progress) {
  TrainSummary summary;
  summary.epochs = options_.epochs;
  const TimePoint start = clock_.Now();
  const int64_t per_epoch = StepsPerEpoch();
  TrainProgress progress;
  progress.epochs = options_.epochs;
  progress.total_steps = per_epoch * options_.epochs;
  for (int epoch = 1; epoch <= options_.epochs; ++epoch) {
    progress.epoch = epoch;
    double loss_sum = 0;
    for (int64_t s = 0; s < per_epoch; ++s) {
      MURMUR_ASSIGN_OR_RETURN(float loss, Step());
      loss_sum += loss;
      progress.step += 1;
      progress.samples += last_batch_rows_;
      progress.recent_loss = loss_sum / static_cast<double>(s + 1);
      progress.elapsed_seconds = ToSeconds(clock_.Now() - start);
      progress.epoch_done = s + 1 == per_epoch;
      progress.test.reset();
      if (progress.epoch_done && test_ != nullptr) {
        const TimePoint eval_start = clock_.Now();
        MURMUR_ASSIGN_OR_RETURN(Evaluation eval,
                                Evaluate<float>(model_, params_, *test_, options_.eval_batch_size));
        summary.test_per_epoch.push_back(eval);
        progress.test = eval;
        const TimePoint eval_end = clock_.Now();
        progress.eval_seconds += ToSeconds(eval_end - eval_start);
        progress.elapsed_seconds = ToSeconds(eval_end - start);
      }
      if (on_progress) on_progress(progress);
    }
    summary.final_train_loss = per_epoch ? loss_sum / static_cast<double>(per_epoch) : 0;
  }
  summary.steps = progress.step;
  summary.samples = progress.samples;
  summary.wall_seconds = ToSeconds(clock_.Now() - start);
  summary.eval_seconds = progress.eval_seconds;
  const double train_seconds = summary.wall_seconds - summary.eval_seconds;
  summary.samples_per_second =
      train_seconds > 0 ? static_cast<double>(summary.samples) / train_seconds : 0;
  if (!summary.test_per_epoch.empty()) summary.test = summary.test_per_epoch.back();
  return summary;
}

}  // namespace murmur::node
