#pragma once
// The fault swarm's draw (`murmur swarm`): one seed gives one simulated cluster and one fault
// schedule, written as the `murmur sim` flags that run it, so that every seed replays as one
// command. Drawn per seed: the mode (gossip with and without the outer optimizer, membership,
// ring, ps, coded-tree, tree, gc), the cluster's size and shape, topology, compressor, soft-sync
// lead and finish wait, and faults: crashes with and without a restart, late joins, partitions
// and their heals, message loss, duplication, reordering (jitter), corrupted bytes, stragglers
// (slowed, delayed, paused, dropping their sends), forward clock jumps, an insider sending
// hostile copies of its messages (a step clock out of bounds, a NaN). Pure: a function of the
// seed.

#include <cstdint>
#include <string>
#include <vector>

namespace murmur::node {

struct SwarmScenario {
  uint64_t seed = 0;
  std::string mode;                 // gossip, gossip+outer, membership, ring, ps, coded-tree, ...
  std::vector<std::string> faults;  // the fault kinds it holds (SwarmFaultKinds' names)
  std::vector<std::string> args;    // `murmur sim`'s flags, "--key=value" each
};

// Every fault kind a scenario may hold, in the order a table shows them.
const std::vector<std::string>& SwarmFaultKinds();
// Every mode a scenario may be, in the order a table shows them.
const std::vector<std::string>& SwarmModes();

SwarmScenario DrawScenario(uint64_t seed);

// `args` as one shell command line: "murmur sim --key=value ..." (values quoted where the shell
// needs it).
std::string ReplayCommand(const std::vector<std::string>& args);
// The flags of a replay command line (ReplayCommand's output, "murmur sim" optional); empty
// for a blank or comment line.
std::vector<std::string> ParseReplayLine(const std::string& line);

}  // namespace murmur::node
