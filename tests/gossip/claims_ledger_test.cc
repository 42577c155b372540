// The claims ledger (gossip/claims_ledger.h): what a node believes of its members' word, view by
// view.

#include "gossip/claims_ledger.h"

#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <vector>

namespace murmur::gossip {
namespace {

MemberEntry Member(NodeId id, uint64_t clock, uint64_t samples, Incarnation life = 0,
                   MemberState state = MemberState::kAlive, bool finished = false) {
  MemberEntry m;
  m.id = id;
  m.step_clock = clock;
  m.samples = samples;
  m.incarnation = life;
  m.state = state;
  m.finished = finished;
  return m;
}

// Node 1's ledger; clocks as the view gives them.
struct Ledger {
  ClaimsLedger ledger{1};
  std::map<NodeId, uint64_t> clocks;
  void View(std::vector<MemberEntry> members, uint64_t step, int64_t samples,
            int64_t max_batch = 32, uint64_t gap = 8) {
    for (const MemberEntry& m : members) clocks[m.id] = m.step_clock;
    ledger.Update(members, {step, samples, max_batch, gap},
                  [&](NodeId id) { return clocks.at(id); });
  }
};

TEST(ClaimsLedgerTest, HonestClaimsAddUpAndTheOwnCountMovesOnBetweenViews) {
  Ledger l;
  l.View({Member(1, 10, 320), Member(2, 10, 320), Member(3, 9, 288)}, 10, 320);
  EXPECT_EQ(l.ledger.cluster_samples(), 320 + 320 + 288);
  EXPECT_EQ(l.ledger.live_members(), 3u);
  EXPECT_EQ(l.ledger.best_clock(), 10u);
  // Two more steps of this node's own since the view: counted at once.
  EXPECT_EQ(l.ledger.ReportedSamples(384), 320 + 320 + 288 + 64);
  EXPECT_TRUE(l.ledger.TakeRefusals().empty());
}

TEST(ClaimsLedgerTest, OneLiarIsHeldToTheBoundAndRefusedOncePerLife) {
  Ledger l;
  const std::vector<MemberEntry> view = {Member(1, 100, 3200), Member(2, 100, 3200),
                                         Member(3, 100, 3200), Member(4, 100, 1u << 30)};
  l.View(view, 100, 3200);
  // Held by the plausible count (4 × clock × batch) and then by the second-highest claim.
  EXPECT_EQ(l.ledger.cluster_samples(), 4 * 3200);
  auto refused = l.ledger.TakeRefusals();
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].reason, kRejectUnconfirmedSamples);
  EXPECT_EQ(refused[0].from, 4u);
  l.View(view, 100, 3200);
  EXPECT_TRUE(l.ledger.TakeRefusals().empty()) << "refused once per life";
  std::vector<MemberEntry> restarted = view;
  restarted[3].incarnation = 1;
  l.View(restarted, 100, 3200);
  EXPECT_EQ(l.ledger.TakeRefusals().size(), 1u) << "a new life is refused anew";
}

TEST(ClaimsLedgerTest, AClaimThatStopsGrowingKeepsWhatWasBelievedOfIt) {
  Ledger l;
  // Member 3 claims far ahead, then repeats the figure while the honest members progress.
  l.View({Member(1, 10, 320), Member(2, 10, 320), Member(3, 10, 1200)}, 10, 320);
  const int64_t first = l.ledger.cluster_samples();
  EXPECT_EQ(first, 320 + 320 + 320);  // held to the second-highest
  l.View({Member(1, 40, 1280), Member(2, 40, 1280), Member(3, 40, 1200)}, 40, 1280);
  // Its repeated claim keeps 320, not the new bound of 1280.
  EXPECT_EQ(l.ledger.cluster_samples(), 1280 + 1280 + 320);
}

TEST(ClaimsLedgerTest, OneClockAheadOfEveryoneIsNotTheClockToCatchUpTo) {
  Ledger l;
  l.View({Member(1, 50, 0), Member(2, 60, 0), Member(3, 90000, 0)}, 50, 0, 32, 8);
  EXPECT_EQ(l.ledger.best_clock(), 60u);
  auto refused = l.ledger.TakeRefusals();
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].reason, kRejectUnconfirmedClock);
  EXPECT_EQ(refused[0].from, 3u);
}

