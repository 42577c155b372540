#pragma once
// `murmur node --mode gossip`: murmur's own Trainer as a user of the library (api::Peer): the
// peer's settings are the node's keys as resolved (node_config.h; api::PeerOptions, no text
// passed on), each step is a Trainer step on the peer's buffer (the Trainer's parameters, on its
// device), and the Trainer's momentum, shuffling RNG and row order ride in the peer's checkpoints
// (api::Hooks).

#include "kernels/device.h"
#include "node/config/node_config.h"

namespace murmur::node {

// Runs the node until its budget is spent or a stop signal; the exit status: 0, 1 for a failed
// run, 2 for a configuration, model or checkpoint it cannot use (with what and why on stderr).
// `peer`: the node's peer options, as NodeCommand resolved them from `config`.
int RunGossipNode(const NodeConfig& config, const PeerNodeOptions& peer,
                  const kernels::Device& device);

}  // namespace murmur::node
