#include "node/train/sharding.h"

#include <numeric>
#include <string>

namespace murmur::node {

StatusOr<ShardStrategy> ParseShardStrategy(std::string_view name) {
  if (name == "contiguous") return ShardStrategy::kContiguous;
  if (name == "strided") return ShardStrategy::kStrided;
  return InvalidArgumentError("unknown shard strategy '" + std::string(name) +
                              "' (allowed: contiguous, strided)");
}

namespace {
// Start of block b of `count` near-equal blocks over n rows.
int64_t BlockStart(int64_t n, int64_t b, int64_t count) { return n * b / count; }
}  // namespace

StatusOr<std::vector<int64_t>> ShardRows(int64_t rows, int index, int count,
                                         ShardStrategy strategy) {
  if (count < 1 || index < 0 || index >= count || rows < 0) {
    return InvalidArgumentError("shard " + std::to_string(index) + " of " +
                                std::to_string(count) + " over " + std::to_string(rows) +
                                " rows: need 0 <= index < count");
  }
  std::vector<int64_t> out;
  if (strategy == ShardStrategy::kContiguous) {
    const int64_t begin = BlockStart(rows, index, count);
    const int64_t end = BlockStart(rows, index + 1, count);
    out.resize(static_cast<size_t>(end - begin));
    std::iota(out.begin(), out.end(), begin);
  } else {
    for (int64_t r = index; r < rows; r += count) out.push_back(r);
  }
  return out;
}

StatusOr<std::vector<Partition>> PartitionRows(int64_t rows, int num_partitions,
                                               std::span<const int> ids) {
  if (num_partitions < 1 || rows < 0) {
    return InvalidArgumentError("need at least one partition (got " +
                                std::to_string(num_partitions) + ")");
  }
  std::vector<Partition> out;
  for (int id : ids) {
    if (id < 0 || id >= num_partitions) {
      return InvalidArgumentError("partition " + std::to_string(id) + " is outside [0, " +
                                  std::to_string(num_partitions) + ")");
    }
    Partition p;
    p.id = id;
    const int64_t begin = BlockStart(rows, id, num_partitions);
    const int64_t end = BlockStart(rows, id + 1, num_partitions);
    p.rows.resize(static_cast<size_t>(end - begin));
    std::iota(p.rows.begin(), p.rows.end(), begin);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace murmur::node
