#pragma once
// Which rows of a data set a node trains on. Pure functions of (rows, index, count), so every
// node computes the same split without talking to anyone.

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace murmur::node {

enum class ShardStrategy {
  kContiguous,  // node i gets rows [i*n/N, (i+1)*n/N)
  kStrided,     // node i gets rows i, i+N, i+2N, ...
};

StatusOr<ShardStrategy> ParseShardStrategy(std::string_view name);

// Rows of node `index` of `count`. Every row belongs to exactly one node and shard sizes differ
// by at most one. kInvalidArgument unless 0 <= index < count and count >= 1.
StatusOr<std::vector<int64_t>> ShardRows(int64_t rows, int index, int count,
                                         ShardStrategy strategy);

// The data split into `num_partitions` near-equal contiguous partitions, of which a node holds
// the ones listed in `ids` (gradient coding gives a worker s+1 of them). Partition p is rows
// [p*n/P, (p+1)*n/P).
struct Partition {
  int id = 0;
  std::vector<int64_t> rows;
};
StatusOr<std::vector<Partition>> PartitionRows(int64_t rows, int num_partitions,
                                               std::span<const int> ids);

}  // namespace murmur::node
