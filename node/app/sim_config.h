#pragma once
// The keys of `murmur sim` (flag > environment > TOML scenario file > default; config_schema.h):
// the simulated cluster (mode, nodes, network, compute cost, faults), the fidelity, the outputs,
// and the gossip and coded keys of `murmur local`, which mean the same thing here.

#include <cstdint>
#include <string>

#include "node/config/coded_config.h"
#include "node/config/config_schema.h"
#include "node/config/gossip_config.h"

namespace murmur::node {

struct SimConfig {
  std::string mode;  // membership, consensus, or a mode of gossip::ModeNames()
  int nodes = 0;
  double duration = 0;  // virtual seconds at most
  std::string network;
  std::string fidelity;  // protocol, training
  int64_t dimension = 0;
  int64_t model_dimension = 0;
  int consensus_rounds = 0;
  double consensus_tolerance = 0;
  std::string sample_cost;
  std::string step_cost;
  int cores = 0;
  std::string straggle;
  std::string crash;
  std::string join;
  int probe_interval_ms = 0;
  int probe_timeout_ms = 0;
  int tick_ms = 0;
  int view_interval_ms = 0;
  int sample_ms = 0;
  std::string csv;
  bool json = false;
  std::string progress;
  std::string log_level;
  GossipConfig gossip;
  CodedConfig coded;
};

const ConfigSchema<SimConfig>& SimSchema();

// The model dimension the links carry: `model_dimension`, or else the parameter count of the MLP
// of `hidden` on Fashion-MNIST (784 inputs, 10 classes).
int64_t WireDimension(const SimConfig& config);

}  // namespace murmur::node
