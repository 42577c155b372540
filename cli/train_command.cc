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

int TrainCommand::Run() {
  StatusOr<TrainConfig> resolved = parser_.Resolve(std::getenv);
  Status valid = resolved.ok() ? ValidateTrainConfig(*resolved) : resolved.status();
  if (!valid.ok()) {
    std::fprintf(stderr, "murmur train: %s\n", std::string(valid.message()).c_str());
    return 2;
  }
  const TrainConfig& config = *resolved;
  MURMUR_CHECK_OK(SetLogLevel(config.log_level));
  // A model that could not be written would be lost at the end of the run: refused now.
  if (!config.save_model.empty()) {
    if (Status writable = CheckWritableFilePath(config.save_model, "save_model"); !writable.ok()) {
      std::fprintf(stderr, "murmur train: %s\n", std::string(writable.message()).c_str());
      return 2;
    }
  }

  // Data that is not there (or not Fashion-MNIST) is the user's to fix: exit 2, as `murmur node`.
  StatusOr<TrainTest> data = LoadTrainData(config);
  if (!data.ok()) {
    std::fprintf(stderr, "murmur train: %s\n", data.status().ToString().c_str());
    return 2;
  }
  StatusOr<kernels::Device> device = kernels::ResolveDevice(config.device);
  if (!device.ok()) {
    std::fprintf(stderr, "murmur train: %s\n", std::string(device.status().message()).c_str());
    return 2;
  }
  if (Status tf32 = kernels::CheckTf32(config.tf32, *device); !tf32.ok()) {
    std::fprintf(stderr, "murmur train: %s\n", std::string(tf32.message()).c_str());
    return 2;
  }
  device->allow_tf32 = config.tf32;
  StatusOr<Model<float>> model = Model<float>::Create(TrainModelSpec(config, data->train), *device);
  if (!model.ok()) {
    std::fprintf(stderr, "murmur train: %s\n", std::string(model.status().message()).c_str());
    return 2;
  }
  auto strategy = ParseShardStrategy(config.shard_strategy);
  auto rows = ShardRows(data->train.rows, config.shard_index, config.shard_count, *strategy);
  if (!rows.ok()) {
    std::fprintf(stderr, "murmur train: %s\n", std::string(rows.status().message()).c_str());
    return 2;
  }
  const RunInfo info{config.task, model->spec().ToString(), model->NumParams(),
                     static_cast<int64_t>(rows->size()), data->test.rows};
  MURMUR_LOG_INFO(
      "training {} on {} ({} of {} rows, shard {}/{}), {} parameters, {} epochs, "
      "batch {}, on {}",
      info.model, config.task, info.train_rows, data->train.rows, config.shard_index,
      config.shard_count, info.params, config.epochs, config.batch_size, device->ToString());

  TrainOptions options = TrainOptionsFrom(config);
  {
    const int64_t shard = static_cast<int64_t>(rows->size());
    auto schedule = ScheduleFor(options, shard * config.epochs, shard, config.batch_size);
    if (!schedule.ok()) {
      std::fprintf(stderr, "murmur train: %s\n", std::string(schedule.status().message()).c_str());
      return 2;
    }
    options.lr_schedule = *schedule;
    MURMUR_LOG_INFO("learning rate: {}", schedule->ToString());
  }
  std::optional<GradientCompression> compression;
  if (config.compress.has_value()) {
    auto created =
        GradientCompression::Create(*config.compress, static_cast<size_t>(info.params), *device);
    if (!created.ok()) {
      std::fprintf(stderr, "murmur train: compress: %s\n",
                   std::string(created.status().message()).c_str());
      return 2;
    }
    compression.emplace(std::move(*created));
    options.gradient_hook = [&compression](std::span<float> g) { return compression->Apply(g); };
    MURMUR_LOG_INFO("compressing the gradient with {}",
                    coding::CompressorSpec(compression->options()));
  }
  RealClock clock;
  StatusOr<std::unique_ptr<Trainer>> created = Trainer::Create(
      *model, data->train, std::move(*rows), &data->test, std::move(options), clock);
  if (!created.ok()) {
    std::fprintf(stderr, "murmur train: %s\n", created.status().ToString().c_str());
    return 1;
  }
  Trainer& trainer = **created;
  trainer.InitializeParams();
  if (!config.init_from.empty()) {
    auto params = LoadModel(config.init_from, model->spec().ToString(),
                            static_cast<size_t>(model->NumParams()));
    Status set = params.ok() ? trainer.SetParams(*params) : params.status();
    if (!set.ok()) {
      std::fprintf(stderr, "murmur train: init_from: %s\n", std::string(set.message()).c_str());
      return 2;
    }
    MURMUR_LOG_INFO("starting from the parameters in '{}'", config.init_from);
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
    Status saved = params.ok() ? SaveModel(config.save_model, model->spec().ToString(), *params)
                               : params.status();
    if (!saved.ok()) {
      std::fprintf(stderr, "murmur train: save_model: %s\n", saved.ToString().c_str());
      return 1;
    }
  }
  std::optional<CompressionReport> report;
  if (compression.has_value()) report = compression->Report();
  const CompressionReport* r = report.has_value() ? &*report : nullptr;
  const std::string out =
      config.json ? SummaryJson(info, *summary, r) + "\n" : SummaryText(info, *summary, r);
  std::fputs(out.c_str(), stdout);
  return 0;
}

std::unique_ptr<Command> MakeTrainCommand(CLI::App& app) {
  return std::make_unique<TrainCommand>(app);
}

}  // namespace murmur::node
