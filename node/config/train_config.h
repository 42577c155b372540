#pragma once
// Configuration of `murmur train`: every key, its default and what it allows, in one table
// (TrainSchema in train_config.cc).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/lr_schedule.h"
#include "base/status.h"
#include "coding/compressor.h"
#include "kernels/device.h"
#include "node/config/config_schema.h"
#include "node/train/dataset.h"
#include "node/train/model.h"
#include "node/train/trainer.h"

namespace murmur::node {

struct TrainConfig {
  std::string task;  // fashion-mnist, linear, logistic
  std::string data_dir;
  std::vector<int64_t> hidden;
  int epochs = 0;
  int64_t batch_size = 0;
  double lr = 0;
  // The schedule's shape (base/lr_schedule.h: kind, milestones, factor, final); none: auto,
  // resolved by ResolveAutoSchedule.
  std::optional<LrScheduleOptions> lr_schedule;
  double warmup_epochs = 0;
  int64_t lr_reference_batch = 0;  // linear scaling rule (0: off)
  double momentum = 0;
  bool nesterov = false;
  double weight_decay = 0;
  uint64_t seed = 0;
  int shard_index = 0;
  int shard_count = 0;
  std::string shard_strategy;
  int64_t max_train_samples = 0;  // 0: all
  int64_t samples = 0;            // synthetic tasks: training rows
  int64_t features = 0;           // synthetic tasks: d
  std::optional<coding::CompressorOptions> compress;  // applied to the gradient; none: off
  kernels::DeviceSpec device;     // auto, cpu, cuda, cuda:N (resolved by kernels::ResolveDevice)
  bool tf32 = false;              // GEMMs on a GPU may use TF32
  std::string progress;           // auto, tty, plain, none
  bool json = false;
  std::string init_from;   // parameters to start from (node/train/checkpoint.h)
  std::string save_model;  // where the trained parameters go
  std::string log_level;
};

const ConfigSchema<TrainConfig>& TrainSchema();

// Cross-key checks the per-key parsers cannot do (kInvalidArgument).
Status ValidateTrainConfig(const TrainConfig& config);
// The optimizer's part of it, which every mode checks (the synchronous ones too).
Status ValidateMomentum(const TrainConfig& config);

// A compress key's value: an operator spec, checked as Compressor::Create checks it, or the word
// `off` stands for (murmur train's none, gossip's auto) as no operator.
StatusOr<std::optional<coding::CompressorOptions>> ParseCompressorKey(std::string_view text,
                                                                      std::string_view off);

// The data, the model and the trainer options the config describes.
StatusOr<TrainTest> LoadTrainData(const TrainConfig& config);
ModelSpec TrainModelSpec(const TrainConfig& config, const Dataset& train);
// The trainer options; an lr_schedule still auto is resolved as ResolveAutoSchedule does for a
// run without a gossip epoch budget.
TrainOptions TrainOptionsFrom(const TrainConfig& config);
// lr_schedule auto, resolved in this one place: cosine with a warm-up of min(0.2, epochs / 15)
// epochs (unless warmup_epochs is set) for a gossip run with an epoch budget (`gossip_epochs`
// > 0), which ends the members on nearly one model where a constant rate leaves them apart; a
// constant rate for every other run (no end for a schedule to aim at, or a single model).
void ResolveAutoSchedule(TrainConfig& config, double gossip_epochs);

}  // namespace murmur::node
