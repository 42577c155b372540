// GossipNode with an outer optimizer (GossipNodeOptions::outer, outer_optimizer.h) on the shared
// fake network and a manual clock: outer rounds every H steps, the outer step moving the anchor
// by more than the inner steps did, anchors of different models pulled together, a straggler's
// late progress not holding the others' rounds, a crashed member not stopping them, and the
// consensus finish after outer rounds. Every property over 20 seeds; a failure names its seed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "gossip/gossip_node.h"
#include "tests/testing/gossip_node_cluster.h"

namespace murmur::gossip {
namespace {

using std::chrono::milliseconds;
using Cluster = murmur::testing::NodeCluster<GossipNode>;

constexpr uint64_t kSeeds = 20;

GossipNodeOptions OuterOptions(std::string_view spec) {
  GossipNodeOptions o = murmur::testing::GossipTestOptions();
  o.outer = **ParseOuterSpec(spec);
  o.shard_rows = 1000;
  return o;
}

// Node i starts from model `start(i)` (not the cluster's common one: receivers ask for the
// streams' first snapshots) and computes nothing unless `step` moves it.
Cluster MakeOuterCluster(size_t n, uint64_t seed, const GossipNodeOptions& base,
                         std::function<float(size_t)> start) {
  return Cluster(n, murmur::testing::FastMembership(), seed,
                 [base, start](size_t i, Cluster::Node& node, TimePoint now) {
                   GossipNodeOptions o = base;
                   o.self = Cluster::Id(i);
                   o.incarnation = node.membership->incarnation();
                   std::fill(node.x.begin(), node.x.end(), start(i));
                   std::vector<float> initial(node.x.size(), 0.0f);
                   auto m = GossipNode::Create(o, node.x, initial, /*from_initial=*/false, now);
                   EXPECT_TRUE(m.ok()) << m.status().ToString();
                   return *std::move(m);
                 });
}

// Four nodes from the same model, S = 4 and W = 60 ms, node 3 taking 4x the others' step time.
Cluster MakeStragglerCluster(uint64_t seed, GossipNodeOptions base) {
  base.soft_sync.max_lead = 4;
  base.soft_sync.max_wait = milliseconds(60);
  Cluster cluster = MakeOuterCluster(4, seed, base, [](size_t) { return 0.0f; });
  cluster.node(3).step_time = milliseconds(8);
  return cluster;
}

// Starts the n nodes and runs until every one is over (at most 10 virtual seconds).
bool RunToTheEnd(Cluster& cluster, size_t n) {
  for (size_t i = 0; i < n; ++i) cluster.Start(i);
  return cluster.RunFor(std::chrono::seconds(10), [&] {
    for (size_t i = 0; i < n; ++i) {
      if (!cluster.node(i).over.has_value()) return false;
    }
    return true;
  });
}

double Spread(Cluster& cluster, size_t n) {
  double lo = 1e30, hi = -1e30;
  for (size_t i = 0; i < n; ++i) {
    for (float v : cluster.node(i).x) {
      lo = std::min(lo, static_cast<double>(v));
      hi = std::max(hi, static_cast<double>(v));
    }
  }
  return hi - lo;
}

// Every round is an outer round, every H = 5 steps; and with no inner progress, models that
// start apart meet (the mix pulls the anchors together, NoLoCo §3.2) near their mean. (Not at it
// exactly: a node mixes the copies it has, its own weight kept for one not ready yet, and the
// outer momentum carries such an asymmetry on, past the range they started in.)
TEST(GossipNodeOuterTest, AnchorsOfDifferentModelsMeet) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    GossipNodeOptions base = OuterOptions("nesterov:every=5");
    base.choco.compressor = *coding::ParseCompressorSpec("none");
    base.choco.gamma = 0;  // the operator's default: 1 for exact gossip
    // Clipped mixing moves the mean of models this far apart, which the outer momentum amplifies
    // (gossip/choco.h); these tests are of the outer optimizer over plain gossip.
    base.choco.clip_fraction = 0;
    Cluster cluster =
        MakeOuterCluster(4, seed, base, [](size_t i) { return 1.0f + 0.1f * static_cast<float>(i); });
    cluster.compute = [](size_t, std::optional<double>) { return std::pair<double, int64_t>(1.0, 10); };
    for (size_t i = 0; i < 4; ++i) cluster.Start(i);
    cluster.RunFor(std::chrono::seconds(3));
    for (size_t i = 0; i < 4; ++i) {
      const GossipNodeState& s = cluster.machine(i).state();
      EXPECT_GE(s.outer_rounds, 20u) << "node " << i;
      // One round starts the anchor; every later round is an outer one, every 5 steps.
      EXPECT_EQ(s.rounds, s.outer_rounds + 1) << "node " << i;
      // (The latest round may still wait for its peers.)
      EXPECT_LE(s.local_steps, 5 * static_cast<int64_t>(s.rounds + 1) + 4) << "node " << i;
      EXPECT_GE(s.local_steps, 5 * static_cast<int64_t>(s.rounds)) << "node " << i;
      for (float v : cluster.node(i).x) {
        EXPECT_GE(v, 1.0f - 0.3f) << "node " << i;  // within the starting range's width
        EXPECT_LE(v, 1.3f + 0.3f) << "node " << i;
      }
    }
    EXPECT_LT(Spread(cluster, 4), 0.003);  // from 0.3
  }
}