TEST(ClaimsLedgerTest, FinishedIsBelievedFromAQuorumAndHolds) {
  Ledger l;
  l.View({Member(1, 10, 0), Member(2, 10, 0), Member(3, 10, 0, 0, MemberState::kAlive, true),
          Member(4, 10, 0), Member(5, 10, 0)},
         10, 0);
  EXPECT_FALSE(l.ledger.quorum_finished()) << "1 of 5";
  EXPECT_TRUE(l.ledger.more_finished());
  EXPECT_TRUE(l.ledger.HasFinished(3));
  EXPECT_FALSE(l.ledger.HasFinished(2));
  // Two finished and left, one finished and live: 3 of the 5.
  l.View({Member(1, 10, 0), Member(2, 10, 0), Member(3, 10, 0, 0, MemberState::kLeft, true),
          Member(4, 10, 0, 0, MemberState::kLeft, true),
          Member(5, 10, 0, 0, MemberState::kAlive, true)},
         10, 0);
  EXPECT_TRUE(l.ledger.quorum_finished());
  EXPECT_EQ(l.ledger.live_members(), 3u);
  l.View({Member(1, 10, 0), Member(2, 10, 0)}, 10, 0);
  EXPECT_TRUE(l.ledger.quorum_finished()) << "a quorum once reached holds";
  EXPECT_FALSE(l.ledger.more_finished());
}

TEST(ClaimsLedgerTest, AMemberThatLeftStillCountsItsBelievedWork) {
  Ledger l;
  l.View({Member(1, 10, 320), Member(2, 10, 320), Member(3, 10, 320)}, 10, 320);
  l.View({Member(1, 20, 640), Member(2, 20, 640), Member(3, 10, 320, 0, MemberState::kDead)}, 20,
         640);
  EXPECT_EQ(l.ledger.cluster_samples(), 640 + 640 + 320);
  EXPECT_EQ(l.ledger.live_members(), 2u);
}

TEST(ClaimsLedgerTest, TheScheduleCountsTheOwnSamplesTimesTheMembersWhenThatIsFresher) {
  Ledger l;
  l.View({Member(1, 10, 320), Member(2, 10, 320), Member(3, 10, 320)}, 10, 320);
  // Right after the view both estimates agree.
  EXPECT_EQ(l.ledger.ScheduleSamples(320), 3 * 320);
  // Ten more steps of 32 here: the view's counts lag, the own count times three does not.
  EXPECT_EQ(l.ledger.ReportedSamples(640), 3 * 320 + 320);
  EXPECT_EQ(l.ledger.ScheduleSamples(640), 3 * 640);
  // A joiner with no samples of its own reads the reported counts.
  Ledger joiner;
  joiner.View({Member(1, 0, 0), Member(2, 50, 1600), Member(3, 50, 1600)}, 0, 0);
  EXPECT_EQ(joiner.ledger.ScheduleSamples(0), 3200);
}

TEST(ClaimsLedgerTest, TheBudgetCountsTheWorkAMembersClockShowsSinceTheView) {
  Ledger l;
  l.View({Member(1, 10, 320), Member(2, 10, 320),
          Member(3, 10, 320, 0, MemberState::kAlive,
                 /*finished=*/true)},
         10, 320);
  // Without fresher clocks the budget reads the view's counts and this node's own.
  EXPECT_EQ(l.ledger.BudgetSamples(640, 20, [&](NodeId id) { return l.clocks.at(id); }),
            l.ledger.ReportedSamples(640));
  // Member 2's envelopes say it took five more steps: 5 × 32 counted. Member 3 has finished and
  // its clock counts for nothing.
  l.clocks[2] = 15;
  l.clocks[3] = 40;
  EXPECT_EQ(l.ledger.BudgetSamples(640, 20, [&](NodeId id) { return l.clocks.at(id); }),
            l.ledger.ReportedSamples(640) + 160);
  // A clock far ahead counts for no more than this node's own progress since the view (320).
  l.clocks[2] = 10'000;
  EXPECT_EQ(l.ledger.BudgetSamples(640, 20, [&](NodeId id) { return l.clocks.at(id); }),
            l.ledger.ReportedSamples(640) + 320);
  // So does a clock no product of samples fits in.
  l.clocks[2] = std::numeric_limits<uint64_t>::max();
  EXPECT_EQ(l.ledger.BudgetSamples(640, 20, [&](NodeId id) { return l.clocks.at(id); }),
            l.ledger.ReportedSamples(640) + 320);
}

TEST(ClaimsLedgerTest, AViewFromBeforeAMembersFirstStepCountsItAtThisNodesRate) {
  Ledger l;
  l.View({Member(1, 0, 0), Member(2, 0, 0)}, 0, 0);
  // 20 steps of 16 here since the view; member 2's clock says 10 steps: 10 × 16.
  l.clocks[2] = 10;
  EXPECT_EQ(l.ledger.BudgetSamples(320, 20, [&](NodeId id) { return l.clocks.at(id); }), 320 + 160);
}

TEST(ClaimsLedgerTest, AStepWaitsOnlyForMembersThatHaveNotFinished) {
  Ledger l;
  l.View({Member(1, 10, 320), Member(2, 10, 320, 0, MemberState::kAlive, /*finished=*/true),
          Member(3, 10, 320)},
         10, 320);
  EXPECT_EQ(l.ledger.Unfinished({2, 3}), std::vector<NodeId>{3});
  EXPECT_TRUE(l.ledger.Unfinished({2}).empty());
}

}  // namespace
}  // namespace murmur::gossip
