#pragma once
// A gossip node's checkpoint (issue 20): what RunGossipTrainer writes every `every` local steps
// and when it ends (SIGTERM included), and reads back when it starts, so a node killed and
// restarted trains on at its own step instead of copying a peer. It holds the trainer's state
// (parameters, momentum, shuffling RNG, the epoch's row order and position), the node's clocks
// (step clock, local steps, samples) and its public copy x̂_i (x − x̂ is the compressed update
// not sent yet). The copies of the neighbours' public copies are not saved: their streams moved
// on while the node was down, and the node's new incarnation makes them resend snapshots.

#include <cstdint>
#include <span>
#include <string>

#include "base/status.h"
#include "gossip/gossip_node.h"
#include "node/train/checkpoint.h"
#include "node/train/trainer.h"

namespace murmur::node {

struct GossipCheckpointOptions {
  std::string dir;        // empty: no checkpoints
  int64_t every = 200;    // local steps between checkpoints; 0: only when the run ends
  // What must match for a checkpoint to be resumed: the model and the run's identity
  // (NodeCheckpointIdentity). A mismatch refuses to start rather than train on a foreign state.
  std::string model;      // ModelSpec::ToString()
  std::string identity;
  uint64_t node_id = 0;

  std::string Path() const { return dir + "/checkpoint.mck"; }
};

// Everything a resumed node needs.
struct GossipResume {
  TrainerState trainer;
  gossip::ResumePoint node;
};

Checkpoint MakeGossipCheckpoint(const GossipCheckpointOptions& options, TrainerState trainer,
                                const gossip::GossipNodeState& state,
                                std::span<const float> public_copy);

// kFailedPrecondition when the checkpoint belongs to another model, run or node (saying which
// and how to proceed); kDataLoss when a section is missing or inconsistent.
StatusOr<GossipResume> ReadGossipCheckpoint(const GossipCheckpointOptions& options,
                                            const Checkpoint& checkpoint);

}  // namespace murmur::node
