// The gossip node's phases (gossip/gossip_phase.h) by name, as the report lines carry them.

#include "gossip/gossip_phase.h"

#include <gtest/gtest.h>

namespace murmur::gossip {
namespace {

TEST(GossipPhaseTest, EveryPhaseHasANameThatParsesBack) {
  for (int p = 0; p <= static_cast<int>(GossipPhase::kOver); ++p) {
    const auto phase = static_cast<GossipPhase>(p);
    const auto back = ParsePhase(PhaseName(phase));
    ASSERT_TRUE(back.ok()) << PhaseName(phase);
    EXPECT_EQ(*back, phase);
  }
  EXPECT_FALSE(ParsePhase("joining: 2 of 4 members").ok()) << "a sentence is not a phase";
  EXPECT_TRUE(BeforeTraining(GossipPhase::kAwaitingModel));
  EXPECT_FALSE(BeforeTraining(GossipPhase::kTraining));
}

TEST(GossipPhaseTest, TheActivitySaysWhatTheNodeWaitsFor) {
  EXPECT_EQ(PhaseActivity(GossipPhase::kJoining, 2, 4, 0), "joining: 2 of 4 members");
  EXPECT_EQ(PhaseActivity(GossipPhase::kJoining, 1, 0, 0), "joining: 1 member so far");
  EXPECT_EQ(PhaseActivity(GossipPhase::kJoining, 3, 0, 0), "joining: 3 members so far");
  EXPECT_EQ(PhaseActivity(GossipPhase::kAwaitingModel, 3, 4, 7),
            "waiting for a model snapshot from node 7");
  EXPECT_EQ(PhaseActivity(GossipPhase::kLingering, 3, 4, 0), "lingering");
}

}  // namespace
}  // namespace murmur::gossip
