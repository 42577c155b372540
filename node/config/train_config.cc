#include "node/config/train_config.h"

#include <limits>

#include "coding/compressor.h"
#include "node/train/fashion_mnist.h"
#include "node/train/synthetic.h"

namespace murmur::node {
namespace {

StatusOr<std::optional<LrScheduleOptions>> ParseScheduleKey(std::string_view text) {
  if (text == "auto") return std::optional<LrScheduleOptions>();
  MURMUR_ASSIGN_OR_RETURN(LrScheduleOptions shape, LrSchedule::Parse(text, 0));
  return std::optional<LrScheduleOptions>(shape);
}

}  // namespace

StatusOr<std::optional<coding::CompressorOptions>> ParseCompressorKey(std::string_view text,
                                                                      std::string_view off) {
  if (text == off) return std::optional<coding::CompressorOptions>();
  MURMUR_ASSIGN_OR_RETURN(coding::CompressorOptions spec, coding::ParseCompressorSpec(text));
  MURMUR_RETURN_IF_ERROR(coding::Compressor::Create(spec, 1).status());
  return std::optional<coding::CompressorOptions>(spec);
}

const ConfigSchema<TrainConfig>& TrainSchema() {
  static const ConfigSchema<TrainConfig>* schema = [] {
    auto* s = new ConfigSchema<TrainConfig>();
    using C = TrainConfig;
    s->Choice("task", &C::task, "fashion-mnist", {"fashion-mnist", "linear", "logistic"},
              "what to train: an MLP on Fashion-MNIST, or linear/logistic regression on "
              "synthetic data")
        .Text("data_dir", &C::data_dir, kFashionMnistDir, "directory of the Fashion-MNIST files")
        .IntegerList("hidden", &C::hidden, "256,128", 1, 1 << 16,
                     "hidden layer widths of the MLP (empty: softmax regression)")
        .Integer("epochs", &C::epochs, 3, 1, 100000, "passes over this node's training rows")
        .Integer<int64_t>("batch_size", &C::batch_size, 64, 1, 1 << 20, "mini-batch size")
        .Real("lr", &C::lr, "0.01", 0, 100, "SGD learning rate")
        .Parsed("lr_schedule", &C::lr_schedule, "constant",
                "auto, constant, step:F1,F2[,factor=K], cosine[:final=R]",
                "learning-rate schedule over the sample budget: constant, step:F1,F2[,factor=K] "
                "(× K at those fractions of the budget), cosine[:final=R] (down to R × lr); "
                "auto: cosine in a gossip run with an epoch budget, constant otherwise",
                &ParseScheduleKey)
        .Real("warmup_epochs", &C::warmup_epochs, "0", 0, 100000,
              "linear learning-rate warm-up over this many epochs (of the budget's epochs)")
        .Integer<int64_t>("lr_reference_batch", &C::lr_reference_batch, 0, 0, int64_t{1} << 40,
                          "linear scaling rule: lr × global batch / this batch (0: off; the "
                          "global batch of a gossip cluster is batch_size × its members)")
        .Real("momentum", &C::momentum, "0.9", 0, 0.9999, "SGD momentum (0: none)")
        .Bool("nesterov", &C::nesterov, false, "Nesterov momentum")
        .Real("weight_decay", &C::weight_decay, "0", 0, 1, "L2 weight decay")
        .Integer<uint64_t>("seed", &C::seed, 1, 0, std::numeric_limits<uint32_t>::max(),
                           "seed for initialization, shuffling and synthetic data")
        .Shards(&C::shard_index, &C::shard_count, "this node's shard (0-based)", "number of shards")
        .Choice("shard_strategy", &C::shard_strategy, "contiguous", {"contiguous", "strided"},
                "how rows are split into shards")
        .Integer<int64_t>("max_train_samples", &C::max_train_samples, 0, 0,
                          std::numeric_limits<int32_t>::max(),
                          "use only the first N training rows (0: all)")
        .Integer<int64_t>("samples", &C::samples, 10000, 1, 1 << 26,
                          "synthetic tasks: training rows")
        .Integer<int64_t>("features", &C::features, 50, 1, 1 << 16, "synthetic tasks: features")
        .Parsed(
            "compress", &C::compress, "none", "none or an operator spec",
            "compress each gradient as a peer would receive it, with error feedback: none, "
            "fp16, topk:R, dgc:R, threshold:T, onebit:T, qsgd:S, int8 [,key=value...] "
            "(coding/compressor.h)",
            +[](std::string_view text) { return ParseCompressorKey(text, "none"); })
        .Parsed("device", &C::device, "auto", "auto, cpu, cuda, cuda:N",
                "where to train: auto (a CUDA GPU when one is visible, else cpu), cpu, cuda, "
                "cuda:N",
                &kernels::ParseDeviceSpec)
        .Bool("tf32", &C::tf32, false,
              "let fp32 GEMMs on a GPU use TF32 tensor cores (about 1e-3 relative error); "
              "refused where the run trains on the CPU")
        .Progress(&C::progress,
                  "live progress on stderr: a redrawn line (tty), log lines (plain), or none")
        .SummaryJson(&C::json)
        .Text("init_from", &C::init_from, "",
              "start from the parameters in this file (--save-model of murmur train or murmur "
              "node, or a node's checkpoint) instead of the seeded initialization; it must be "
              "of the same model")
        .Text("save_model", &C::save_model, "",
              "write the trained parameters to this file (a checkpoint of kind model)")
        .LogLevel("log_level", &C::log_level, "info", "log verbosity");
    return s;
  }();
  return *schema;
}

Status ValidateTrainConfig(const TrainConfig& c) {
  if (c.shard_index >= c.shard_count) {
    return InvalidArgumentError("shard_index " + std::to_string(c.shard_index) +
                                " must be less than shard_count " +
                                std::to_string(c.shard_count));
  }
  if (c.lr_schedule.has_value() && c.lr_schedule->kind != LrScheduleKind::kConstant &&
      c.epochs <= 0) {
    return InvalidArgumentError(
        "lr_schedule: step and cosine need an epoch budget (they decay over the budget's "
        "samples)");
  }
  if (c.epochs > 0 && c.warmup_epochs >= c.epochs) {
    return InvalidArgumentError("warmup_epochs " + std::to_string(c.warmup_epochs) +
                                " must be less than the epochs of the budget (" +
                                std::to_string(c.epochs) + ")");
  }
  return ValidateMomentum(c);
}

Status ValidateMomentum(const TrainConfig& c) {
  if (c.nesterov && c.momentum == 0) {
    return InvalidArgumentError(
        "nesterov needs momentum > 0 (with --momentum 0 pass --nesterov=false: the cluster "
        "modes use Nesterov by default)");
  }
  return OkStatus();
}

StatusOr<TrainTest> LoadTrainData(const TrainConfig& c) {
  StatusOr<TrainTest> data = [&]() -> StatusOr<TrainTest> {
    if (c.task == "fashion-mnist") return LoadFashionMnist(c.data_dir);
    SyntheticOptions o;
    o.train_samples = c.samples;
    o.test_samples = std::max<int64_t>(1, c.samples / 5);
    o.features = c.features;
    o.seed = c.seed;
    return c.task == "linear" ? MakeLinearRegression(o) : MakeGaussianMixture(o);
  }();
  if (data.ok() && c.max_train_samples > 0) data->train.Truncate(c.max_train_samples);
  return data;
}

ModelSpec TrainModelSpec(const TrainConfig& c, const Dataset& train) {
  if (c.task == "linear") return ModelSpec::LinearRegression(train.cols);
  if (c.task == "logistic") return ModelSpec::LogisticRegression(train.cols);
  return ModelSpec::Mlp(train.cols, c.hidden, train.num_classes);
}

TrainOptions TrainOptionsFrom(const TrainConfig& c) {
  TrainOptions o;
  o.epochs = c.epochs;
  o.batch_size = c.batch_size;
  o.sgd.learning_rate = c.lr;
  o.sgd.momentum = c.momentum;
  TrainConfig resolved = c;
  ResolveAutoSchedule(resolved, 0);
  o.lr_shape = *resolved.lr_schedule;
  o.warmup_epochs = resolved.warmup_epochs;
  o.lr_reference_batch = c.lr_reference_batch;
  o.sgd.nesterov = c.nesterov;
  o.sgd.weight_decay = c.weight_decay;
  o.seed = c.seed;
  return o;
}

void ResolveAutoSchedule(TrainConfig& c, double gossip_epochs) {
  if (c.lr_schedule.has_value()) return;
  c.lr_schedule = LrScheduleOptions{};
  if (gossip_epochs <= 0) return;
  c.lr_schedule->kind = LrScheduleKind::kCosine;
  if (c.warmup_epochs == 0) c.warmup_epochs = std::min(0.2, gossip_epochs / 15);
}

}  // namespace murmur::node
