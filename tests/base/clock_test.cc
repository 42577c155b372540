#include "base/clock.h"

#include <gtest/gtest.h>

namespace murmur {
namespace {

using std::chrono::milliseconds;

TEST(ManualClockTest, MovesOnlyWhenTold) {
  ManualClock clock;
  const TimePoint t0 = clock.Now();
  EXPECT_EQ(clock.Now(), t0);
  clock.Advance(milliseconds(250));
  EXPECT_EQ(clock.Now() - t0, milliseconds(250));
  clock.SleepFor(milliseconds(750));  // sleeping advances instead of blocking
  EXPECT_DOUBLE_EQ(ToSeconds(clock.Now() - t0), 1.0);
  clock.Set(t0 + milliseconds(5000));
  EXPECT_EQ(clock.Now() - t0, milliseconds(5000));
}

TEST(ManualClockDeathTest, RefusesToGoBackwards) {
  ManualClock clock(TimePoint(milliseconds(10)));
  EXPECT_DEATH(clock.Set(TimePoint(milliseconds(5))), "backwards");
}

TEST(RealClockTest, IsMonotonicAndSleeps) {
  RealClock clock;
  const TimePoint a = clock.Now();
  clock.SleepFor(milliseconds(2));
  const TimePoint b = clock.Now();
  EXPECT_GE(b - a, milliseconds(2));
}

}  // namespace
}  // namespace murmur