// The outer step extrapolates the averaged progress (DiLoCo's outer momentum): when every node
// moves the same way, the anchor travels further than the inner steps alone took it, and with
// outer SGD at rate 1 (local SGD) exactly as far.
TEST(GossipNodeOuterTest, OuterMomentumCarriesTheAveragedProgressFurther) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::map<std::string, double> travelled;
    for (const char* spec : {"nesterov:every=4", "sgd:every=4"}) {
      GossipNodeOptions base = OuterOptions(spec);
      base.soft_sync.max_lead = 0;  // lock-step: the same number of steps everywhere
      Cluster cluster = MakeOuterCluster(3, seed, base, [](size_t) { return 0.0f; });
      cluster.compute = [&cluster](size_t i, std::optional<double>) {
        for (float& v : cluster.node(i).x) v += 0.01f;  // a common direction
        return std::pair<double, int64_t>(1.0, 10);
      };
      for (size_t i = 0; i < 3; ++i) cluster.Start(i);
      cluster.RunFor(std::chrono::seconds(2));
      const GossipNodeState& s = cluster.machine(0).state();
      ASSERT_GE(s.outer_rounds, 10u) << spec;
      travelled[spec] = cluster.node(0).x[0] / (0.01 * static_cast<double>(s.local_steps));
    }
    // Mixed with the copies it has (a round late, compressed), local SGD keeps most of it.
    EXPECT_NEAR(travelled["sgd:every=4"], 1.0, 0.15);
    EXPECT_GT(travelled["nesterov:every=4"], 3.0);  // η (1 + μ) / (1 − μ) = 13.3 in the limit
  }
}

// A node 4x slower than the others (its progress late) does not hold their outer rounds past the
// soft-sync rules: they wait for it at most W once it is S behind, mark it a straggler and go
// on; its late rounds are still mixed, and the models stay together.
TEST(GossipNodeOuterTest, AStragglersLateRoundsDoNotHoldTheOthers) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    GossipNodeOptions base = OuterOptions("nesterov:every=4");
    Cluster cluster = MakeStragglerCluster(seed, base);
    for (size_t i = 0; i < 4; ++i) cluster.Start(i);
    cluster.RunFor(std::chrono::seconds(4));
    // It takes outer rounds, or, once more than S behind, catches up with its neighbours' average
    // (its anchor restarted there) and skips the rounds in between.
    const uint64_t slow = cluster.machine(3).state().outer_rounds;
    EXPECT_GE(slow + cluster.machine(3).state().catchups, 10u);
    for (size_t i = 0; i < 3; ++i) {
      const GossipNodeState& s = cluster.machine(i).state();
      EXPECT_GE(s.outer_rounds, 2 * slow) << "node " << i;
      EXPECT_GE(s.verdicts.at("applied"), 1u) << "node " << i;
    }
    // Its ring neighbours (ids 1 and 3) waited for it at most W and marked it.
    for (size_t i : {0, 2}) {
      EXPECT_GE(cluster.machine(i).soft_sync().stragglers_detected(), 1u) << "node " << i;
    }
    // The fake steps pull node i toward i + 1; mixed, the models stay within that range.
    for (size_t i = 0; i < 4; ++i) {
      for (float v : cluster.node(i).x) {
        EXPECT_TRUE(std::isfinite(v));
        EXPECT_GT(v, 0.5f) << "node " << i;
        EXPECT_LT(v, 4.5f) << "node " << i;
      }
    }
  }
}

