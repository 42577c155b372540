#pragma once
// GossipNode clusters for the machine tests (tests/gossip/gossip_node*_test.cc): the options they
// start from and a NodeCluster whose nodes all start from a zero model.

#include <vector>

#include "coding/compressor.h"
#include "gossip/gossip_node.h"
#include "tests/testing/node_cluster.h"
#include "tests/testing/plain_choco_options.h"

namespace murmur::testing {

using GossipNodeCluster = NodeCluster<gossip::GossipNode>;

// Top-25 % CHOCO with γ = 0.2 on 16 values, and join, snapshot and linger times that play out in
// a simulated second.
inline gossip::GossipNodeOptions GossipTestOptions() {
  gossip::GossipNodeOptions o = PlainChocoNodeOptions();
  o.choco.compressor = *coding::ParseCompressorSpec("topk:0.25");
  o.choco.gamma = 0.2;
  o.join_wait = std::chrono::milliseconds(300);
  o.join_after_steps = 20;
  o.snapshot_timeout = std::chrono::milliseconds(500);
  o.linger = std::chrono::milliseconds(100);
  return o;
}

// n nodes with `base`, each its own id and incarnation, on FastMembership().
inline GossipNodeCluster MakeGossipCluster(size_t n, uint64_t seed,
                                           const gossip::GossipNodeOptions& base) {
  return GossipNodeCluster(
      n, FastMembership(), seed, [base](size_t i, GossipNodeCluster::Node& node, TimePoint now) {
        gossip::GossipNodeOptions o = base;
        o.self = GossipNodeCluster::Id(i);
        o.incarnation = node.membership->incarnation();
        std::vector<float> initial(node.x.size(), 0.0f);
        auto machine = gossip::GossipNode::Create(o, node.x, initial, /*from_initial=*/true, now);
        EXPECT_TRUE(machine.ok()) << machine.status().ToString();
        return *std::move(machine);
      });
}

}  // namespace murmur::testing
