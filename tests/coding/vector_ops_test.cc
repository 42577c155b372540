#include "coding/vector_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace murmur::coding {
namespace {

TEST(VectorOpsTest, FindsTheFirstNonFiniteAtAnyPosition) {
  for (size_t n : {0u, 1u, 7u, 1024u, 1025u, 5000u}) {
    std::vector<float> v(n, 1.5f);
    EXPECT_TRUE(AllFinite(v)) << n;
    for (size_t pos : {size_t{0}, n / 2, n - 1}) {
      if (n == 0) continue;
      for (float bad : {std::numeric_limits<float>::quiet_NaN(),
                        std::numeric_limits<float>::infinity(),
                        -std::numeric_limits<float>::infinity()}) {
        std::vector<float> w = v;
        w[pos] = bad;
        if (pos + 1 < n) w[n - 1] = bad;  // a later bad value must not hide the first
        ASSERT_EQ(FirstNonFinite(w), pos) << "n=" << n << " value " << bad;
      }
    }
  }
}

TEST(VectorOpsTest, SquaredNormAccumulatesInDouble) {
  std::vector<float> v(1 << 20, 1e-3f);
  EXPECT_NEAR(SquaredL2Norm(v), (1 << 20) * 1e-6, 1e-6);
  EXPECT_EQ(SquaredL2Norm({}), 0.0);
}

TEST(VectorOpsTest, SquaredDistanceAccumulatesInDoubleAndEqualsTheNormOfTheDifference) {
  for (size_t n : {0u, 1u, 7u, 1000u, 1u << 20}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    std::vector<float> a(n), b(n), diff(n);
    for (size_t k = 0; k < n; ++k) {
      a[k] = 1.0f + static_cast<float>(k % 13) * 1e-3f;
      b[k] = a[k] - ((k % 2) != 0U ? 1e-3f : -2e-3f);
      diff[k] = a[k] - b[k];
    }
    EXPECT_NEAR(SquaredL2Distance(a, b), SquaredL2Norm(diff), 1e-9 * static_cast<double>(n) + 1e-12);
    EXPECT_EQ(SquaredL2Distance(a, a), 0.0);
  }
  EXPECT_DEATH(SquaredL2Distance(std::vector<float>(3), std::vector<float>(4)), "");
}

}  // namespace
}  // namespace murmur::coding
