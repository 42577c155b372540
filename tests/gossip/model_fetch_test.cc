// The model fetch (gossip/model_fetch.h): whom a node asks for a dense model, and what it takes
// from the replies.

#include "gossip/model_fetch.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "coding/update_codec.h"

namespace murmur::gossip {
namespace {

MemberEntry Member(NodeId id, MemberState state = MemberState::kAlive) {
  MemberEntry m;
  m.id = id;
  m.state = state;
  return m;
}

std::vector<std::byte> Dense(const std::vector<float>& values) {
  std::vector<std::byte> bytes;
  coding::EncodeDense(values, bytes);
  return bytes;
}

class ModelFetchTest : public ::testing::Test {
 protected:
  std::optional<NodeId> Ask(TimePoint now = {}) {
    return fetch_.Ask(members_, [&](NodeId id) { return clocks_[id]; }, now);
  }
  ModelFetch fetch_{1, 3};
  std::vector<MemberEntry> members_ = {Member(1), Member(2), Member(3),
                                       Member(4, MemberState::kSuspect)};
  std::map<NodeId, uint64_t> clocks_ = {{1, 900}, {2, 50}, {3, 80}, {4, 500}};
};

TEST_F(ModelFetchTest, AsksTheMostAdvancedAliveMemberOtherThanItself) {
  EXPECT_EQ(Ask(), std::optional<NodeId>(3)) << "not itself (900), not the suspect (500)";
  EXPECT_EQ(fetch_.awaited(), 3u);
  EXPECT_TRUE(fetch_.Waiting(TimePoint{} + std::chrono::seconds(4), std::chrono::seconds(5)));
  EXPECT_FALSE(fetch_.Waiting(TimePoint{} + std::chrono::seconds(5), std::chrono::seconds(5)));
}

TEST_F(ModelFetchTest, ARefusalSkipsThatMemberUntilEveryoneRefused) {
  ASSERT_EQ(Ask(), std::optional<NodeId>(3));
  EXPECT_EQ(fetch_.OnReply(3, SnapshotReply{80, 0, true}, {}, 80).verdict,
            ModelFetch::Reply::kRefused);
  EXPECT_TRUE(fetch_.refused());
  EXPECT_FALSE(fetch_.Waiting({}, std::chrono::seconds(5))) << "ask the next at once";
  ASSERT_EQ(Ask(), std::optional<NodeId>(2));
  EXPECT_FALSE(fetch_.refused());
  fetch_.OnReply(2, SnapshotReply{50, 0, true}, {}, 50);
  EXPECT_EQ(Ask(), std::nullopt) << "every alive member refused";
  EXPECT_EQ(Ask(), std::optional<NodeId>(3)) << "the refusals were forgotten";
}

TEST_F(ModelFetchTest, TakesADenseModelOnlyFromTheMemberAsked) {
  ASSERT_EQ(Ask(), std::optional<NodeId>(3));
  const std::vector<std::byte> model = Dense({1, 2, 3});
  EXPECT_EQ(fetch_.OnReply(2, SnapshotReply{50, 3, true}, model, 50).verdict,
            ModelFetch::Reply::kIgnored);
  EXPECT_FALSE(fetch_.has_model());
  EXPECT_EQ(fetch_.OnReply(3, SnapshotReply{70, 3, true}, model, 80).verdict,
            ModelFetch::Reply::kReceived);
  ASSERT_TRUE(fetch_.has_model());
  const ModelFetch::Model m = fetch_.Take();
  EXPECT_EQ(m.values, (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(m.clock, 80u) << "the later of the reply's round and its message's clock";
  EXPECT_EQ(fetch_.awaited(), 0u);
  EXPECT_FALSE(fetch_.has_model());
}

TEST_F(ModelFetchTest, AWrongSizeOrSparseReplyIsMalformedAndChangesNothing) {
  ASSERT_EQ(Ask(), std::optional<NodeId>(3));
  const auto r = fetch_.OnReply(3, SnapshotReply{70, 4, true}, Dense({1, 2, 3, 4}), 80);
  EXPECT_EQ(r.verdict, ModelFetch::Reply::kMalformed);
  EXPECT_EQ(r.failure, coding::DecodeFailure::kWrongDimension);
  std::vector<std::byte> garbage(40, std::byte{0x5a});
  EXPECT_EQ(fetch_.OnReply(3, SnapshotReply{70, 3, true}, garbage, 80).verdict,
            ModelFetch::Reply::kMalformed);
  EXPECT_FALSE(fetch_.has_model());
  EXPECT_EQ(fetch_.awaited(), 3u) << "still waiting for a good reply";
}

TEST(WantsDenseModelTest, FarBehindWithoutACopyOrAfterEveryOuterCatchUp) {
  const int64_t lead = 4;                                       // S: "far" is 4 S = 16 steps
  EXPECT_FALSE(WantsDenseModel(false, false, 100, 115, lead));  // behind, not far
  EXPECT_TRUE(WantsDenseModel(false, false, 100, 116, lead));   // cut off: the copies fall short
  EXPECT_FALSE(WantsDenseModel(true, false, 100, 200, lead));   // the average caught it up
  EXPECT_TRUE(WantsDenseModel(true, true, 100, 101, lead));     // outer: the copies predate a step
  EXPECT_TRUE(WantsDenseModel(false, false, 0, 4, 0));          // S = 0 counts as 1
}

}  // namespace
}  // namespace murmur::gossip
