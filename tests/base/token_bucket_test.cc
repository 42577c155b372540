#include "base/token_bucket.h"

#include <gtest/gtest.h>

namespace murmur {
namespace {

TEST(TokenBucketTest, AllowsTheBurstThenTheRate) {
  for (double rate : {0.5, 1.0, 4.0}) {
    SCOPED_TRACE("rate " + std::to_string(rate));
    TokenBucket bucket(rate, 3);
    const TimePoint t0{};  // a manual clock may start at the epoch
    int taken = 0;
    for (int i = 0; i < 10; ++i) taken += bucket.Take(t0);
    EXPECT_EQ(taken, 3);
    // Over 10 s at `rate`, 10 * rate more (capped by the burst between tries).
    taken = 0;
    for (int ms = 100; ms <= 10000; ms += 100) taken += bucket.Take(t0 + std::chrono::milliseconds(ms));
    EXPECT_NEAR(taken, 10 * rate, 1.0);
    // An idle minute refills only up to the burst.
    const TimePoint later = t0 + std::chrono::seconds(70);
    taken = 0;
    for (int i = 0; i < 10; ++i) taken += bucket.Take(later);
    EXPECT_EQ(taken, 3);
  }
}

}  // namespace
}  // namespace murmur
