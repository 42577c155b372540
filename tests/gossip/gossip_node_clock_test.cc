// GossipNode's step clock as its neighbours learn it, on the shared fake network and a manual
// clock (tests/testing/node_cluster.h): a clock that jumps without a step (a catch-up) is said
// at once. Checked over 20 seeds; a failure names its seed.

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "gossip/gossip_node.h"
#include "tests/testing/gossip_node_cluster.h"

namespace murmur::gossip {
namespace {

using std::chrono::milliseconds;
using Cluster = murmur::testing::GossipNodeCluster;

constexpr uint64_t kSeeds = 20;

// What one node said, in order: its announced clocks, its clock-only messages and its steps.
struct Said {
  enum Kind { kAnnounce, kClockTo, kCompute };
  Kind kind;
  uint64_t value;  // the clock announced, the receiver, the step asked for
};

// A node that catches up jumps its clock past S without a step. Its neighbours' gates hold its
// old clock; if it kept the new one to itself until its next step, and its own gate waited for
// one of them, each would wait for the other until W (murmur local --nodes 4 stalled 2 s so after
// a late join). So the new clock goes out, to the membership and to every tracker, before the
// node's gate decides its next step.
TEST(GossipNodeClockTest, ACaughtUpClockIsSaidBeforeTheNextStep) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    GossipNodeOptions base = murmur::testing::GossipTestOptions();
    base.soft_sync.max_lead = 4;
    base.soft_sync.max_wait = milliseconds(100);
    Cluster cluster = murmur::testing::MakeGossipCluster(3, seed, base);
    for (size_t i = 0; i < 3; ++i) cluster.Start(i);
    cluster.node(2).step_time = std::chrono::hours(1);  // stuck in its first step
    ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(5), [&] {
      return std::min(cluster.machine(0).state().step, cluster.machine(1).state().step) > 40;
    }));
    ASSERT_LE(cluster.machine(2).state().step, 1u);
    std::vector<Said> said;
    cluster.on_output = [&said](size_t i, const NodeAction& action) {
      if (i != 2) return;
      if (const auto* a = std::get_if<Announce>(&action)) {
        said.push_back({Said::kAnnounce, a->step_clock});
      } else if (const auto* s = std::get_if<SendTo>(&action);
                 s != nullptr && std::holds_alternative<NoPayload>(s->payload)) {
        said.push_back({Said::kClockTo, s->to});
      } else if (const auto* c = std::get_if<ComputeStep>(&action)) {
        said.push_back({Said::kCompute, c->step});
      }
    };
    cluster.node(2).step_time = milliseconds(2);
    cluster.node(2).compute_done = cluster.now();  // the stuck step ends now
    // The first step asked for after the jump (more than one past the step before it).
    auto jumped = [&said] {
      uint64_t last = 1;  // the stuck step
      for (auto it = said.begin(); it != said.end(); ++it) {
        if (it->kind != Said::kCompute) continue;
        if (it->value > last + 1) return it;
        last = it->value;
      }
      return said.end();
    };
    ASSERT_TRUE(cluster.RunFor(milliseconds(500), [&] { return jumped() != said.end(); }));
    ASSERT_GT(cluster.machine(2).state().catchups, 0u);
    const auto next = jumped();
    const uint64_t caught = next->value - 1;  // the clock it caught up to
    const auto announced = std::find_if(said.begin(), next, [&](const Said& s) {
      return s.kind == Said::kAnnounce && s.value == caught;
    });
    ASSERT_NE(announced, next) << "clock " << caught << " not announced before step "
                               << next->value;
    std::vector<uint64_t> told;
    for (auto it = announced; it != next; ++it) {
      if (it->kind == Said::kClockTo) told.push_back(it->value);
    }
    std::sort(told.begin(), told.end());
    EXPECT_EQ(told, (std::vector<uint64_t>{Cluster::Id(0), Cluster::Id(1)}));
  }
}

}  // namespace
}  // namespace murmur::gossip
