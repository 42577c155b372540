// The outer optimizer on its own: its spec, DiLoCo's step against a reference written out in
// double, local SGD as its η = 1, μ = 0 case, restarts, and refusals. Seeds printed.
#include "gossip/outer_optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace murmur::gossip {
namespace {

TEST(OuterSpecTest, ParsesMethodsAndKeys) {
  auto none = ParseOuterSpec("none");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto n = ParseOuterSpec("nesterov");
  ASSERT_TRUE(n.ok() && n->has_value()) << n.status();
  EXPECT_EQ((*n)->method, OuterMethod::kNesterov);
  // A bare method is the default optimizer (the schema's default spec is OuterSpec of it).
  const OuterOptions defaults;
  EXPECT_EQ((*n)->every, defaults.every);
  EXPECT_DOUBLE_EQ((*n)->lr, defaults.lr);
  EXPECT_DOUBLE_EQ((*n)->momentum, defaults.momentum);
  EXPECT_EQ((*n)->rounds, defaults.rounds);
  auto full = ParseOuterSpec("momentum:every=50,lr=0.5,momentum=0.8,start=0.25");
  ASSERT_TRUE(full.ok() && full->has_value()) << full.status();
  EXPECT_EQ((*full)->method, OuterMethod::kMomentum);
  EXPECT_EQ((*full)->every, 50);
  EXPECT_DOUBLE_EQ((*full)->lr, 0.5);
  EXPECT_DOUBLE_EQ((*full)->momentum, 0.8);
  EXPECT_DOUBLE_EQ((*full)->start_epoch, 0.25);
  auto sgd = ParseOuterSpec("sgd:every=4");
  ASSERT_TRUE(sgd.ok() && sgd->has_value());
  EXPECT_DOUBLE_EQ((*sgd)->lr, 1.0);
  EXPECT_DOUBLE_EQ((*sgd)->momentum, 0.0);
  // The spec reads back to the same options.
  for (const char* text :
       {"none", "nesterov:every=50,lr=0.5,momentum=0.8,start=0.25,rounds=4",
        "sgd:every=4,lr=1,rounds=0", "nesterov:every=80,lr=0.9,momentum=0.8,rounds=8",
        "nesterov:every=80,lr=0.9,momentum=0.8,rounds=4,overlap=40"}) {
    auto parsed = ParseOuterSpec(text);
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(OuterSpec(*parsed), text);
  }
}

TEST(OuterSpecTest, RefusesWithTheReason) {
  const std::pair<const char*, const char*> cases[] = {
      {"adam", "unknown method 'adam'"},
      {"nesterov:every=0", "every=0 (at least 1)"},
      {"nesterov:every=x", "every 'x' is not a number"},
      {"nesterov:lr=0", "lr=0 (in (0, 10])"},
      {"nesterov:lr=11", "lr=11"},
      {"nesterov:momentum=1", "momentum=1 (in [0, 1))"},
      {"sgd:momentum=0.9", "sgd takes no momentum"},
      {"nesterov:start=-1", "start=-1"},
      {"nesterov:rounds=-1", "rounds=-1 (in [0, 1000000])"},
      {"nesterov:rounds=2.5", "rounds '2.5' is not"},
      {"nesterov:overlap=-1", "overlap=-1 (inner steps, in [0, 1000000])"},
      {"nesterov:overlap=0.5", "overlap '0.5' is not"},
      {"nesterov:speed=2", "unknown key 'speed'"},
      {"nesterov:every", "is not key=value"},
  };
  for (const auto& [text, why] : cases) {
    auto parsed = ParseOuterSpec(text);
    ASSERT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << text;
    const std::string message(parsed.status().message());
    EXPECT_NE(message.find(why), std::string::npos) << text << ": " << message;
    EXPECT_NE(message.find(text), std::string::npos) << message;  // names the spec
  }
}

TEST(OuterSpecTest, ShortRunsGetAPowerOfTwoThatHoldsTheRounds) {
  OuterOptions o;
  o.every = 80;
  o.rounds = 8;
  // Long enough (8 x 80 steps or more), or unknown: every.
  for (int64_t steps : {int64_t{0}, int64_t{-5}, int64_t{640}, int64_t{641}, int64_t{1} << 40}) {
    EXPECT_EQ(OuterEvery(o, steps), 80) << steps;
  }
  // Shorter: the largest power of two at most steps / rounds, so rounds to 2 x rounds of them.
  for (int64_t steps = 1; steps < 640; ++steps) {
    const int h = OuterEvery(o, steps);
    SCOPED_TRACE("steps " + std::to_string(steps) + ", H " + std::to_string(h));
    ASSERT_GE(h, 1);
    ASSERT_LT(h, 80);
    ASSERT_EQ(h & (h - 1), 0) << "a power of two";
    if (steps >= 8) {
      ASSERT_GE(steps / h, 8);
      ASSERT_LT(steps / h, 16);
    } else {
      ASSERT_EQ(h, 1);
    }
  }
  o.rounds = 0;  // off: every, however short
  EXPECT_EQ(OuterEvery(o, 10), 80);
}

std::vector<float> Noise(size_t n, std::mt19937_64& rng, double scale) {
  std::normal_distribution<float> d(0.0f, static_cast<float>(scale));
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// With exact averaging over every member and equal anchors, the decentralized step is DiLoCo's
// (Algorithm 1): every member ends each round on the same anchor, the reference's.
TEST(OuterOptimizerTest, ExactAverageIsDiLoCo) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    constexpr size_t kMembers = 4, kSize = 33;
    const std::vector<float> start = Noise(kSize, rng, 1.0);
    OuterOptions o;  // Nesterov at DiLoCo's η 0.7, μ 0.9
    o.lr = 0.7;
    o.momentum = 0.9;
    std::vector<OuterOptimizer> members;
    for (size_t i = 0; i < kMembers; ++i) {
      auto made = OuterOptimizer::Create(o, kernels::Device::Cpu(), start);
      ASSERT_TRUE(made.ok()) << made.status();
      members.push_back(*std::move(made));
    }
    std::vector<double> anchor(start.begin(), start.end()), velocity(kSize, 0.0);
    for (int round = 0; round < 5; ++round) {
      // Inner progress of each member, then the exact average.
      std::vector<std::vector<float>> x(kMembers);
      std::vector<float> mean(kSize, 0.0f);
      for (size_t i = 0; i < kMembers; ++i) {
        x[i] = Noise(kSize, rng, 0.05);
        for (size_t k = 0; k < kSize; ++k) {
          x[i][k] += members[i].anchor()[k];
          mean[k] += x[i][k] / kMembers;
        }
      }
      for (size_t k = 0; k < kSize; ++k) {
        const double delta = anchor[k] - mean[k];
        velocity[k] = 0.9 * velocity[k] + delta;
        anchor[k] -= 0.7 * (delta + 0.9 * velocity[k]);
      }
      for (size_t i = 0; i < kMembers; ++i) {
        std::vector<float> mixed = mean;
        auto stats = members[i].Step(mixed);
        ASSERT_TRUE(stats.ok()) << stats.status();
        EXPECT_GT(stats->delta_norm, 0);
        for (size_t k = 0; k < kSize; ++k) {
          EXPECT_NEAR(mixed[k], anchor[k], 1e-5) << "round " << round << " k " << k;
          EXPECT_EQ(mixed[k], members[i].anchor()[k]);      // x restarts from the anchor
          EXPECT_EQ(members[i].anchor()[k], members[0].anchor()[k]);  // one anchor for all
        }
      }
    }
    EXPECT_EQ(members[0].steps(), 5u);
  }
}

