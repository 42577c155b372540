#pragma once
// A library peer's settings as types: what Peer::Start (peer.h) takes. A program that resolved
// `murmur node`'s keys itself (`murmur node --mode gossip`) fills these in directly; a caller
// with key → text pairs (the Python module, `murmur local --exec`'s environment) goes through
// PeerOptionsFromKeys, the one place where the library reads text.

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "kernels/device.h"
#include "node/config/node_config.h"

namespace murmur::api {

struct PeerOptions {
  // The cluster: where the peer listens, whom it joins through, its keys, membership timing.
  node::PeerNodeOptions peer;
  // The gossip machine (gossip.node: compression, the outer optimizer, topology, soft sync, the
  // target accuracy and time limit, evaluations, the finish), the epoch budget (gossip.epochs),
  // the rate's schedule (gossip.train, read when schedule_rate) and the straggler injection.
  node::GossipTrainerOptions gossip;
  int expect_members = 0;  // members to wait for before training (0: start at once)
  Duration report_interval = std::chrono::seconds(1);
  std::string log_level = "info";
  std::string admin;  // HOST:PORT of the admin port ("": none)
  std::string admin_token_file;
  std::string save_model;      // where the final buffer is written ("": nowhere)
  std::string checkpoint_dir;  // "": no checkpoints
  int64_t checkpoint_every = 0;
  std::string cluster;  // the cluster id: the checkpoints' run identity unless Hooks give one
  // Where the buffer is: host memory, or memory of that GPU (murmur's round runs there).
  kernels::Device device = kernels::Device::Cpu();
  int64_t epoch_samples = 0;  // the whole cluster's samples per epoch; required with epochs
  int64_t shard_samples = 0;  // this process's per local epoch; 0: epoch_samples / members
  bool same_init = false;     // every process starts from exactly the same values
  // No other member answered this long after the start: Next fails (0: train on alone).
  Duration join_timeout = std::chrono::seconds(30);
  // The cluster's schedule (node.gossip.train: lr, lr_schedule, warmup_epochs,
  // lr_reference_batch) gives each step's rate (Turn::lr); false: the caller's optimizer keeps
  // its own.
  bool schedule_rate = false;
};

// `murmur node`'s keys as a library peer has them before any key: the node's defaults, except
// listen on tcp://127.0.0.1:0 (a free port), no budget (the caller gives one), only the final
// evaluation, a constant rate.
node::NodeConfig DefaultPeerConfig();
// The options `config` resolves to, once (node/config: NodeOptionsFrom, GossipOptionsFrom;
// kInvalidArgument naming the key); the library's own fields keep their defaults.
StatusOr<PeerOptions> PeerOptionsFrom(const node::NodeConfig& config);
// The same with the two resolutions already made by the caller (`murmur node`): the rest of
// `config` copied beside them.
PeerOptions PeerOptionsWith(const node::NodeConfig& config, node::PeerNodeOptions peer,
                            node::GossipTrainerOptions gossip);

// What the caller gave besides the keys, which decides which keys apply.
struct KeyContext {
  bool evaluate = false;             // an evaluation: eval_every and target_accuracy apply
  bool state_hooks = false;          // save_state and restore_state: checkpoint_dir/_every apply
  bool launcher_environment = true;  // MURMUR_PEER_CONFIG and MURMUR_DEVICE are read
};

// The edge adapter: key → text pairs (PeerKnownKeys) over DefaultPeerConfig, after the launcher's
// keys (the document MURMUR_PEER_CONFIG names, which `murmur local --exec` writes for each node)
// when the context reads the environment. Every value goes through the schema's parser; kInvalidArgument names the key
// for an unknown key, a bad value, a key that does not apply to a caller's model, or a buffer
// device other than where the launcher placed the process (MURMUR_DEVICE).
StatusOr<PeerOptions> PeerOptionsFromKeys(const std::map<std::string, std::string>& keys,
                                          const KeyContext& context);

// The keys PeerOptionsFromKeys takes, sorted.
std::vector<std::string> PeerKnownKeys();

}  // namespace murmur::api
