#pragma once
// `murmur sim`'s setup from its resolved keys (sim_config.h): the simulator's options, the
// workload its nodes compute and the description its first line prints. Shared by `murmur sim`
// and the fault swarm (swarm_command.cc), so that a swarm's seed replays as one `murmur sim`.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "cli/sim_config.h"
#include "node/config/config_parser.h"
#include "node/sim/simulator.h"
#include "node/sim/workload.h"

namespace murmur::node {

struct SimSetup {
  sim::SimOptions options;
  std::unique_ptr<sim::Workload> workload;  // null for membership
  int64_t batch = 0;                        // a gossip step's rows
};

// The keys `parser` was given, resolved (flag > environment > file > default), with those the
// mode or fidelity does not read refused: kInvalidArgument naming the key and why.
StatusOr<SimConfig> ResolveSimConfig(const ConfigParser<SimConfig>& parser,
                                     const std::function<const char*(const char*)>& getenv);

// kInvalidArgument (exit 2) for keys that do not fit together, naming them and why.
StatusOr<SimSetup> MakeSimSetup(const SimConfig& config);

std::string DescribeSim(const SimConfig& config, const sim::SimOptions& options);

}  // namespace murmur::node