// η = 1, μ = 0: the anchor becomes the mixed model, which is local SGD with gossip.
TEST(OuterOptimizerTest, UnitRateWithoutMomentumIsLocalSgd) {
  std::mt19937_64 rng(7);
  const std::vector<float> start = Noise(100, rng, 1.0);
  auto outer = OuterOptimizer::Create(**ParseOuterSpec("sgd"), kernels::Device::Cpu(), start);
  ASSERT_TRUE(outer.ok());
  for (int round = 0; round < 3; ++round) {
    std::vector<float> x = Noise(100, rng, 0.1);
    for (size_t k = 0; k < x.size(); ++k) x[k] += outer->anchor()[k];
    const std::vector<float> before = x;
    ASSERT_TRUE(outer->Step(x).ok());
    for (size_t k = 0; k < x.size(); ++k) EXPECT_NEAR(x[k], before[k], 1e-6);
  }
}

// A restart moves the anchor to the new model and keeps the momentum: the next step from an
// unchanged model is the momentum's alone.
TEST(OuterOptimizerTest, RestartTakesTheModelAndKeepsTheMomentum) {
  const std::vector<float> start(8, 1.0f);
  OuterOptions o;
  o.method = OuterMethod::kMomentum;
  o.lr = 0.5;
  o.momentum = 0.5;
  auto outer = OuterOptimizer::Create(o, kernels::Device::Cpu(), start);
  ASSERT_TRUE(outer.ok());
  std::vector<float> x(8, 0.0f);  // Δ̄ = 1: v = 1, a = 1 − 0.5 = 0.5
  ASSERT_TRUE(outer->Step(x).ok());
  EXPECT_FLOAT_EQ(x[0], 0.5f);
  const std::vector<float> adopted(8, 3.0f);
  outer->Restart(adopted);
  EXPECT_FLOAT_EQ(outer->anchor()[0], 3.0f);
  EXPECT_FLOAT_EQ(outer->velocity()[0], 1.0f);
  std::vector<float> same = adopted;  // Δ̄ = 0: v = 0.5, a = 3 − 0.25
  ASSERT_TRUE(outer->Step(same).ok());
  EXPECT_FLOAT_EQ(same[0], 2.75f);
}

TEST(OuterOptimizerTest, ABadModelChangesNothing) {
  const std::vector<float> start(4, 1.0f);
  auto outer = OuterOptimizer::Create(OuterOptions{}, kernels::Device::Cpu(), start);
  ASSERT_TRUE(outer.ok());
  std::vector<float> nan = {0.0f, std::nanf(""), 0.0f, 0.0f};
  EXPECT_EQ(outer->Step(nan).status().code(), StatusCode::kInvalidArgument);
  std::vector<float> small(3, 0.0f);
  EXPECT_EQ(outer->Step(small).status().code(), StatusCode::kInvalidArgument);
  for (float a : outer->anchor()) EXPECT_EQ(a, 1.0f);
  for (float v : outer->velocity()) EXPECT_EQ(v, 0.0f);
  EXPECT_EQ(outer->steps(), 0u);
  EXPECT_FALSE(OuterOptimizer::Create(OuterOptions{}, kernels::Device::Cpu(), {}).ok());
}

}  // namespace
}  // namespace murmur::gossip
