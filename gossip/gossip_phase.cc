#include "gossip/gossip_phase.h"

#include <string>
#include <utility>

#include "base/check.h"

namespace murmur::gossip {
namespace {

constexpr std::pair<GossipPhase, const char*> kPhaseNames[] = {
    {GossipPhase::kJoining, "joining"},     {GossipPhase::kAwaitingModel, "awaiting_model"},
    {GossipPhase::kTraining, "training"},   {GossipPhase::kFinishing, "finishing"},
    {GossipPhase::kLingering, "lingering"}, {GossipPhase::kOver, "over"}};

}  // namespace

const char* PhaseName(GossipPhase phase) {
  for (const auto& [p, name] : kPhaseNames) {
    if (p == phase) return name;
  }
  MURMUR_CHECK(false) << "a phase without a name: " << static_cast<int>(phase);
  return "";
}

StatusOr<GossipPhase> ParsePhase(std::string_view name) {
  for (const auto& [p, n] : kPhaseNames) {
    if (name == n) return p;
  }
  return InvalidArgumentError("unknown phase '" + std::string(name) + "'");
}

}  // namespace murmur::gossip
