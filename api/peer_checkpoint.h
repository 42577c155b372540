#pragma once
// A library peer's checkpoints (Hooks::save_state / restore_state; keys checkpoint_dir and
// checkpoint_every): the buffer, the node's clocks and public copy, and the caller's own
// sections, in node/driver/gossip_checkpoint.h's file. Internal to api/.

#include "api/peer.h"
#include "base/status.h"
#include "node/driver/gossip_checkpoint.h"
#include "node/driver/gossip_session.h"
#include "node/observe/telemetry.h"

namespace murmur::api {

// Creates options.dir (kInvalidArgument when it cannot be) and resumes from the checkpoint in it
// when there is one: the buffer, hooks.restore_state, then the machine's clocks and public copy.
// kFailedPrecondition for a checkpoint of another model, run or node (the operator must choose);
// a damaged one is set aside (PATH.corrupt) and the peer joins afresh. REQUIRES session started,
// not yet run.
Status RestoreCheckpoint(node::GossipSession& session, node::GossipWork& work, const Hooks& hooks,
                         node::NodeTelemetry* telemetry,
                         const node::GossipCheckpointOptions& options);

// Writes the checkpoint (atomically); a failure is logged and counted, and the run goes on.
void WriteCheckpoint(node::GossipSession& session, node::GossipWork& work, const Hooks& hooks,
                     node::NodeTelemetry* telemetry, const node::GossipCheckpointOptions& options);

}  // namespace murmur::api
