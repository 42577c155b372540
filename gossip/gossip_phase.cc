#include "gossip/gossip_phase.h"

#include <fmt/format.h>

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

std::string PhaseActivity(GossipPhase phase, size_t live, int expected, uint64_t awaited) {
  switch (phase) {
    case GossipPhase::kJoining:
      if (expected > 0) return fmt::format("joining: {} of {} members", live, expected);
      return fmt::format("joining: {} member{} so far", live, live == 1 ? "" : "s");
    case GossipPhase::kAwaitingModel:
      return fmt::format("waiting for a model snapshot from node {}", awaited);
    default:
      return PhaseName(phase);
  }
}

StatusOr<GossipPhase> ParsePhase(std::string_view name) {
  for (const auto& [p, n] : kPhaseNames) {
    if (name == n) return p;
  }
  return InvalidArgumentError("unknown phase '" + std::string(name) + "'");
}

}  // namespace murmur::gossip
