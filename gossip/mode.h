#pragma once
// The modes a node runs (DESIGN.md "Modes of aggregation"), one enum for every layer.

#include <optional>
#include <string_view>
#include <vector>

namespace murmur::gossip {

enum class Mode : uint8_t { kGossip, kMembership, kCodedTree, kTree, kGc, kRing };

// "gossip", "membership", "coded-tree", "tree", "gc", "ring".
std::string_view ModeName(Mode mode);
std::optional<Mode> ParseMode(std::string_view name);
// Every mode's name, in the order above (the configuration's allowed values).
const std::vector<std::string_view>& ModeNames();
// The synchronous modes: coded-tree, tree, gc, ring (SyncNode).
inline bool IsSyncMode(Mode mode) {
  return mode == Mode::kCodedTree || mode == Mode::kTree || mode == Mode::kGc || mode == Mode::kRing;
}

}  // namespace murmur::gossip
