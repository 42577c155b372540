#pragma once
// A gossip node's checkpoint: what a peer (api/peer.h) writes every `every` local
// steps and when it ends (SIGTERM included), and reads back when it starts, so a node killed and
// restarted trains on at its own step instead of copying a peer. It holds the model, the
// node's clocks (step clock, local steps, samples), its public copy x̂_i (x − x̂ is the
// compressed update not sent yet) and the caller's own sections: for `murmur node`, its
// trainer's momentum, shuffling RNG and the epoch's row order and position. The copies of the neighbours' public copies are not saved: their streams moved
// on while the node was down, and the node's new incarnation makes them resend snapshots.

#include <cstdint>
#include <span>
#include <string>

#include "base/status.h"
#include "gossip/gossip_node.h"
#include "node/train/checkpoint.h"
#include <vector>

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
  std::vector<float> params;
  Checkpoint caller;  // the caller's sections, as it saved them
  gossip::ResumePoint node;
};

// Whether a caller's section name is one of the checkpoint's own.
bool IsGossipCheckpointSection(const std::string& name);

// kInvalidArgument when a caller's section uses one of the checkpoint's own names.
StatusOr<Checkpoint> MakeGossipCheckpoint(const GossipCheckpointOptions& options,
                                          std::vector<float> params, Checkpoint caller,
                                          const gossip::GossipNodeState& state,
                                          std::span<const float> public_copy);

// kFailedPrecondition when the checkpoint belongs to another model, run or node (saying which
// and how to proceed); kDataLoss when a section is missing or inconsistent.
StatusOr<GossipResume> ReadGossipCheckpoint(const GossipCheckpointOptions& options,
                                            const Checkpoint& checkpoint);

}  // namespace murmur::node
