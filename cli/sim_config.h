#pragma once
// The keys of `murmur sim` (flag > environment > TOML scenario file > default; config_schema.h):
// the simulated cluster (mode, nodes, network, compute cost, faults), the fidelity, the outputs,
// and the gossip and coded keys of `murmur local`, which mean the same thing here.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "gossip/mode.h"
#include "node/config/coded_config.h"
#include "node/config/config_schema.h"
#include "node/config/gossip_config.h"

namespace murmur::node {

// --mode: a node mode (gossip::Mode), or consensus: CHOCO averaging alone, in rounds.
struct SimMode {
  gossip::Mode mode = gossip::Mode::kGossip;
  bool consensus = false;
  std::string_view Name() const { return consensus ? "consensus" : gossip::ModeName(mode); }
};

// --fidelity: a hashed least-squares task per node (protocol), or the real Trainer (training).
enum class SimFidelity { kProtocol, kTraining };

struct SimConfig {
  SimMode mode;
  int nodes = 0;
  double duration = 0;  // virtual seconds at most
  std::string network;
  SimFidelity fidelity = SimFidelity::kProtocol;
  int64_t dimension = 0;
  int64_t model_dimension = 0;
  int consensus_rounds = 0;
  double consensus_tolerance = 0;
  Duration sample_cost{0};
  Duration step_cost{0};
  std::optional<Duration> eval_cost;  // "auto" (none): sample_cost / 3
  Duration start_cost{0};
  int cores = 0;
  std::string straggle;
  std::string crash;
  std::string join;
  std::string partition;
  std::string clock_jump;
  std::string attack;
  bool invariants = false;
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

// Keys that `config`'s mode and fidelity do not read, with why: set (not at their default),
// `murmur sim` refuses them rather than run without them. membership reads only the cluster,
// network, membership timing, faults (crash, join), outputs and seed; consensus_rounds and
// consensus_tolerance are the consensus mode's; dimension and model_dimension protocol
// fidelity's. (The training modes' own keys: RefuseOtherModeKeys.)
struct UnreadKeys {
  std::vector<std::string> keys;
  std::string why;
};
std::vector<UnreadKeys> SimUnreadKeys(const SimConfig& config);

// The model dimension the links carry: `model_dimension`, or else the parameter count of the MLP
// of `hidden` on Fashion-MNIST (784 inputs, 10 classes).
int64_t WireDimension(const SimConfig& config);

}  // namespace murmur::node
