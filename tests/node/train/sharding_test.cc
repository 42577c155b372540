#include "node/train/sharding.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace murmur::node {
namespace {

TEST(ShardingTest, EveryRowBelongsToExactlyOneNode) {
  for (auto strategy : {ShardStrategy::kContiguous, ShardStrategy::kStrided}) {
    for (int64_t rows : {0, 1, 7, 100, 60000}) {
      for (int count : {1, 2, 3, 8, 13}) {
        std::vector<int> owner(static_cast<size_t>(rows), -1);
        size_t smallest = SIZE_MAX, largest = 0;
        for (int i = 0; i < count; ++i) {
          auto shard = ShardRows(rows, i, count, strategy);
          ASSERT_TRUE(shard.ok());
          smallest = std::min(smallest, shard->size());
          largest = std::max(largest, shard->size());
          for (int64_t r : *shard) {
            ASSERT_EQ(owner[static_cast<size_t>(r)], -1) << "row " << r << " owned twice";
            owner[static_cast<size_t>(r)] = i;
          }
        }
        EXPECT_TRUE(std::none_of(owner.begin(), owner.end(), [](int o) { return o < 0; }));
        EXPECT_LE(largest - smallest, 1u) << rows << " rows over " << count;
      }
    }
  }
}

TEST(ShardingTest, StrategiesDiffer) {
  EXPECT_EQ(*ShardRows(10, 1, 3, ShardStrategy::kContiguous), (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(*ShardRows(10, 1, 3, ShardStrategy::kStrided), (std::vector<int64_t>{1, 4, 7}));
}

TEST(ShardingTest, RejectsBadIndices) {
  EXPECT_EQ(ShardRows(10, 3, 3, ShardStrategy::kStrided).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ShardRows(10, 0, 0, ShardStrategy::kStrided).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseShardStrategy("random").status().code(), StatusCode::kInvalidArgument);
}

TEST(PartitionTest, NodeHoldsSeveralNamedPartitions) {
  // 4 partitions of 10 rows, a worker holding partitions 1 and 3 (gradient coding, s = 1).
  const int ids[] = {3, 1};
  auto parts = PartitionRows(10, 4, ids);
  ASSERT_TRUE(parts.ok());
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].id, 3);
  EXPECT_EQ((*parts)[0].rows, (std::vector<int64_t>{7, 8, 9}));
  EXPECT_EQ((*parts)[1].rows, (std::vector<int64_t>{2, 3, 4}));
  const int all[] = {0, 1, 2, 3};
  auto every = PartitionRows(10, 4, all);
  size_t total = 0;
  for (const auto& p : *every) total += p.rows.size();
  EXPECT_EQ(total, 10u);
  const int bad[] = {4};
  EXPECT_EQ(PartitionRows(10, 4, bad).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace murmur::node
