#pragma once
// The keys of gossip training, shared by `murmur node --mode gossip` and `murmur local --mode
// gossip` (which passes the ones given to every node it starts): the model and optimizer keys
// of `murmur train` (minus its per-run ones) plus compression, averaging, local SGD, soft
// synchronization, the cluster-wide budget, evaluation and straggler injection.

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/status.h"
#include "gossip/gossip_node.h"
#include "node/config/config_schema.h"
#include "node/config/train_config.h"
#include "node/peer/peer_node.h"
#include "node/peer/straggler.h"
#include "node/train/trainer.h"

namespace murmur::node {

// What GossipSchema resolves. Its values come from the schema's defaults, which are the option
// structs' (GossipTrainerOptions, gossip::GossipNodeOptions and their parts); the member
// initializers below are only zeros.
struct GossipConfig {
  TrainConfig train;  // task, data, model, optimizer, seed
  double epochs = 0;  // cluster-wide
  std::optional<coding::CompressorOptions> compress;  // none: auto (GossipCompressor)
  double gamma = 0;
  gossip::Topology topology = gossip::Topology::kRing;
  int random_peers = 0;
  int local_steps = 0;
  double post_local_epoch = 0;
  int post_local_steps = 0;
  int max_lead = 0;
  int max_wait_ms = 0;
  double max_wait_steps = 0;
  double straggler_hold_s = 0;
  double staleness_scale = 0;
  double target_accuracy = 0;
  double time_limit_s = 0;
  double finish_wait_s = 0;
  double consensus_target = 0;
  int consensus_slack = 0;
  std::optional<gossip::OuterOptions> outer;
  int eval_every = 0;
  int eval_samples = 0;
  std::string straggle;
  std::string init;
  // The keys a file, the environment or a flag gave (ConfigSchema::Given).
  std::set<std::string> given;
};

// The options of gossip training with murmur's own Trainer, from GossipOptionsFrom.
struct GossipTrainerOptions {
  PeerNodeOptions peer;
  TrainOptions train;                 // batch size, optimizer, shuffling seed
  uint64_t init_seed = 1;             // the cluster's common initial model
  bool per_node_init = false;         // every node draws its own initial model instead
  // The machine's own keys (gossip/gossip_node.h: compression, topology, H, soft sync, the
  // target accuracy and time limit, evaluation, joining, linger); the session fills in the
  // node's id, incarnation, shard size and the budget in samples.
  gossip::GossipNodeOptions node;
  // Budget: the run ends at the first of epochs, node.target_accuracy, node.time_limit (each 0 =
  // not used; at least one must be set).
  double epochs = 3;                  // passes over the whole training set, all members' samples
  int64_t dataset_rows = 0;           // size of the whole training set
  int64_t eval_samples = 1000;        // test rows used by the periodic evaluations
  StragglerOptions straggler;

  // The budget rule, stated once: at least one of epochs, target accuracy and time limit.
  Status CheckBudget() const;
  Status Validate() const;
};

const ConfigSchema<GossipConfig>& GossipSchema();

// The operator a gossip run compresses with: `compress`, or for auto int8 under an outer optimizer
// (its pseudo-gradients every H steps, nearly lossless; top-k's γ of 0.05 left the members'
// anchors apart) and top-1 % with fp16 values for plain CHOCO rounds every step.
coding::CompressorOptions GossipCompressor(const GossipConfig& config);
// What a run reports as its averaging: "outer nesterov:every=80,... over CHOCO int8" or
// "CHOCO-SGD topk:0.01,values=fp16".
std::string GossipAveraging(const GossipConfig& config);
// The keys that set plain CHOCO rounds (local_steps, post-local SGD, consensus control): under
// an outer optimizer a round is every H steps, so giving one of them is refused.
const std::vector<std::string>& PlainRoundKeys();
// Names of GossipSchema's keys (what `murmur local` forwards to its nodes).
std::vector<std::string> GossipKeyNames();

// Checks what the per-key parsers cannot (kInvalidArgument naming the key) and fills the trainer
// options, except the peer, data set size and per-node fields.
StatusOr<GossipTrainerOptions> GossipOptionsFrom(const GossipConfig& config);

}  // namespace murmur::node
