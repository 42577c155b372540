#pragma once
// The phases of a gossip node's run (gossip_node.h), in the order a run passes them: joining,
// awaiting a model snapshot, training, finishing (the consensus finish), lingering (answering
// peers after the final evaluation), over. A phase only moves forward.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace murmur::gossip {

enum class GossipPhase : uint8_t {
  kJoining,
  kAwaitingModel,
  kTraining,
  kFinishing,
  kLingering,
  kOver
};

// A phase by name, as the node's report lines carry it: "joining", "awaiting_model", "training",
// "finishing", "lingering", "over"; and back (kInvalidArgument for another word).
const char* PhaseName(GossipPhase phase);
StatusOr<GossipPhase> ParsePhase(std::string_view name);

// What a node in `phase` is doing, for a person: "joining: 2 of 4 members" (`live` of
// `expected`; 0: none expected), "waiting for a model snapshot from node 3" (`awaited`), or the
// phase's name.
std::string PhaseActivity(GossipPhase phase, size_t live, int expected, uint64_t awaited);

// Whether a node in `phase` has not trained yet (it waits for members or for a model).
inline bool BeforeTraining(GossipPhase phase) {
  return phase == GossipPhase::kJoining || phase == GossipPhase::kAwaitingModel;
}

}  // namespace murmur::gossip
