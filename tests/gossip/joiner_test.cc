// The join (gossip/joiner.h) under a manual clock: waiting for members, asking for a model,
// retrying after refusals and lost replies, and starting.

#include "gossip/joiner.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "coding/update_codec.h"

namespace murmur::gossip {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

MemberEntry Member(NodeId id) {
  MemberEntry m;
  m.id = id;
  return m;
}

class JoinerTest : public ::testing::Test {
 protected:
  JoinerTest() {
    o_.self = 1;
    o_.expect_members = 3;
    o_.expect_wait = seconds(30);
    o_.join_after_steps = 20;
    o_.snapshot_timeout = seconds(5);
    o_.join_attempts = 3;
  }
  Joiner::Decision Advance(Joiner& j, JoinReading r, TimePoint now) {
    return j.Advance(r, fetch_, members_, [&](NodeId id) { return clocks_[id]; }, now);
  }
  GossipNodeOptions o_;
  ModelFetch fetch_{1, 2};
  std::vector<MemberEntry> members_ = {Member(1), Member(2), Member(3)};
  std::map<NodeId, uint64_t> clocks_ = {{1, 0}, {2, 400}, {3, 300}};
  const TimePoint t0_{};
};

TEST_F(JoinerTest, WaitsForTheExpectedMembersUpToTheirWait) {
  Joiner j(o_, t0_);
  auto d = Advance(j, {.live_members = 2}, t0_);
  EXPECT_EQ(d.what, Joiner::Do::kWait);
  EXPECT_EQ(d.until, t0_ + milliseconds(20));
  // At the deadline it starts with whoever is there (the cluster only a few steps in).
  d = Advance(j, {.live_members = 2, .best_clock = 5}, t0_ + seconds(30));
  EXPECT_EQ(d.what, Joiner::Do::kStart);
  EXPECT_FALSE(d.adopt);
  // A stop starts at once, where the budget ends the run.
  Joiner k(o_, t0_);
  EXPECT_EQ(Advance(k, {.live_members = 1, .over = true}, t0_).what, Joiner::Do::kStart);
}

TEST_F(JoinerTest, ARunningClusterIsAskedForAModelThenAgainAfterARefusalOrALostReply) {
  Joiner j(o_, t0_);
  auto d = Advance(j, {.live_members = 3, .best_clock = 400}, t0_);
  ASSERT_EQ(d.what, Joiner::Do::kAsk);
  EXPECT_EQ(d.to, 2u);
  EXPECT_EQ(d.until, t0_ + seconds(5));
  EXPECT_EQ(j.attempt(), 1);
  // Still waiting for the reply.
  d = Advance(j, {.live_members = 3, .best_clock = 400}, t0_ + seconds(1));
  EXPECT_EQ(d.what, Joiner::Do::kWait);
  EXPECT_EQ(d.until, t0_ + seconds(5));
  // A refusal: the next member at once.
  fetch_.OnReply(2, SnapshotReply{400, 0, true}, {}, 400);
  d = Advance(j, {.live_members = 3, .best_clock = 400}, t0_ + seconds(1));
  ASSERT_EQ(d.what, Joiner::Do::kAsk);
  EXPECT_EQ(d.to, 3u);
  EXPECT_EQ(j.attempt(), 2);
  // No reply in the timeout: asked again, of the most advanced member that has not refused.
  d = Advance(j, {.live_members = 3, .best_clock = 400}, t0_ + seconds(6));
  ASSERT_EQ(d.what, Joiner::Do::kAsk);
  EXPECT_EQ(d.to, 3u);
  EXPECT_EQ(j.attempt(), 3);
  // The last attempt lost too: it starts from its own model.
  d = Advance(j, {.live_members = 3, .best_clock = 400}, t0_ + seconds(11));
  EXPECT_EQ(d.what, Joiner::Do::kStart);
  EXPECT_FALSE(d.adopt);
  EXPECT_EQ(fetch_.awaited(), 0u);
  EXPECT_LE(j.attempt(), o_.join_attempts);
}

TEST_F(JoinerTest, AReceivedModelIsAdopted) {
  Joiner j(o_, t0_);
  ASSERT_EQ(Advance(j, {.live_members = 3, .best_clock = 400}, t0_).what, Joiner::Do::kAsk);
  std::vector<std::byte> model;
  coding::EncodeDense(std::vector<float>{1, 2}, model);
  fetch_.OnReply(2, SnapshotReply{400, 2, true}, model, 400);
  const auto d = Advance(j, {.live_members = 3, .best_clock = 400}, t0_ + seconds(1));
  EXPECT_EQ(d.what, Joiner::Do::kStart);
  EXPECT_TRUE(d.adopt);
}

TEST_F(JoinerTest, AResumedNodeTrainsOnUnlessTheClusterIsFarAhead) {
  o_.resume_max_lag = 1000;
  Joiner near(o_, t0_);
  auto d = Advance(near, {.live_members = 3, .best_clock = 400, .own_step = 300, .resumed = true},
                   t0_);
  EXPECT_EQ(d.what, Joiner::Do::kStart);
  Joiner far(o_, t0_);
  d = Advance(far, {.live_members = 3, .best_clock = 5000, .own_step = 300, .resumed = true}, t0_);
  EXPECT_EQ(d.what, Joiner::Do::kAsk);
  EXPECT_TRUE(d.drop_resume);
}

}  // namespace
}  // namespace murmur::gossip
