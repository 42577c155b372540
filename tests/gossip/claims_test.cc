// The bounds on members' claims (claims.h), swept over cluster sizes.

#include "gossip/claims.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace murmur::gossip {
namespace {

TEST(ClaimsTest, OneLiarAddsAtMostWhatAnHonestMemberDid) {
  for (size_t n = 3; n <= 64; n *= 2) {
    SCOPED_TRACE("members " + std::to_string(n));
    std::vector<uint64_t> claims(n, 1000);
    claims[1] = uint64_t{23} << 20;  // one member claims 23 M
    EXPECT_EQ(ClaimBound(claims), 1000u);
    claims[1] = UINT64_MAX;
    EXPECT_EQ(ClaimBound(claims), 1000u);
  }
}

TEST(ClaimsTest, AFewCollidingLiarsAreHeldToTwiceTheMedian) {
  // 8 members, 3 liars agreeing on one huge figure: the second-highest is theirs, the median
  // (the lower middle) an honest member's.
  std::vector<uint64_t> claims = {900, 1000, 1100, 1000, 950, 1u << 30, 1u << 30, 1u << 30};
  EXPECT_EQ(ClaimBound(claims), 2 * 1000u);
}

TEST(ClaimsTest, HonestSpreadIsKeptAndAFasterMemberOnlyTrimmed) {
  // A 4x straggler: nothing is trimmed.
  EXPECT_EQ(ClaimBound(std::vector<uint64_t>{1000, 1000, 1000, 250}), 1000u);
  // One member twice as fast as the rest counts as the next fastest (the run gets longer).
  EXPECT_EQ(ClaimBound(std::vector<uint64_t>{1000, 2000, 1000, 1000}), 1000u);
  // Edge sizes: none, one (this node alone), two (the other is held to this node's figure).
  EXPECT_EQ(ClaimBound(std::vector<uint64_t>{}), 0u);
  EXPECT_EQ(ClaimBound(std::vector<uint64_t>{7}), 7u);
  EXPECT_EQ(ClaimBound(std::vector<uint64_t>{10, 30}), 10u);
  EXPECT_EQ(ClaimBound(std::vector<uint64_t>{0, 0, 5}), 0u);
}

TEST(ClaimsTest, OneMemberAlonePullsTheClockToCatchUpToOnlyByTheGap) {
  // This node's clock first, then the live members'; a gap of 128 steps.
  EXPECT_EQ(QuorumClock(std::vector<uint64_t>{}, 128), 0u);
  EXPECT_EQ(QuorumClock(std::vector<uint64_t>{90000}, 128), 90000u);
  EXPECT_EQ(QuorumClock(std::vector<uint64_t>{50, 90000}, 128), 90000u);  // two nodes: no quorum
  EXPECT_EQ(QuorumClock(std::vector<uint64_t>{50, 90000, 80}, 128), 80u);
  EXPECT_EQ(QuorumClock(std::vector<uint64_t>{50, 208, 80}, 128), 208u);  // at the gap: believed
  EXPECT_EQ(QuorumClock(std::vector<uint64_t>{50, 209, 80}, 128), 80u);   // one beyond: not
  EXPECT_EQ(QuorumClock(std::vector<uint64_t>{0, 500, 400}, 128), 500u);  // a joiner catches up
  EXPECT_EQ(QuorumClock(std::vector<uint64_t>{90000, 90000, 60}, 128), 90000u);
  std::vector<uint64_t> many(63, 100);
  many[17] = 1u << 30;
  EXPECT_EQ(QuorumClock(many, 128), 100u);
}

}  // namespace
}  // namespace murmur::gossip
