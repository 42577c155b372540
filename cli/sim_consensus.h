#pragma once
// `murmur sim --mode consensus`: CHOCO averaging alone in synchronous rounds
// (node/sim/consensus.h) from the command's keys: nodes, topology, compress, gamma, network,
// dimension, model_dimension, consensus_rounds, consensus_tolerance, seed, csv, json, progress.

#include "cli/sim_config.h"

namespace murmur::node {

// Runs it and prints the summary; the process's exit code (2: a key that does not apply or is
// wrong, with the reason on stderr; 1: a message was refused on the way).
int RunConsensusSim(const SimConfig& config);

}  // namespace murmur::node
