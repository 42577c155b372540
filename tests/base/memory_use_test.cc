#include "base/memory_use.h"

#include <gtest/gtest.h>

#include <vector>

namespace murmur {
namespace {

TEST(MemoryUseTest, AddsByNameInFirstAddedOrderAndSumsTables) {
  MemoryUse a;
  EXPECT_EQ(a.Total(), 0u);
  EXPECT_EQ(a.Of("model"), 0u);
  a.Add("model", 100);
  a.Add("gradient", 40);
  a.Add("model", 1);
  EXPECT_EQ(a.Of("model"), 101u);
  EXPECT_EQ(a.Total(), 141u);
  ASSERT_EQ(a.entries().size(), 2u);
  EXPECT_EQ(a.entries()[0].buffer, "model");
  MemoryUse b;
  b.Add("inbox", 9);
  b.Add("gradient", 2);
  a.Add(b);
  EXPECT_EQ(a.Of("gradient"), 42u);
  EXPECT_EQ(a.Of("inbox"), 9u);
  EXPECT_EQ(a.Total(), 152u);
  std::vector<float> v;
  v.reserve(10);
  EXPECT_EQ(CapacityBytes(v), 10 * sizeof(float)) << "capacity, not size";
}

}  // namespace
}  // namespace murmur
