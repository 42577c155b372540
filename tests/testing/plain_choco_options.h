#pragma once
// The gossip machine with every schedule feature off: plain CHOCO-SGD rounds every step (H = 1),
// no outer optimizer, no consensus control, a fixed soft-sync wait W, only the final evaluation,
// a 10 s consensus finish, and the top-1 % operator with float32 values. The protocol tests are
// written against this machine; each sets what it exercises on top. `murmur node`'s defaults
// (GossipNodeOptions{}) turn all of these on.

#include <chrono>
#include <optional>

#include "coding/compressor.h"
#include "gossip/gossip_node.h"

namespace murmur::testing {

inline gossip::GossipNodeOptions PlainChocoNodeOptions() {
  gossip::GossipNodeOptions o;
  o.choco.compressor = coding::CompressorOptions{};
  o.outer = std::nullopt;
  o.local_steps = 1;
  o.post_local_steps = 1;
  o.consensus_target = 0;
  o.consensus_slack = 2;
  o.eval_every = 0;
  o.finish_wait = std::chrono::seconds(10);
  o.soft_sync.max_wait_steps = 0;
  return o;
}

}  // namespace murmur::testing
