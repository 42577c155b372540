#pragma once
// `murmur node`'s configuration: its keys (one table: flag > environment > file > default) and
// the peer's runtime options built from them. Also what the library (api/) resolves its keys
// through, so a program on the library takes exactly `murmur node`'s keys (peer_keys.h).

#include <cstdint>
#include <string>

#include "base/status.h"
#include "node/config/coded_config.h"
#include "node/config/config_schema.h"
#include "node/config/gossip_config.h"
#include "node/peer/peer_node.h"

namespace murmur::node {

struct NodeConfig {
  gossip::Mode mode = gossip::Mode::kGossip;
  int64_t id = 0;
  std::string listen;
  std::string advertise;
  std::string seeds;
  std::string cluster;
  int64_t incarnation = 0;
  int probe_interval_ms = 0;
  int probe_timeout_ms = 0;
  int suspicion_multiplier = 0;
  int gossip_fanout = 0;
  double duration = 0;  // seconds; 0 runs until SIGINT/SIGTERM
  std::string report;   // none, text, json
  int report_interval_ms = 0;
  std::string run_dir;  // time series kept here (run_dir.h); empty: none
  std::string log_level;
  std::string admin;  // HOST:PORT of the admin HTTP port; empty: none
  std::string admin_token_file;  // bearer token for the admin port's mutating endpoints
  // Peer-link security (node/config/secrets.h).
  std::string cluster_key_file;
  std::string node_key_file;
  std::string allowed_keys_file;
  bool plaintext = false;
  // Gossip training (mode gossip).
  GossipConfig gossip;
  int shard_index = 0;
  int shard_count = 0;
  int expect_members = 0;
  std::string save_model;
  std::string checkpoint_dir;
  int64_t checkpoint_every = 0;
  // Synchronous modes (coded-tree, tree, gc, ring, ps).
  CodedConfig coded;
};

const ConfigSchema<NodeConfig>& NodeSchema();
// Checks cross-key rules and builds the runtime options (kInvalidArgument naming the key).
StatusOr<PeerNodeOptions> NodeOptionsFrom(const NodeConfig& config);

}  // namespace murmur::node
