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
#include "node/driver/gossip_peer_options.h"

namespace murmur::api {

struct PeerOptions {
  // The peer: its cluster (gossip.peer), its gossip machine (gossip.node), the run's budget,
  // data, rate schedule, straggler injection and waits, as the session takes them whole.
  // A library peer's defaults differ from that struct's in three places (PeerOptionsFromKeys
  // starts from DefaultPeerConfig): no budget until the caller gives one, only the final
  // evaluation, and a constant rate.
  node::GossipPeerOptions gossip;
  std::string log_level = "info";
  std::string admin;  // HOST:PORT of the admin port ("": none)
  std::string admin_token_file;
  std::string save_model;      // where the final buffer is written ("": nowhere)
  std::string checkpoint_dir;  // "": no checkpoints
  int64_t checkpoint_every = 0;
  std::string cluster;  // the cluster id: the checkpoints' run identity unless Hooks give one
  // Where the buffer is: host memory, or memory of that GPU (murmur's round runs there).
  kernels::Device device = kernels::Device::Cpu();
  // The caller's keys that the launcher's flags overrode, in words (logged at Start).
  std::vector<std::string> launcher_overrides;
};

// `murmur node`'s keys as a library peer has them before any key: the node's defaults, except
// listen on tcp://127.0.0.1:0 (a free port), no budget (the caller gives one), only the final
// evaluation, a constant rate.
node::NodeConfig DefaultPeerConfig();
// The options `config` resolves to, once (node/config: NodeOptionsFrom, GossipOptionsFrom;
// kInvalidArgument naming the key); the library's own fields keep their defaults.
StatusOr<PeerOptions> PeerOptionsFrom(const node::NodeConfig& config);
// The same with the two resolutions already made by the caller (`murmur node`): `peer` goes
// into `gossip` whole, and the rest of `config` beside them.
PeerOptions PeerOptionsWith(const node::NodeConfig& config, node::PeerNodeOptions peer,
                            node::GossipPeerOptions gossip);

// What the caller gave besides the keys, which decides which keys apply.
struct KeyContext {
  bool evaluate = false;             // an evaluation: eval_every and target_accuracy apply
  bool state_hooks = false;          // save_state and restore_state: checkpoint_dir/_every apply
  bool launcher_environment = true;  // MURMUR_PEER_CONFIG and MURMUR_DEVICE are read
};

// The edge adapter: key → text pairs (PeerKnownKeys) over DefaultPeerConfig, after the launcher's
// keys (the document MURMUR_PEER_CONFIG names, which `murmur local --exec` writes for each node)
// when the context reads the environment. The launcher's keys win over the caller's (a flag
// given to the launcher sets the run; PeerOptions::launcher_overrides says what it overrode),
// except those MURMUR_LAUNCHER_DEFAULTS lists (comma-separated): the launcher's own defaults,
// which a caller's value replaces. Every value goes through the schema's parser; kInvalidArgument
// names the key for an unknown key, a bad value, a key that does not apply to a caller's model, or
// a buffer device other than where the launcher placed the process (MURMUR_DEVICE).
StatusOr<PeerOptions> PeerOptionsFromKeys(const std::map<std::string, std::string>& keys,
                                          const KeyContext& context);

// The keys PeerOptionsFromKeys takes, sorted.
std::vector<std::string> PeerKnownKeys();

}  // namespace murmur::api
