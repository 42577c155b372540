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
#include "node/driver/gossip_peer_options.h"
#include "node/peer/peer_node.h"
#include "node/peer/straggler.h"
#include "node/train/trainer.h"

namespace murmur::node {

// What GossipSchema resolves. Its values come from the schema's defaults, which are the option
// structs' (GossipPeerOptions, gossip::GossipNodeOptions and their parts); the member
// initializers below are only zeros.
struct GossipConfig {
  TrainConfig train;  // task, data, model, optimizer, seed
  double epochs = 0;  // cluster-wide
  std::optional<coding::CompressorOptions> compress;  // none: auto (GossipCompressor)
  double gamma = 0;
  double clip_fraction = 0;
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

// Checks what the per-key parsers cannot (kInvalidArgument naming the key: plain-round keys
// under an outer optimizer, the budget rule) and fills the peer's gossip options; `peer` (from
// NodeOptionsFrom), the data's size (epoch_samples), the members to wait for and the per-node
// fields are the caller's.
StatusOr<GossipPeerOptions> GossipOptionsFrom(const GossipConfig& config);

}  // namespace murmur::node
