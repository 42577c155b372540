// `murmur train`: single-node training with live progress and a final summary.

#include <cstdio>
#include <cstdlib>
#include <optional>

#include "base/check.h"
#include "base/clock.h"
#include "base/file.h"
#include "base/log.h"
#include "cli/command.h"
#include "cli/progress.h"
#include "cli/summary_json.h"
#include "node/config/train_config.h"
#include "node/train/checkpoint.h"
#include "node/train/gradient_compression.h"
#include "node/train/sharding.h"
#include "node/train/trainer.h"

namespace murmur::node {

class TrainCommand : public ConfiguredCommand<TrainConfig> {
 public:
  explicit TrainCommand(CLI::App& app)
      : ConfiguredCommand(
            app, "train",
            "Train one node on its shard (default: MLP 784-256-128-10 on Fashion-MNIST)",
            TrainSchema()) {}
  int Run() override;
};

namespace {

// What a run trains: the data, where, the model, this node's rows. Every failure here is the
// user's to fix (exit 2).
struct TrainSetup {
  TrainTest data;
  kernels::Device device;
  std::optional<Model<float>> model;
  std::vector<int64_t> rows;
};

StatusOr<TrainSetup> Prepare(const TrainConfig& config) {
  // A model that could not be written would be lost at the end of the run: refused now.
  if (!config.save_model.empty()) {
    MURMUR_RETURN_IF_ERROR(CheckWritableFilePath(config.save_model, "save_model"));
  }
  TrainSetup s;
  // Data that is not there (or not Fashion-MNIST) is the user's to fix, as in `murmur node`.
  MURMUR_ASSIGN_OR_RETURN(s.data, LoadTrainData(config));
  MURMUR_ASSIGN_OR_RETURN(s.device, kernels::ResolveDevice(config.device));
  MURMUR_RETURN_IF_ERROR(kernels::CheckTf32(config.tf32, s.device));
  s.device.allow_tf32 = config.tf32;
  MURMUR_ASSIGN_OR_RETURN(s.model,
                          Model<float>::Create(TrainModelSpec(config, s.data.train), s.device));
  auto strategy = ParseShardStrategy(config.shard_strategy);
  MURMUR_ASSIGN_OR_RETURN(
      s.rows, ShardRows(s.data.train.rows, config.shard_index, config.shard_count, *strategy));
  return s;
}

// The trainer's options: the schedule over this node's budget, and the gradient's compression
// (set into `compression`, which the options' hook calls) when the config asks for one.
StatusOr<TrainOptions> Options(const TrainConfig& config, const TrainSetup& s,
                               std::optional<GradientCompression>& compression) {
  TrainOptions options = TrainOptionsFrom(config);
  const auto shard = static_cast<int64_t>(s.rows.size());
  MURMUR_ASSIGN_OR_RETURN(options.lr_schedule,
                          ScheduleFor(options, shard * config.epochs, shard, config.batch_size));
  MURMUR_LOG_INFO("learning rate: {}", options.lr_schedule->ToString());
  if (!config.compress.has_value()) return options;
  StatusOr<GradientCompression> created = GradientCompression::Create(
      *config.compress, static_cast<size_t>(s.model->NumParams()), s.device);
  if (!created.ok()) {
    return InvalidArgumentError("compress: " + std::string(created.status().message()));
  }
  compression.emplace(*std::move(created));
  options.gradient_hook = [&compression](std::span<float> g) { return compression->Apply(g); };
  MURMUR_LOG_INFO("compressing the gradient with {}",
                  coding::CompressorSpec(compression->options()));
  return options;
}

// The parameters of `init_from` into the trainer (of the same model).
Status InitFrom(const std::string& path, const Model<float>& model, Trainer& trainer) {
  auto params = LoadModel(path, model.spec().ToString(), static_cast<size_t>(model.NumParams()));
  Status set = params.ok() ? trainer.SetParams(*params) : params.status();
  if (!set.ok()) return Status(set.code(), "init_from: " + std::string(set.message()));
  MURMUR_LOG_INFO("starting from the parameters in '{}'", path);
  return OkStatus();
}

int Refuse(const Status& s) {
  std::fprintf(stderr, "murmur train: %s\n", std::string(s.message()).c_str());
  return 2;
}

}  // namespace

int TrainCommand::Run() {
  StatusOr<TrainConfig> resolved = parser_.Resolve(std::getenv);
  if (!resolved.ok()) return Refuse(resolved.status());
  if (Status valid = ValidateTrainConfig(*resolved); !valid.ok()) return Refuse(valid);
  const TrainConfig& config = *resolved;
  MURMUR_CHECK_OK(SetLogLevel(config.log_level));
  StatusOr<TrainSetup> setup = Prepare(config);
  if (!setup.ok()) return Refuse(setup.status());
  TrainSetup& s = *setup;
  const RunInfo info{config.task, s.model->spec().ToString(), s.model->NumParams(),
                     static_cast<int64_t>(s.rows.size()), s.data.test.rows};
  MURMUR_LOG_INFO(
      "training {} on {} ({} of {} rows, shard {}/{}), {} parameters, {} epochs, "
      "batch {}, on {}",
      info.model, config.task, info.train_rows, s.data.train.rows, config.shard_index,
      config.shard_count, info.params, config.epochs, config.batch_size, s.device.ToString());
  std::optional<GradientCompression> compression;
  StatusOr<TrainOptions> options = Options(config, s, compression);
  if (!options.ok()) return Refuse(options.status());
  RealClock clock;
  StatusOr<std::unique_ptr<Trainer>> created = Trainer::Create(
      *s.model, s.data.train, std::move(s.rows), &s.data.test, *std::move(options), clock);
  if (!created.ok()) {
    std::fprintf(stderr, "murmur train: %s\n", created.status().ToString().c_str());
    return 1;
  }
  Trainer& trainer = **created;
  trainer.InitializeParams();
  if (!config.init_from.empty()) {
    if (Status set = InitFrom(config.init_from, *s.model, trainer); !set.ok()) return Refuse(set);
  }
  ProgressReporter reporter(ResolveProgressMode(config.progress, stderr), stderr, clock);
  StatusOr<TrainSummary> summary = trainer.Run([&](const TrainProgress& p) { reporter.Update(p); });
  reporter.Finish();
  if (!summary.ok()) {
    std::fprintf(stderr, "murmur train: %s\n", summary.status().ToString().c_str());
    return 1;
  }
  if (!config.save_model.empty()) {
    auto params = trainer.ParamsOnHost();
    Status saved = params.ok() ? SaveModel(config.save_model, s.model->spec().ToString(), *params)
                               : params.status();
    if (!saved.ok()) {
      std::fprintf(stderr, "murmur train: save_model: %s\n", saved.ToString().c_str());
      return 1;
    }
  }
  std::optional<CompressionReport> report;
  if (compression.has_value()) report = compression->Report();
  const CompressionReport* r = report.has_value() ? &*report : nullptr;
  if (!WriteSummary(SummaryJson(info, *summary, r), {"murmur train", config.json, {}})) {
    std::fputs(SummaryText(info, *summary, r).c_str(), stdout);
  }
  return 0;
}

std::unique_ptr<Command> MakeTrainCommand(CLI::App& app) {
  return std::make_unique<TrainCommand>(app);
}

}  // namespace murmur::node
