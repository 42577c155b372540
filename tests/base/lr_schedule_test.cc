#include "base/lr_schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

namespace murmur {
namespace {

LrSchedule Make(std::string_view spec, double lr, int64_t total, int64_t warmup) {
  auto o = LrSchedule::Parse(spec, lr);
  EXPECT_TRUE(o.ok()) << o.status().ToString();
  o->total_samples = total;
  o->warmup_samples = warmup;
  auto s = LrSchedule::Create(*o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return *s;
}

TEST(LrScheduleTest, ConstantIsConstantAfterItsWarmUp) {
  const LrSchedule s = Make("constant", 0.05, 0, 99);
  EXPECT_DOUBLE_EQ(s.At(0), 0.05 / 100);   // the first step already moves
  EXPECT_DOUBLE_EQ(s.At(49), 0.05 * 50 / 100);
  EXPECT_DOUBLE_EQ(s.At(98), 0.05 * 99 / 100);
  EXPECT_DOUBLE_EQ(s.At(99), 0.05);
  EXPECT_DOUBLE_EQ(s.At(1'000'000'000), 0.05);
  EXPECT_DOUBLE_EQ(Make("constant", 0.05, 0, 0).At(0), 0.05);
}

TEST(LrScheduleTest, StepMultipliesAtEachMilestone) {
  const LrSchedule s = Make("step:0.5,0.75", 0.1, 1000, 0);
  EXPECT_DOUBLE_EQ(s.At(0), 0.1);
  EXPECT_DOUBLE_EQ(s.At(499), 0.1);
  EXPECT_NEAR(s.At(500), 0.01, 1e-15);
  EXPECT_NEAR(s.At(749), 0.01, 1e-15);
  EXPECT_NEAR(s.At(750), 0.001, 1e-15);
  EXPECT_NEAR(s.At(5000), 0.001, 1e-15);  // holds after the budget
  const LrSchedule half = Make("step:0.3,factor=0.5", 1, 100, 10);
  EXPECT_DOUBLE_EQ(half.At(0), 1.0 / 11);
  EXPECT_DOUBLE_EQ(half.At(29), 1);
  EXPECT_DOUBLE_EQ(half.At(30), 0.5);
}

TEST(LrScheduleTest, CosineFollowsHalfACosineAfterTheWarmUp) {
  const LrSchedule s = Make("cosine", 0.2, 1100, 100);
  EXPECT_DOUBLE_EQ(s.At(0), 0.2 / 101);
  EXPECT_DOUBLE_EQ(s.At(100), 0.2);  // the peak, right after the warm-up
  EXPECT_NEAR(s.At(600), 0.1, 1e-12);  // halfway through the decay
  EXPECT_NEAR(s.At(350), 0.2 * (1 + std::cos(std::numbers::pi * 0.25)) / 2, 1e-12);
  EXPECT_NEAR(s.At(1100), 0, 1e-15);
  EXPECT_NEAR(s.At(99'999), 0, 1e-15);
  double previous = s.At(100);
  for (int64_t k = 101; k <= 1100; ++k) {  // monotone after the warm-up
    EXPECT_LE(s.At(k), previous) << k;
    previous = s.At(k);
  }
  const LrSchedule floor = Make("cosine:final=0.1", 1, 1000, 0);
  EXPECT_NEAR(floor.At(1000), 0.1, 1e-12);
  EXPECT_NEAR(floor.At(500), 0.55, 1e-12);
}

TEST(LrScheduleTest, RefusesWhatItCannotFollowWithTheReason) {
  for (const char* bad : {"linear", "cosine:", "cosine:final", "cosine:x=1", "constant:1",
                          "step", "step:", "step:half", "step:0.5,factor=x"}) {
    const auto o = LrSchedule::Parse(bad, 0.1);
    EXPECT_FALSE(o.ok()) << bad;
    if (!o.ok()) {
      EXPECT_NE(o.status().message().find("lr schedule"), std::string::npos) << o.status().ToString();
    }
  }
  auto create = [](std::string_view spec, int64_t total, int64_t warmup) {
    auto o = LrSchedule::Parse(spec, 0.1);
    EXPECT_TRUE(o.ok()) << spec;
    o->total_samples = total;
    o->warmup_samples = warmup;
    return LrSchedule::Create(*o).status();
  };
  EXPECT_FALSE(create("cosine", 0, 0).ok());          // needs a budget
  EXPECT_FALSE(create("step:0.5", 0, 0).ok());
  EXPECT_FALSE(create("cosine", 100, 100).ok());      // warm-up as long as the budget
  EXPECT_FALSE(create("step:0.5,0.4", 100, 0).ok());  // not increasing
  EXPECT_FALSE(create("step:1", 100, 0).ok());
  EXPECT_FALSE(create("step:0.5,factor=2", 100, 0).ok());
  EXPECT_FALSE(create("cosine:final=1.5", 100, 0).ok());
  EXPECT_TRUE(create("constant", 0, 1000).ok());      // a warm-up without a budget
  EXPECT_TRUE(create("cosine", 100, 99).ok());
}

}  // namespace
}  // namespace murmur
