// The round period (gossip/round_period.h): H under each schedule.

#include "gossip/round_period.h"

#include <gtest/gtest.h>

#include <vector>

namespace murmur::gossip {
namespace {

GossipNodeOptions Plain() {
  GossipNodeOptions o;
  o.outer.reset();
  o.choco.compressor = AutoCompressor(/*outer=*/false);  // top-k: density scalable
  o.consensus_target = 0;
  return o;
}

TEST(RoundPeriodTest, SmallClustersOfTopKGossipEverySecondStep) {
  const GossipNodeOptions o = Plain();
  const RoundPeriod p(o);
  EXPECT_EQ(p.H({.view_members = 4}), 2);
  EXPECT_TRUE(p.SparseSchedule(0, 4));
  EXPECT_EQ(p.H({.view_members = 5}), 1);
  GossipNodeOptions int8 = o;
  int8.choco.compressor = AutoCompressor(/*outer=*/true);
  EXPECT_EQ(RoundPeriod(int8).H({.view_members = 4}), 1) << "int8 keeps no fraction to double";
}

TEST(RoundPeriodTest, LocalStepsThenPostLocalStepsFromTheirEpoch) {
  GossipNodeOptions o = Plain();
  o.local_steps = 3;
  o.post_local_epoch = 1.5;
  o.post_local_steps = 6;
  const RoundPeriod p(o);
  EXPECT_EQ(p.H({.local_epoch = 1.4}), 3);
  EXPECT_EQ(p.H({.local_epoch = 1.5}), 6);
}

TEST(RoundPeriodTest, ConsensusControlStretchesWithinSoftSyncsLead) {
  GossipNodeOptions o = Plain();
  o.local_steps = 2;
  o.consensus_target = 0.04;
  o.consensus_slack = 8;
  o.soft_sync.max_lead = 10;
  const RoundPeriod p(o);
  EXPECT_EQ(p.H({.rounds = 7, .consensus_estimate = 0.01}), 2) << "the first rounds gossip";
  EXPECT_EQ(p.H({.rounds = 8, .consensus_estimate = 0.01}), 10) << "16 held to the lead";
  EXPECT_EQ(p.H({.rounds = 8, .consensus_estimate = 0.05}), 2) << "above the target";
  o.soft_sync.max_lead = -1;
  EXPECT_EQ(RoundPeriod(o).H({.rounds = 8, .consensus_estimate = 0.01}), 16);
}

TEST(RoundPeriodTest, TheOuterHIsResolvedOnceFromTheBudget) {
  GossipNodeOptions o;  // the default outer optimizer: every 80, at least 4 rounds
  o.budget_samples = 4 * 100 * 32;  // 100 steps per member of 4 at a batch of 32
  o.expect_members = 4;
  RoundPeriod p(o);
  EXPECT_TRUE(p.OuterActive(0));
  EXPECT_EQ(p.OuterH(), 80);
  EXPECT_FALSE(p.outer_resolved());
  p.ResolveOuterH(32, 4);
  EXPECT_TRUE(p.outer_resolved());
  EXPECT_LE(p.OuterH() * o.outer->rounds, 100);
  EXPECT_EQ(p.H({}), p.OuterH());
  o.outer->start_epoch = 1;
  EXPECT_FALSE(RoundPeriod(o).OuterActive(0.5));
}

TEST(RoundPeriodTest, TheEstimateAveragesTheMixingPeersLatestAndRefusesImplausibleOnes) {
  const GossipNodeOptions o = Plain();
  RoundPeriod p(o);
  EXPECT_TRUE(p.PeerEstimate(2, 0.2f));
  EXPECT_TRUE(p.PeerEstimate(3, 0.4f));
  EXPECT_FALSE(p.PeerEstimate(4, 1e6f));
  EXPECT_FALSE(p.PeerEstimate(4, -0.5f));
  EXPECT_NEAR(p.Estimate(0.0, {2, 3, 4}), (0.0 + 0.2 + 0.4) / 3, 1e-6);
  EXPECT_NEAR(p.Estimate(0.3, {3}), 0.35, 1e-6);
  p.Prune({1, 3});
  EXPECT_NEAR(p.Estimate(0.0, {2, 3}), 0.2, 1e-6) << "member 2 left the view";
}

}  // namespace
}  // namespace murmur::gossip