// A straggler more than S behind catches up with its neighbours' public copies, which hold their
// models at the last round, before the outer step carried the anchors on; with an outer optimizer
// it then asks the most advanced member for its model and adopts it. The members' snapshot rate
// bounds the dense models it gets (a refusal carries none).
TEST(GossipNodeOuterTest, AStragglerAsksForTheModelPastTheOuterStep) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    GossipNodeOptions base = OuterOptions("nesterov:every=4");
    Cluster cluster = MakeStragglerCluster(seed, base);
    size_t served = 0;  // dense models sent to node 3
    cluster.on_output = [&](size_t i, gossip::NodeAction& action) {
      const auto* send = std::get_if<gossip::SendTo>(&action);
      if (i != 3 && send != nullptr && send->to == Cluster::Id(3) &&
          std::holds_alternative<SnapshotReply>(send->payload) && send->frame != nullptr) {
        ++served;
      }
    };
    const TimePoint start = cluster.now();
    for (size_t i = 0; i < 4; ++i) cluster.Start(i);
    cluster.RunFor(std::chrono::seconds(3));
    const GossipNodeState& slow = cluster.machine(3).state();
    EXPECT_GE(slow.catchups, 20u);
    EXPECT_GE(slow.model_requests, slow.catchups / 4);
    EXPECT_GE(served, 10u);
    const double seconds = ToSeconds(cluster.now() - start) + 1;
    EXPECT_LE(served, 3 * (base.model_snapshot_burst + seconds * base.model_snapshots_per_s));
  }
}

// A member that crashes stops nobody's outer rounds: the others go on past W.
TEST(GossipNodeOuterTest, ACrashedMemberDoesNotStopTheOuterRounds) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    GossipNodeOptions base = OuterOptions("nesterov:every=4");
    base.soft_sync.max_lead = 2;
    base.soft_sync.max_wait = milliseconds(150);
    Cluster cluster = MakeOuterCluster(3, seed, base, [](size_t) { return 0.0f; });
    for (size_t i = 0; i < 3; ++i) cluster.Start(i);
    ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(5), [&] {
      return cluster.machine(2).state().outer_rounds >= 5;
    }));
    cluster.Crash(2);
    std::vector<uint64_t> before = {cluster.machine(0).state().outer_rounds,
                                    cluster.machine(1).state().outer_rounds};
    cluster.RunFor(std::chrono::seconds(2));
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_GE(cluster.machine(i).state().outer_rounds, before[i] + 100) << "node " << i;
      EXPECT_FALSE(cluster.node(i).over.has_value()) << "node " << i;
    }
  }
}

// After outer rounds, the consensus finish still leaves every node on one model.
TEST(GossipNodeOuterTest, TheFinishAveragesAfterOuterRounds) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    GossipNodeOptions base = OuterOptions("nesterov:every=4,lr=0.5");
    base.budget_samples = 4000;  // 10 samples a step: 100 steps a node
    base.finish_wait = std::chrono::seconds(2);
    Cluster cluster = MakeOuterCluster(4, seed, base, [](size_t) { return 0.0f; });
    ASSERT_TRUE(RunToTheEnd(cluster, 4));
    for (size_t i = 0; i < 4; ++i) {
      const GossipNodeState& s = cluster.machine(i).state();
      EXPECT_GE(s.outer_rounds, 15u) << "node " << i;
      EXPECT_EQ(s.finish, "averaged") << "node " << i;
      EXPECT_EQ(cluster.node(i).x, cluster.node(0).x) << "node " << i;
    }
  }
}

// A run too short for its H (rounds=): every member takes the same smaller H, a power of two,
// from its share of the budget, and rounds on its multiples; without rounds= it keeps H.
TEST(GossipNodeOuterTest, AShortRunTakesASmallerHThatHoldsTheRounds) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    for (const char* spec : {"nesterov:every=80,rounds=8", "nesterov:every=80,rounds=0"}) {
      GossipNodeOptions base = OuterOptions(spec);
      base.budget_samples = 4000;  // 10 samples a step, 4 members: 100 steps a node
      base.expect_members = 4;
      base.finish_wait = std::chrono::seconds(2);
      Cluster cluster = MakeOuterCluster(4, seed, base, [](size_t) { return 0.0f; });
      ASSERT_TRUE(RunToTheEnd(cluster, 4));
      const bool short_h = std::string_view(spec).find("rounds=8") != std::string_view::npos;
      for (size_t i = 0; i < 4; ++i) {
        const GossipNodeState& s = cluster.machine(i).state();
        SCOPED_TRACE(std::string(spec) + ", node " + std::to_string(i));
        EXPECT_EQ(s.gossip_period, short_h ? 8 : 80);  // 100 / 8 = 12: 8 the power of two
        // The first round starts the anchor; rounds fall on the clock's multiples of H.
        EXPECT_EQ(s.outer_rounds + 1, short_h ? s.step / 8 : s.step / 80);
        EXPECT_EQ(s.finish, "averaged");
      }
    }
  }
}

