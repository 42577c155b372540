#include "node/train/trainer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <sstream>
#include <type_traits>

#include "base/check.h"

namespace murmur::node {

namespace {

// The evaluation batches of a dataset: rows [begin, begin + n) as a Batch in host memory, or
// copied to the model's device.
template <typename T>
class EvalBatches {
 public:
  EvalBatches(const kernels::Device& device, const Dataset& data) : device_(device), data_(data) {}

  // Room on a GPU for batches of up to `rows` rows.
  Status Reserve(int64_t rows) {
    if (device_.is_cpu()) return OkStatus();
    const auto n = static_cast<size_t>(rows);
    MURMUR_ASSIGN_OR_RETURN(device_x_, kernels::Buffer<T>::Create(device_, n * data_.cols));
    MURMUR_ASSIGN_OR_RETURN(device_labels_, kernels::Buffer<int32_t>::Create(device_, n));
    MURMUR_ASSIGN_OR_RETURN(device_targets_, kernels::Buffer<T>::Create(device_, n));
    return OkStatus();
  }

  StatusOr<Batch<T>> Rows(int64_t begin, int64_t n) {
    Batch<T> batch;
    if constexpr (std::is_same_v<T, float>) {
      if (data_.compact()) {
        x_.resize(static_cast<size_t>(n * data_.cols));
        data_.RowsInto(begin, n, x_);
        batch.x = kernels::ConstMatrixView<T>(x_.data(), n, data_.cols);
      } else {
        batch.x = data_.Features().RowBlock(begin, n);
      }
    } else {  // gradient checks evaluate in double: convert this block
      std::vector<float> block(static_cast<size_t>(n * data_.cols));
      data_.RowsInto(begin, n, block);
      x_.assign(block.begin(), block.end());
      batch.x = kernels::ConstMatrixView<T>(x_.data(), n, data_.cols);
    }
    if (data_.task == TaskKind::kMulticlass) {
      batch.labels = std::span<const int32_t>(data_.labels.data() + begin, static_cast<size_t>(n));
    } else {
      targets_.assign(data_.targets.begin() + begin, data_.targets.begin() + begin + n);
      batch.targets = targets_;
    }
    if (!device_.is_cpu()) MURMUR_RETURN_IF_ERROR(ToDevice(batch, n));
    return batch;
  }

 private:
  Status ToDevice(Batch<T>& batch, int64_t n) {
    const auto rows = static_cast<size_t>(n);
    const kernels::Device host = kernels::Device::Cpu();
    MURMUR_RETURN_IF_ERROR(kernels::Copy<T>(device_, device_x_.span().first(rows * data_.cols),
                                            host, {batch.x.data, rows * data_.cols}));
    batch.x = kernels::ConstMatrixView<T>(device_x_.data(), n, data_.cols);
    if (!batch.labels.empty()) {
      MURMUR_RETURN_IF_ERROR(
          kernels::Copy<int32_t>(device_, device_labels_.span().first(rows), host, batch.labels));
      batch.labels = device_labels_.span().first(rows);
    } else {
      MURMUR_RETURN_IF_ERROR(
          kernels::Copy<T>(device_, device_targets_.span().first(rows), host, batch.targets));
      batch.targets = device_targets_.span().first(rows);
    }
    return OkStatus();
  }

