// The round mixer (gossip/round_mixer.h): the outer step after the mix, its first round starting
// the anchor, and an overlapped round's steps carried on top of the new anchor, each held to the
// outer optimizer applied by hand.

#include "gossip/round_mixer.h"

#include <gtest/gtest.h>

#include <vector>

#include "gossip/gossip_node_options.h"

namespace murmur::gossip {
namespace {

constexpr uint32_t kDim = 6;

class RoundMixerTest : public ::testing::Test {
 protected:
  RoundMixerTest() {
    ChocoOptions c = DefaultNodeChoco();
    c.self = 1;
    c.dimension = kDim;
    auto choco = ChocoGossip::Create(c, x_, x_, true);
    EXPECT_TRUE(choco.ok()) << choco.status().ToString();
    choco_ = *std::move(choco);
  }
  // A round of this node alone (no neighbour to mix with): only the outer step moves x.
  StatusOr<std::optional<OuterStats>> Round(RoundMixer& mixer, bool carried, bool active) {
    auto stats = choco_->Publish(x_, view_, round_);
    EXPECT_TRUE(stats.ok());
    return mixer.Mix(*choco_, x_, carried, view_, round_++, [](NodeId) { return 1.0; }, *stats,
                     active);
  }
  std::vector<float> x_ = {1, 2, 3, 4, 5, 6};
  std::unique_ptr<ChocoGossip> choco_;
  std::vector<NodeId> view_ = {1};
  uint64_t round_ = 0;
  OuterOptions outer_;  // nesterov, the defaults
};

TEST_F(RoundMixerTest, InactiveItOnlyMixesAndTheFirstActiveRoundStartsTheAnchor) {
  RoundMixer mixer(outer_, kernels::Device::Cpu());
  const std::vector<float> before = x_;
  auto r = Round(mixer, false, /*active=*/false);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
  EXPECT_FALSE(mixer.outer_started());
  EXPECT_EQ(x_, before);
  r = Round(mixer, false, /*active=*/true);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value()) << "the first active round starts the anchor, no step";
  EXPECT_TRUE(mixer.outer_started());
  EXPECT_EQ(x_, before);
}

TEST_F(RoundMixerTest, TheOuterStepIsTheOptimizersOwnAndCarriedStepsGoOnTop) {
  RoundMixer mixer(outer_, kernels::Device::Cpu());
  auto reference = OuterOptimizer::Create(outer_, kernels::Device::Cpu(), x_);
  ASSERT_TRUE(reference.ok());
  ASSERT_TRUE(Round(mixer, false, true).ok());  // the anchor at x
  // The inner steps of a round, then its outer step.
  for (float& v : x_) v -= 0.5f;
  std::vector<float> expected = x_;
  ASSERT_TRUE(reference->Step(expected).ok());
  auto r = Round(mixer, false, true);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ(x_, expected);
  // An overlapped round: the model at the round kept aside, two steps taken meanwhile.
  for (float& v : x_) v -= 0.25f;
  ASSERT_TRUE(mixer.KeepAside(x_).ok());
  std::vector<float> at_round = x_;
  ASSERT_TRUE(reference->Step(at_round).ok());
  for (float& v : x_) v -= 0.125f;  // the carried steps
  r = Round(mixer, /*carried=*/true, true);
  ASSERT_TRUE(r.ok());
  for (uint32_t k = 0; k < kDim; ++k) EXPECT_FLOAT_EQ(x_[k], at_round[k] - 0.125f) << k;
}

TEST_F(RoundMixerTest, ARestartMovesTheAnchorToTheAdoptedModel) {
  RoundMixer mixer(outer_, kernels::Device::Cpu());
  ASSERT_TRUE(Round(mixer, false, true).ok());
  const std::vector<float> adopted = {9, 9, 9, 9, 9, 9};
  x_ = adopted;
  mixer.Restart(x_);
  auto r = Round(mixer, false, true);  // no progress since the restart: Δ̄ = 0
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->delta_norm, 0);
  EXPECT_EQ(x_, adopted);
}

}  // namespace
}  // namespace murmur::gossip
