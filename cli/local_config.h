#pragma once
// The keys of `murmur local` (flag > environment > TOML file > default; config_schema.h): the
// cluster's shape and the run's presentation, plus the gossip and coded keys it forwards to its
// nodes.

#include <string>

#include "cli/local_transport.h"
#include "gossip/mode.h"
#include "node/config/coded_config.h"
#include "node/config/config_schema.h"
#include "node/config/gossip_config.h"
#include "node/net/network_spec.h"

namespace murmur::node {

struct LocalConfig {
  gossip::Mode mode = gossip::Mode::kGossip;
  int nodes = 0;
  double duration = 0;
  double stop_grace_s = 0;  // a stop's wait for every process before SIGKILL
  double unresponsive_s = 0;  // silence before a node is called unresponsive
  std::string cluster;
  LocalTransport transport = LocalTransport::kTcp;
  net::NetworkSpec network;  // loopback, or namespaces with shaped links
  int probe_interval_ms = 0;
  int probe_timeout_ms = 0;
  std::string progress;
  bool json = false;
  std::string run_dir;
  std::string node_log_level;
  bool keep_logs = false;
  bool dry_run = false;  // check everything, start nothing
  bool admin = true;
  std::string admin_token_file;
  bool secure = false;
  std::string prometheus_targets;
  std::string straggle;  // "node=3,slowdown=4;node=5,delay=10ms"
  std::string crash;     // "node=3,at=5s,down=3s;..." (injection_lists.h: ParseCrashList)
  std::string gpus;      // GPU ordinals to spread the nodes over ("": every visible one)
  std::string exec;      // gossip: a command each node runs instead of `murmur node` (api/)
  GossipConfig gossip;
  CodedConfig coded;
};

const ConfigSchema<LocalConfig>& LocalSchema();

}  // namespace murmur::node
