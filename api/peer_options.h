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
  // `murmur node`'s keys, resolved (node/config/node_config.h). The peer reads the cluster's
  // (listen, seeds, keys, probes, admin, expect_members), the gossip's (node.gossip: compress,
  // outer, topology, soft sync, straggle), the budget's (epochs, time_limit_s, target_accuracy,
  // finish_wait_s), the rate's when schedule_rate, eval_every, save_model and the checkpoints;
  // the model's and the data's keys are the caller's business and not read.
  node::NodeConfig node;
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

// What a library peer has before any key: `murmur node`'s defaults, except listen on
// tcp://127.0.0.1:0 (a free port), no budget (the caller gives one), only the final evaluation,
// a constant rate.
PeerOptions DefaultPeerOptions();

// What the caller gave besides the keys, which decides which keys apply.
struct KeyContext {
  bool evaluate = false;             // an evaluation: eval_every and target_accuracy apply
  bool state_hooks = false;          // save_state and restore_state: checkpoint_dir/_every apply
  bool launcher_environment = true;  // MURMUR_PEER_ARGS and MURMUR_DEVICE are read
};

// The edge adapter: key → text pairs (PeerKnownKeys) over DefaultPeerOptions, after the launcher's
// flags (MURMUR_PEER_ARGS, parsed by `murmur node`'s own flag parser) when the context reads
// the environment. Every value goes through the schema's parser; kInvalidArgument names the key
// for an unknown key, a bad value, a key that does not apply to a caller's model, or a buffer
// device other than where the launcher placed the process (MURMUR_DEVICE).
StatusOr<PeerOptions> PeerOptionsFromKeys(const std::map<std::string, std::string>& keys,
                                          const KeyContext& context);

// The keys PeerOptionsFromKeys takes, sorted.
std::vector<std::string> PeerKnownKeys();

}  // namespace murmur::api
