#pragma once
// The keys of gossip training, shared by `murmur node --mode gossip` and `murmur local --mode
// gossip` (which passes the ones given to every node it starts): the model and optimizer keys
// of `murmur train` (minus its per-run ones) plus compression, averaging, local SGD, soft
// synchronization, the cluster-wide budget, evaluation and straggler injection.

#include <string>
#include <vector>

#include "base/status.h"
#include "node/config/config_schema.h"
#include "node/driver/gossip_driver.h"
#include "node/config/train_config.h"

namespace murmur::node {

struct GossipConfig {
  TrainConfig train;  // task, data, model, optimizer, seed
  double epochs = 0;  // cluster-wide
  std::string compress;
  double gamma = 0;
  std::string topology;
  int random_peers = 0;
  int local_steps = 0;
  double post_local_epoch = 0;
  int post_local_steps = 0;
  int max_lead = 0;
  int max_wait_ms = 0;
  double straggler_hold_s = 0;
  double staleness_scale = 0;
  double target_accuracy = 0;
  double time_limit_s = 0;
  double finish_wait_s = 0;
  double consensus_target = 0;
  int consensus_slack = 0;
  int eval_every = 0;
  int eval_samples = 0;
  std::string straggle;
  std::string init;
};

const ConfigSchema<GossipConfig>& GossipSchema();
// Names of GossipSchema's keys (what `murmur local` forwards to its nodes).
std::vector<std::string> GossipKeyNames();

// Checks what the per-key parsers cannot (kInvalidArgument naming the key) and fills the trainer
// options, except the peer, data set size and per-node fields.
StatusOr<GossipTrainerOptions> GossipOptionsFrom(const GossipConfig& config);

}  // namespace murmur::node
