#include "gossip/claims.h"

#include <algorithm>
#include <functional>
#include <vector>

namespace murmur::gossip {

uint64_t ClaimBound(std::span<const uint64_t> claims) {
  if (claims.empty()) return 0;
  std::vector<uint64_t> sorted(claims.begin(), claims.end());
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  if (sorted.size() == 1) return sorted[0];
  const size_t n = sorted.size();
  // The median of an even count is the lower of the middle two (sorted descending: index n/2).
  const uint64_t median = sorted[n / 2];
  const uint64_t by_median = median > UINT64_MAX / kClaimSlack ? UINT64_MAX : median * kClaimSlack;
  return std::min(sorted[1], by_median);
}

uint64_t QuorumClock(std::span<const uint64_t> clocks, uint64_t max_gap) {
  if (clocks.empty()) return 0;
  std::vector<uint64_t> sorted(clocks.begin(), clocks.end());
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  if (sorted.size() < 3 || sorted[0] - sorted[1] <= max_gap) return sorted[0];
  return sorted[1];
}

}  // namespace murmur::gossip
