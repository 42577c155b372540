#pragma once
// Seed addresses to transport endpoints. A seed is "host:port", "tcp://host:port" or
// "ipc://path"; a host name may resolve to several addresses (a Kubernetes headless Service
// returns one per pod), and each becomes a seed. Names that do not resolve yet (pods still
// starting) are skipped with a warning: the node re-resolves periodically.

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace murmur::node {

// Normalizes one seed to an endpoint without resolving ("h:1" -> "tcp://h:1").
// kInvalidArgument when it has no port or a bad one.
StatusOr<std::string> SeedEndpoint(std::string_view seed);

// Splits "a:1, b:2" and checks every entry (the first bad one is the error).
StatusOr<std::vector<std::string>> ParseSeedList(std::string_view list);

// Resolves tcp endpoints' host names (IPv4 and IPv6) to numeric endpoints, deduplicated, in a
// stable order. `unresolved` receives the names that failed.
std::vector<std::string> ResolveSeeds(const std::vector<std::string>& endpoints,
                                      std::vector<std::string>* unresolved = nullptr);

}  // namespace murmur::node
