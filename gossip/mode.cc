#include "gossip/mode.h"

#include <array>

namespace murmur::gossip {
namespace {

constexpr std::array<std::string_view, 7> kNames = {"gossip", "membership", "coded-tree", "tree",
                                                    "gc",     "ring",       "ps"};

}  // namespace

std::string_view ModeName(Mode mode) { return kNames[static_cast<size_t>(mode)]; }

std::optional<Mode> ParseMode(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<Mode>(i);
  }
  return std::nullopt;
}

const std::vector<std::string_view>& ModeNames() {
  static const std::vector<std::string_view> names(kNames.begin(), kNames.end());
  return names;
}

}  // namespace murmur::gossip
