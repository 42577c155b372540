// The round scheduler (gossip/round_scheduler.h) under a manual clock: which steps carry a round,
// when a pending outer round mixes, when the clock alone goes out.

#include "gossip/round_scheduler.h"

#include <gtest/gtest.h>

#include <vector>

namespace murmur::gossip {
namespace {

using std::chrono::milliseconds;

MemberEntry Member(NodeId id, uint64_t clock, bool finished = false) {
  MemberEntry m;
  m.id = id;
  m.step_clock = clock;
  m.finished = finished;
  return m;
}

TEST(RoundSchedulerTest, OuterRoundsFallOnTheClocksMultiplesAndPlainOnesEveryPeriod) {
  RoundScheduler r;
  std::vector<uint64_t> outer;
  for (uint64_t step = 1; step <= 40; ++step) {
    if (r.Due(step, 16, 1)) outer.push_back(step);
  }
  EXPECT_EQ(outer, (std::vector<uint64_t>{16, 32}));
  RoundScheduler p;
  std::vector<uint64_t> plain;
  for (uint64_t step = 101; step <= 110; ++step) {
    if (p.Due(step, std::nullopt, 3)) plain.push_back(step);
  }
  EXPECT_EQ(plain, (std::vector<uint64_t>{103, 106, 109})) << "counted from the node's own steps";
}

class PendingRoundTest : public ::testing::Test {
 protected:
  PendingRoundTest() {
    scheduler_.Begin(80, {1, 2, 3, 4}, ChocoRoundStats{});
    scheduler_.Pend(t0_ + milliseconds(500), 0);
    for (NodeId id : {2, 3, 4}) sync_.Observe(id, 80);
    claims_.Update({Member(1, 80), Member(2, 80), Member(3, 80), Member(4, 80)},
                   {80, 0, 32, 8}, [&](NodeId id) { return sync_.ClockOf(id); });
  }
  bool In(TimePoint now) const { return scheduler_.PeersIn(mixing_, 80, sync_, claims_, now); }
  RoundScheduler scheduler_;
  SoftSync sync_{SoftSyncOptions{}};
  ClaimsLedger claims_{1};
  std::vector<NodeId> mixing_ = {2, 3, 4};
  const TimePoint t0_{};
};

TEST_F(PendingRoundTest, MixesOnceEveryPeerWithinReachSentItsUpdateOfTheRound) {
  EXPECT_TRUE(scheduler_.pending());
  EXPECT_FALSE(In(t0_));
  scheduler_.CopyApplied(2, 80);
  scheduler_.CopyApplied(3, 81);
  EXPECT_FALSE(In(t0_));
  scheduler_.CopyApplied(4, 79);  // an older round's update: not this one
  EXPECT_FALSE(In(t0_));
  EXPECT_FALSE(scheduler_.MixDue(80, mixing_, 80, sync_, claims_, t0_ + milliseconds(499)));
  EXPECT_TRUE(scheduler_.MixDue(80, mixing_, 80, sync_, claims_, t0_ + milliseconds(500)))
      << "the wait is over";
  scheduler_.CopyApplied(4, 80);
  EXPECT_TRUE(In(t0_));
  scheduler_.Mixed();
  EXPECT_FALSE(scheduler_.pending());
  EXPECT_EQ(scheduler_.overlap(), 0);
}

TEST_F(PendingRoundTest, APeerBeyondAQuarterRoundOrFinishedIsNotWaitedFor) {
  scheduler_.CopyApplied(2, 80);
  mixing_ = {2, 4, 5};
  sync_.Observe(5, 59);  // 21 steps behind: beyond 80 / 4
  claims_.Update({Member(1, 80), Member(2, 80), Member(4, 80, /*finished=*/true), Member(5, 59)},
                 {80, 0, 32, 8}, [&](NodeId id) { return sync_.ClockOf(id); });
  EXPECT_TRUE(In(t0_));
  sync_.Observe(5, 60);  // within the reach now
  EXPECT_FALSE(In(t0_));
}

TEST(RoundSchedulerTest, UnderOverlapTheRoundMixesAtTheLatestOverlapStepsLater) {
  RoundScheduler r;
  SoftSync sync{SoftSyncOptions{}};
  sync.Observe(2, 16);
  ClaimsLedger claims{1};
  r.Begin(16, {1, 2}, ChocoRoundStats{});
  r.Pend(TimePoint{}, 3);
  const std::vector<NodeId> mixing = {2};
  EXPECT_FALSE(r.MixDue(18, mixing, 16, sync, claims, TimePoint{} + milliseconds(9)));
  EXPECT_TRUE(r.MixDue(19, mixing, 16, sync, claims, TimePoint{}));
  r.CopyApplied(2, 16);
  EXPECT_TRUE(r.MixDue(17, mixing, 16, sync, claims, TimePoint{}));
}

TEST(RoundSchedulerTest, AnOuterRoundWaitsAQuarterOfItsStepsAtMostSoftSyncsWait) {
  RoundScheduler r;
  const TimePoint t0{};
  r.Begin(80, {1, 2}, ChocoRoundStats{});
  r.PendOuter(80, /*step_seconds=*/0.01, /*max_wait=*/std::chrono::seconds(2), 0, t0);
  EXPECT_EQ(r.wait_until(), t0 + milliseconds(200)) << "20 steps of 10 ms";
  r.Mixed();
  r.Begin(160, {1, 2}, ChocoRoundStats{});
  r.PendOuter(80, /*step_seconds=*/1.0, /*max_wait=*/std::chrono::seconds(2), 0, t0);
  EXPECT_EQ(r.wait_until(), t0 + std::chrono::seconds(2)) << "20 s held to W";
}

TEST(RoundSchedulerTest, TheClockAloneGoesOutEveryHalfLead) {
  RoundScheduler r;
  std::vector<uint64_t> sent;
  for (uint64_t step = 1; step <= 20; ++step) {
    if (step == 10) {
      r.ClockSent(step);  // a round told the trackers
      continue;
    }
    if (r.ClockDue(step, 8)) sent.push_back(step);
  }
  EXPECT_EQ(sent, (std::vector<uint64_t>{4, 8, 14, 18}));
  RoundScheduler unbounded;
  EXPECT_FALSE(unbounded.ClockDue(1000, -1)) << "no soft sync, no announcements";
}

TEST(RoundSchedulerTest, CopyClocksNeverDecreaseAndArePrunedWithTheView) {
  RoundScheduler r;
  SoftSync sync{SoftSyncOptions{}};
  sync.Observe(2, 40);
  ClaimsLedger claims{1};
  r.CopyApplied(2, 40);
  r.CopyApplied(2, 12);  // a late, older message
  r.Begin(40, {1, 2}, ChocoRoundStats{});
  r.Pend(TimePoint{} + std::chrono::hours(1), 0);
  EXPECT_TRUE(r.PeersIn({2}, 16, sync, claims, TimePoint{}));
  r.Mixed();
  r.Prune({1});
  r.Begin(40, {1, 2}, ChocoRoundStats{});
  r.Pend(TimePoint{} + std::chrono::hours(1), 0);
  EXPECT_FALSE(r.PeersIn({2}, 16, sync, claims, TimePoint{})) << "its copy clock was pruned";
}

}  // namespace
}  // namespace murmur::gossip