// Overlap (Streaming DiLoCo's delayed outer step): the steps a node takes while its round is in
// flight are kept on top of the new anchor. Every node moves the same way each step; with local
// SGD (outer SGD at rate 1) the model travels exactly as far as the inner steps took it, whether
// the round mixed at once or after steps on top (lost steps would fall short, counted twice
// overshoot).
TEST(GossipNodeOuterTest, AnOverlappedRoundKeepsTheStepsTakenMeanwhile) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    GossipNodeOptions base = OuterOptions("sgd:every=8,overlap=6");
    base.soft_sync.max_lead = 16;
    Cluster cluster = MakeOuterCluster(3, seed, base, [](size_t) { return 0.0f; });
    cluster.net().faults().min_delay = milliseconds(5);  // an update takes 2-3 steps
    cluster.net().faults().max_delay = milliseconds(6);
    cluster.compute = [&cluster](size_t i, std::optional<double>) {
      for (float& v : cluster.node(i).x) v += 0.01f;
      return std::pair<double, int64_t>(1.0, 10);
    };
    for (size_t i = 0; i < 3; ++i) cluster.Start(i);
    cluster.RunFor(std::chrono::seconds(2));
    for (size_t i = 0; i < 3; ++i) {
      const GossipNodeState& s = cluster.machine(i).state();
      ASSERT_GE(s.outer_rounds, 20u) << "node " << i;
      EXPECT_GE(s.overlapped_steps, s.outer_rounds) << "node " << i;
      // Steps in flight at the latest round are in x and not yet in the copies the others mix.
      const double travelled = cluster.node(i).x[0] / (0.01 * static_cast<double>(s.local_steps));
      EXPECT_NEAR(travelled, 1.0, 0.08) << "node " << i;
    }
  }
}

// On a thin link (an update takes 3 steps' time longer than a clock) a node that overlaps steps on
// while its round is in flight; one that does not waits for its neighbours' updates (at most a
// quarter round) at every round. Both pull anchors of different models together.
TEST(GossipNodeOuterTest, OverlapStepsOnWhileTheRoundIsInFlight) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::map<int, uint64_t> steps;
    for (int overlap : {0, 12}) {
      GossipNodeOptions base = OuterOptions("nesterov:every=16,overlap=" + std::to_string(overlap));
      base.choco.compressor = *coding::ParseCompressorSpec("none");
      base.choco.gamma = 0;
      base.choco.clip_fraction = 0;  // as in AnchorsOfDifferentModelsMeet
      base.soft_sync.max_lead = 8;
      Cluster cluster = MakeOuterCluster(
          4, seed, base, [](size_t i) { return 1.0f + 0.1f * static_cast<float>(i); });
      cluster.frame_delay = milliseconds(6);
      cluster.compute = [](size_t, std::optional<double>) {
        return std::pair<double, int64_t>(1.0, 10);
      };
      for (size_t i = 0; i < 4; ++i) cluster.Start(i);
      cluster.RunFor(std::chrono::seconds(3));
      for (size_t i = 0; i < 4; ++i) {
        const GossipNodeState& s = cluster.machine(i).state();
        EXPECT_GE(s.outer_rounds, 20u) << "overlap " << overlap << ", node " << i;
        if (overlap == 0) {
          EXPECT_EQ(s.overlapped_steps, 0u);
        } else {
          EXPECT_GE(s.overlapped_steps, 2 * s.outer_rounds) << "node " << i;  // 3-4 a round
        }
        steps[overlap] += static_cast<uint64_t>(s.local_steps);
      }
      EXPECT_LT(Spread(cluster, 4), 0.01) << "overlap " << overlap;  // from 0.3
    }
    std::printf("seed %lu: steps in 3 s, 4 nodes: %lu waiting, %lu overlapping\n",
                static_cast<unsigned long>(seed), static_cast<unsigned long>(steps[0]),
                static_cast<unsigned long>(steps[12]));
    EXPECT_GT(steps[12], steps[0] * 11 / 10);
  }
}

}  // namespace
}  // namespace murmur::gossip
