#pragma once
// Configuration of `murmur train`: every key, its default and what it allows, in one table
// (TrainSchema in train_config.cc).

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
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
  std::string lr_schedule;        // base/lr_schedule.h
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
  std::string compress;           // compression spec applied to the gradient; "none": off
  std::string device;             // auto, cpu, cuda, cuda:N (kernels::ResolveDevice)
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

// The data, the model and the trainer options the config describes.
StatusOr<TrainTest> LoadTrainData(const TrainConfig& config);
ModelSpec TrainModelSpec(const TrainConfig& config, const Dataset& train);
TrainOptions TrainOptionsFrom(const TrainConfig& config);

}  // namespace murmur::node
