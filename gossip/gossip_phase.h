#pragma once
// The phases of a gossip node's run (gossip_node.h), in the order a run passes them: joining,
// awaiting a model snapshot, training, finishing (the consensus finish), lingering (answering
// peers after the final evaluation), over. A phase only moves forward.

#include <cstdint>
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

// Whether a node in `phase` has not trained yet (it waits for members or for a model).
inline bool BeforeTraining(GossipPhase phase) {
  return phase == GossipPhase::kJoining || phase == GossipPhase::kAwaitingModel;
}

}  // namespace murmur::gossip