  kernels::Device device_;
  const Dataset& data_;
  std::vector<T> x_;
  std::vector<T> targets_;
  kernels::Buffer<T> device_x_;
  kernels::Buffer<int32_t> device_labels_;
  kernels::Buffer<T> device_targets_;
};

// Rows of `outputs` (host memory) classified right, for rows [begin, begin + outputs.rows).
template <typename T>
int64_t CountCorrect(kernels::ConstMatrixView<T> outputs, const Dataset& data, int64_t begin) {
  int64_t correct = 0;
  for (int64_t r = 0; r < outputs.rows; ++r) {
    const auto row = static_cast<size_t>(begin + r);
    if (data.task == TaskKind::kMulticlass) {
      int best = 0;
      for (int64_t c = 1; c < outputs.cols; ++c) {
        if (outputs(r, c) > outputs(r, best)) best = static_cast<int>(c);
      }
      correct += best == data.labels[row];
    } else if (data.task == TaskKind::kBinary) {
      correct += (outputs(r, 0) > 0) == (data.targets[row] > 0.5f);
    }
  }
  return correct;
}

}  // namespace

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
  const kernels::Device device = model.device();
  EvalBatches<T> batches(device, data);
  MURMUR_RETURN_IF_ERROR(batches.Reserve(std::min(batch_size, data.rows)));
  double loss_sum = 0;
  int64_t correct = 0;
  for (int64_t begin = 0; begin < data.rows; begin += batch_size) {
    const int64_t n = std::min(batch_size, data.rows - begin);
    MURMUR_ASSIGN_OR_RETURN(Batch<T> batch, batches.Rows(begin, n));
    MURMUR_ASSIGN_OR_RETURN(T loss, model.LossAndGradient(params, batch, {}));
    loss_sum += static_cast<double>(loss) * static_cast<double>(n);
    std::vector<T> copied;
    kernels::ConstMatrixView<T> outputs = model.LastOutputs();
    if (!device.is_cpu()) {
      MURMUR_ASSIGN_OR_RETURN(copied, model.LastOutputsOnHost());
      outputs = kernels::ConstMatrixView<T>(copied.data(), outputs.rows, outputs.cols);
    }
    correct += CountCorrect(outputs, data, begin);
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

Trainer::Trainer(Uninitialized, Model<float>& model, const Dataset& train,
                 std::vector<int64_t> rows, const Dataset* test, TrainOptions options,
                 Clock& clock)
    : model_(model),
      train_(train),
      rows_(std::move(rows)),
      test_(test),
      options_(std::move(options)),
      clock_(clock),
      rng_(options_.seed),
      device_(model.device()) {}

Trainer::Trainer(Model<float>& model, const Dataset& train, std::vector<int64_t> rows,
                 const Dataset* test, TrainOptions options, Clock& clock)
    : Trainer(Uninitialized{}, model, train, std::move(rows), test, std::move(options), clock) {
  MURMUR_CHECK(device_.is_cpu()) << "use Trainer::Create for " << device_.ToString();
  MURMUR_CHECK_OK(Allocate());
}

StatusOr<std::unique_ptr<Trainer>> Trainer::Create(Model<float>& model, const Dataset& train,
                                                   std::vector<int64_t> rows,
                                                   const Dataset* test, TrainOptions options,
                                                   Clock& clock) {
  std::unique_ptr<Trainer> trainer(new Trainer(Uninitialized{}, model, train, std::move(rows),
                                               test, std::move(options), clock));
  MURMUR_RETURN_IF_ERROR(trainer->Allocate());
  return trainer;
}

Status Trainer::Allocate() {
  using kernels::Buffer;
  const auto n = static_cast<size_t>(model_.NumParams());
  MURMUR_ASSIGN_OR_RETURN(params_, Buffer<float>::Create(device_, n));
  MURMUR_ASSIGN_OR_RETURN(grad_, Buffer<float>::Create(device_, n));
  MURMUR_ASSIGN_OR_RETURN(velocity_,
                          Buffer<float>::Create(device_, options_.sgd.momentum != 0 ? n : 0));
  const auto batch = static_cast<size_t>(options_.batch_size);
  MURMUR_ASSIGN_OR_RETURN(batch_x_, Buffer<float>::Create(device_, batch * train_.cols));
  if (train_.task == TaskKind::kMulticlass) {
    MURMUR_ASSIGN_OR_RETURN(batch_labels_, Buffer<int32_t>::Create(device_, batch));
  } else {
    MURMUR_ASSIGN_OR_RETURN(batch_targets_, Buffer<float>::Create(device_, batch));
  }
  // On a GPU only this shard's rows become floats there, once (a quarter of the set at 4
  // shards); steps then gather rows there. On the CPU a compact set stays bytes and each step
  // converts its batch's rows (one vectorized multiply-add per value): a float copy of the shard
  // would make every process fault in and zero its pages at start-up.
  const auto cols = static_cast<size_t>(train_.cols);
  const size_t shard = rows_.size();
  local_of_.assign(static_cast<size_t>(train_.rows), -1);
  const size_t converted = device_.is_cpu() && train_.compact() ? 0 : shard * cols;
  // The rows are converted straight into the buffer on the CPU, through an uninitialized staging
  // array for a GPU (start-up time: no pass zeroes what is then overwritten).
  MURMUR_ASSIGN_OR_RETURN(features_, Buffer<float>::Uninitialized(device_, converted));
  std::unique_ptr<float[]> staging;
  if (!device_.is_cpu()) staging.reset(new float[converted]);
  const std::span<float> x(device_.is_cpu() ? features_.data() : staging.get(), converted);
  std::vector<int32_t> labels;
  std::vector<float> targets;
  for (size_t k = 0; k < shard; ++k) {
    const int64_t row = rows_[k];
    if (row < 0 || row >= train_.rows) {
      return InvalidArgumentError("shard row " + std::to_string(row) + " is outside the " +
                                  std::to_string(train_.rows) + "-row training set");
    }
    local_of_[static_cast<size_t>(row)] = static_cast<int64_t>(k);
    if (converted > 0) train_.RowInto(row, x.subspan(k * cols, cols));
    if (train_.task == TaskKind::kMulticlass) {
      labels.push_back(train_.labels[static_cast<size_t>(row)]);
    } else {
      targets.push_back(train_.targets[static_cast<size_t>(row)]);
    }
  }
  if (!device_.is_cpu()) MURMUR_RETURN_IF_ERROR(features_.CopyFromHost(x));
  MURMUR_ASSIGN_OR_RETURN(labels_, Buffer<int32_t>::FromHost(device_, std::span<const int32_t>(labels)));
  MURMUR_ASSIGN_OR_RETURN(targets_, Buffer<float>::FromHost(device_, std::span<const float>(targets)));
  if (device_.is_cpu()) return OkStatus();
  MURMUR_ASSIGN_OR_RETURN(order_, Buffer<int64_t>::Create(device_, shard));
  return OkStatus();
}

std::vector<int64_t> Trainer::LocalOrder() const {
  std::vector<int64_t> local(rows_.size());
  for (size_t k = 0; k < rows_.size(); ++k) local[k] = local_of_[static_cast<size_t>(rows_[k])];
  return local;
}

void Trainer::InitializeParams() {
  std::vector<float> host(params_.size());
  model_.Initialize(host, options_.seed);
  MURMUR_CHECK_OK(params_.CopyFromHost(host));
}

StatusOr<std::vector<float>> Trainer::ParamsOnHost() const {
  std::vector<float> host(params_.size());
  MURMUR_RETURN_IF_ERROR(params_.CopyToHost(host));
  return host;
}

Status Trainer::SetParams(std::span<const float> host) { return params_.CopyFromHost(host); }

void Trainer::AddMemory(MemoryUse& memory) const {
  memory.Add("gradient", grad_.size() * sizeof(float));
  memory.Add("optimizer_state", velocity_.size() * sizeof(float));
  memory.Add("activations", model_.ScratchBytes());
  memory.Add("data",
             (features_.size() + batch_x_.size() + targets_.size() + batch_targets_.size()) *
                     sizeof(float) +
                 (labels_.size() + batch_labels_.size()) * sizeof(int32_t) +
                 order_.size() * sizeof(int64_t) + CapacityBytes(local_of_));
}

StatusOr<TrainerState> Trainer::SaveState() const {
  TrainerState state;
  MURMUR_ASSIGN_OR_RETURN(state.params, ParamsOnHost());
  state.velocity.resize(velocity_.size());
  MURMUR_RETURN_IF_ERROR(velocity_.CopyToHost(state.velocity));
  std::ostringstream rng;
  rng << rng_;
  state.rng = rng.str();
  state.order = rows_;
  state.cursor = cursor_;
  state.steps = steps_;
  return state;
}

Status Trainer::RestoreState(const TrainerState& state) {
  if (state.params.size() != params_.size() || state.velocity.size() != velocity_.size()) {
    return InvalidArgumentError("the saved parameters or momentum have another size than the model");
  }
  if (state.cursor < 0 || state.cursor >= std::max<int64_t>(1, static_cast<int64_t>(rows_.size())) ||
      state.steps < 0) {
    return InvalidArgumentError("the saved position in the epoch is outside this node's shard");
  }
  std::vector<int64_t> mine = rows_, saved = state.order;
  std::sort(mine.begin(), mine.end());
  std::sort(saved.begin(), saved.end());
  if (mine != saved) return InvalidArgumentError("the saved row order is not a permutation of this node's shard");
  std::istringstream text(state.rng);
  std::mt19937_64 rng;
  text >> rng;
  if (text.fail()) return InvalidArgumentError("the saved shuffling state does not parse");
  MURMUR_RETURN_IF_ERROR(params_.CopyFromHost(state.params));
  MURMUR_RETURN_IF_ERROR(velocity_.CopyFromHost(state.velocity));
  rng_ = rng;
  rows_ = state.order;
  if (!device_.is_cpu()) MURMUR_RETURN_IF_ERROR(order_.CopyFromHost(LocalOrder()));
  cursor_ = state.cursor;
  steps_ = state.steps;
  return OkStatus();
}

void Trainer::ResetOptimizerState() { MURMUR_CHECK_OK(velocity_.Zero()); }

int64_t Trainer::StepsPerEpoch() const {
  const auto n = static_cast<int64_t>(rows_.size());
  return (n + options_.batch_size - 1) / options_.batch_size;
}

Status Trainer::Shuffle() {
  std::shuffle(rows_.begin(), rows_.end(), rng_);
  if (device_.is_cpu()) return OkStatus();
  return order_.CopyFromHost(LocalOrder());
}

StatusOr<Batch<float>> Trainer::Gather(int64_t begin, int64_t count) {
  using kernels::ConstMatrixView;
  using kernels::MatrixView;
  const bool host = device_.is_cpu();
  const int64_t cols = train_.cols;
  const auto n = static_cast<size_t>(count);
  const auto first = static_cast<size_t>(begin);
  std::span<const int64_t> rows;  // local rows of the batch, in device_'s memory
  if (host) {
    batch_local_.resize(n);
    for (size_t i = 0; i < n; ++i) batch_local_[i] = local_of_[static_cast<size_t>(rows_[first + i])];
    rows = batch_local_;
  } else {
    rows = std::span<const int64_t>(order_.span()).subspan(first, n);
  }
  const auto shard = static_cast<int64_t>(rows_.size());
  Batch<float> batch;
  MatrixView<float> x(batch_x_.data(), count, cols);
  if (host && train_.compact()) {  // the shard stayed bytes (Allocate)
    for (size_t i = 0; i < n; ++i) {
      train_.RowInto(rows_[first + i], std::span<float>(x.data + i * static_cast<size_t>(cols),
                                                        static_cast<size_t>(cols)));
    }
  } else {
    MURMUR_RETURN_IF_ERROR(kernels::GatherRows<float>(
        device_, ConstMatrixView<float>(features_.data(), shard, cols), rows, x));
  }
  batch.x = x;
  if (train_.task == TaskKind::kMulticlass) {
    MatrixView<int32_t> labels(batch_labels_.data(), count, 1);
    MURMUR_RETURN_IF_ERROR(kernels::GatherRows<int32_t>(
        device_, ConstMatrixView<int32_t>(labels_.data(), shard, 1), rows, labels));
    batch.labels = batch_labels_.span().first(n);
  } else {
    MatrixView<float> targets(batch_targets_.data(), count, 1);
    MURMUR_RETURN_IF_ERROR(kernels::GatherRows<float>(
        device_, ConstMatrixView<float>(targets_.data(), shard, 1), rows, targets));
    batch.targets = batch_targets_.span().first(n);
  }
  return batch;
}

StatusOr<LrSchedule> ScheduleFor(const TrainOptions& options, int64_t total_samples,
                                          int64_t epoch_samples, int64_t global_batch) {
  LrScheduleOptions o = options.lr_shape;
  o.base_lr = options.sgd.learning_rate;
  if (options.lr_reference_batch > 0) {
    o.base_lr *=
        static_cast<double>(global_batch) / static_cast<double>(options.lr_reference_batch);
  }
  o.total_samples = std::max<int64_t>(total_samples, 0);
  o.warmup_samples = static_cast<int64_t>(
      std::llround(options.warmup_epochs * static_cast<double>(epoch_samples)));
  return LrSchedule::Create(o);
}

StatusOr<float> Trainer::Step(std::optional<double> lr) {
  if (rows_.empty()) return FailedPreconditionError("this node's shard has no training rows");
  if (cursor_ == 0) MURMUR_RETURN_IF_ERROR(Shuffle());
  const int64_t n = std::min<int64_t>(options_.batch_size, static_cast<int64_t>(rows_.size()) - cursor_);
  MURMUR_ASSIGN_OR_RETURN(const Batch<float> batch, Gather(cursor_, n));
  MURMUR_ASSIGN_OR_RETURN(float loss, model_.LossAndGradient(params_.span(), batch, grad_.span()));
  if (!std::isfinite(loss)) {
    return FailedPreconditionError("training loss became " + std::to_string(loss) + " at step " +
                                   std::to_string(steps_ + 1) +
                                   "; the step was not applied (try a smaller learning rate)");
  }
  if (options_.gradient_hook) MURMUR_RETURN_IF_ERROR(options_.gradient_hook(grad_.span()));
  kernels::SgdOptions sgd = options_.sgd;
  if (lr.has_value()) {
    sgd.learning_rate = *lr;
  } else if (options_.lr_schedule.has_value()) {
    sgd.learning_rate = options_.lr_schedule->At(steps_ * options_.batch_size);
  }
  last_lr_ = sgd.learning_rate;
  MURMUR_RETURN_IF_ERROR(kernels::SgdStep<float>(device_, sgd, grad_.span(), velocity_.span(),
                                                 params_.span()));
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
                                Evaluate<float>(model_, params_.span(), *test_, options_.eval_batch_size));
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
