#pragma once
// Which of `murmur node`'s keys configure a library peer (api/peer.h: a caller's own model
// buffer), shared by the library and `murmur local --exec`, which refuses the others before
// starting anything.

#include <set>
#include <string>

namespace murmur::node {

// The keys of NodeSchema() that concern the cluster, the gossip and the budget.
const std::set<std::string>& PeerLibraryKeys();
// Why `key` (a NodeSchema() key not in PeerLibraryKeys()) does not apply to a caller's model.
std::string WhyNotAPeerLibraryKey(const std::string& key);

}  // namespace murmur::node
