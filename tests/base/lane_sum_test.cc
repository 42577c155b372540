// LaneSum's fixed order: the exact sum to rounding, the same result on every call, and the lanes
// spelled as a loop over blocks of kLaneCount with a tail (sizes around the block edges).

#include "base/lane_sum.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <vector>

namespace murmur {
namespace {

TEST(LaneSumTest, SumsEveryTermInAFixedOrder) {
  constexpr uint64_t kSeed = 20261124;
  std::printf("seed %llu\n", static_cast<unsigned long long>(kSeed));
  std::mt19937_64 rng(kSeed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (size_t n : {size_t{0}, size_t{1}, kLaneCount - 1, kLaneCount, kLaneCount + 1,
                   3 * kLaneCount + 5, size_t{100003}}) {
    SCOPED_TRACE(n);
    std::vector<double> v(n);
    for (double& x : v) x = u(rng);
    long double exact = 0;
    double magnitude = 0;
    for (double x : v) {
      exact += x;
      magnitude += std::abs(x);
    }
    const double got = LaneSum(n, [&](size_t k) { return v[k]; });
    EXPECT_NEAR(got, static_cast<double>(exact), 1e-15 * (magnitude + 1)) << n;
    EXPECT_EQ(got, LaneSum(n, [&](size_t k) { return v[k]; }));
    // Lane l holds the terms k with k % kLaneCount == l.
    Lanes lanes;
    for (size_t k = 0; k < n; ++k) lanes.v[k % kLaneCount] += v[k];
    EXPECT_EQ(got, lanes.Total());
  }
}

TEST(LaneSumTest, ATermIsCalledOncePerIndex) {
  std::vector<int> calls(70, 0);
  const double sum =
      LaneSum(calls.size(), [&](size_t k) { return static_cast<double>(++calls[k]); });
  EXPECT_EQ(sum, 70.0);
  for (int c : calls) EXPECT_EQ(c, 1);
}

}  // namespace
}  // namespace murmur
