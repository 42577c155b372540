#pragma once
// The loop every `murmur local` mode shares (local_mode.h says what a mode adds): spawn the
// nodes, poll them and show the run live on stderr until it is done, stop them, report, clean up.

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "cli/injection_lists.h"
#include "cli/local_cluster.h"
#include "cli/local_config.h"
#include "cli/local_mode.h"
#include "node/net/netns_network.h"

namespace murmur::node {

// Runs `mode`'s nodes (their logs in `dir`; `straggle`: a node's --straggle by index; `crashes`:
// the injected ones; `network`: namespaces they run in, or nullptr for loopback). The exit
// status: 0, or that of the first failed node (local_cluster.h FailureExitCode).
int RunLocal(const LocalConfig& config, LocalMode& mode, const std::filesystem::path& dir,
             const std::map<int, std::string>& straggle, std::vector<CrashPlan> crashes,
             const net::NetnsNetwork* network);

}  // namespace murmur::node
