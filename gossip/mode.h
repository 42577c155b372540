#pragma once
// The modes a node runs (docs/design.md "Modes of aggregation"), one enum for every layer.

#include <optional>
#include <string_view>
#include <vector>

namespace murmur::gossip {

enum class Mode : uint8_t { kGossip, kMembership, kCodedTree, kTree, kGc, kRing, kPs };

// "gossip", "membership", "coded-tree", "tree", "gc", "ring", "ps".
std::string_view ModeName(Mode mode);
std::optional<Mode> ParseMode(std::string_view name);
// Every mode's name, in the order above (the configuration's allowed values).
const std::vector<std::string_view>& ModeNames();
// The modes SyncNode runs: coded-tree, tree, gc, ring and the parameter server (ps, whose async
// and stale-synchronous forms are not synchronous but share the rank assembly and the drivers).
inline bool IsSyncMode(Mode mode) {
  return mode == Mode::kCodedTree || mode == Mode::kTree || mode == Mode::kGc ||
         mode == Mode::kRing || mode == Mode::kPs;
}

}  // namespace murmur::gossip
