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

}  // namespace
}  // namespace murmur::gossip
