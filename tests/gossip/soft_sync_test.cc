#include "gossip/soft_sync.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

#include "gossip/node_io.h"
#include "gossip/peer_sampling.h"

namespace murmur::gossip {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

// This node steps every `step`, its one peer every `slowdown` x `step`; returns this node's
// steps until it marked the peer (0: never within `limit` steps). The waits of this node are
// charged to the peer as in a run: a gate that holds is called again every step / 10.
uint64_t StepsUntilMarked(SoftSyncOptions options, Duration step, double slowdown, int limit) {
  SoftSync s(options);
  TimePoint now{};
  uint64_t self = 0;
  double peer = 0;
  const Duration poll = step / 10;
  for (int calls = 0; calls < limit * 100; ++calls) {
    s.Observe(2, static_cast<uint64_t>(peer) + 1);  // clocks start at 1 (0: not started)
    const SoftSync::Decision d = s.Gate(self + 1, {2}, now);
    if (!d.newly_marked.empty()) return self;
    const Duration dt = d.proceed ? step : poll;
    if (d.proceed && ++self >= static_cast<uint64_t>(limit)) return 0;
    now += dt;
    peer += ToSeconds(dt) / (slowdown * ToSeconds(step));
  }
  return 0;
}

TEST(SoftSyncTest, WithoutScalingTheWaitIsMaxWait) {
  SoftSync s({.max_lead = 4, .max_wait = milliseconds(700), .max_wait_steps = 0});
  TimePoint now{};
  for (uint64_t c = 1; c < 50; ++c) {
    s.Observe(2, c);
    s.Gate(c, {2}, now);
    now += milliseconds(3);
  }
  EXPECT_EQ(s.EffectiveWait(), milliseconds(700));
}

TEST(SoftSyncTest, TheWaitIsMaxWaitStepsOfTheMeasuredStepWithinItsBounds) {
  for (const auto& [step, want] :
       {std::pair{milliseconds(3), milliseconds(600)},       // 200 x 3 ms
        std::pair{milliseconds(1), milliseconds(250)},       // 200 ms: the floor
        std::pair{milliseconds(30), milliseconds(2000)}}) {  // 6 s: the ceiling
    SoftSync s({.max_lead = 4,
                .max_wait = milliseconds(2000),
                .max_wait_steps = 200,
                .min_wait = milliseconds(250)});
    EXPECT_EQ(s.EffectiveWait(), milliseconds(2000));  // nothing measured yet
    TimePoint now{};
    for (uint64_t c = 1; c < 100; ++c) {
      s.Observe(2, c);
      ASSERT_TRUE(s.Gate(c, {2}, now).proceed);
      now += step;
    }
    EXPECT_NEAR(s.step_seconds(), std::chrono::duration<double>(step).count(), 1e-9);
    EXPECT_EQ(std::chrono::duration_cast<milliseconds>(s.EffectiveWait()), want)
        << "step " << step.count() << " ms";
  }
}

// An evaluation between two steps (here 100 steps long) is not a step: it moves the estimate by
// at most 3x a step's share, and the waits of a gate that holds are not part of a step either.
TEST(SoftSyncTest, PausesAndWaitsDoNotInflateTheStep) {
  SoftSync s({.max_lead = 2, .max_wait = milliseconds(2000), .max_wait_steps = 200});
  TimePoint now{};
  for (uint64_t c = 1; c < 40; ++c) {
    s.Observe(2, c);
    s.Gate(c, {2}, now);
    now += milliseconds(c == 20 ? 300 : 3);
  }
  EXPECT_LT(s.step_seconds(), 0.0035);
  // Held at clock 40 by a peer at 37 for 50 ms of gates: the step after is 3 ms, not 53.
  s.Observe(3, 37);
  const double before = s.step_seconds();
  for (int i = 0; i < 50; ++i, now += milliseconds(1)) {
    EXPECT_FALSE(s.Gate(40, {2, 3}, now).proceed);
  }
  s.Observe(3, 40);
  EXPECT_TRUE(s.Gate(40, {2, 3}, now).proceed);
  now += milliseconds(3);
  s.Observe(2, 41);
  s.Observe(3, 41);
  s.Gate(41, {2, 3}, now);
  EXPECT_NEAR(s.step_seconds(), before, 0.0001);
}

// The point of scaling: a 4x slower peer is marked within about as many of this node's steps
// whether a step takes 2 ms or 200 ms; with W fixed at 2 s the short run needs hundreds of
// steps (seconds) more than the long one. No seed: the clock is manual, the schedule fixed.
TEST(SoftSyncTest, AFourTimesSlowerPeerIsMarkedWithinTheSameStepsAtAnyStepTime) {
  const SoftSyncOptions scaled{.max_lead = 32,
                               .max_wait = std::chrono::seconds(3600),
                               .max_wait_steps = 200,
                               .min_wait = milliseconds(1)};
  const uint64_t fast = StepsUntilMarked(scaled, milliseconds(2), 4, 5000);
  const uint64_t slow = StepsUntilMarked(scaled, milliseconds(200), 4, 5000);
  std::printf("4x slower peer marked after %llu steps of 2 ms, %llu steps of 200 ms\n",
              static_cast<unsigned long long>(fast), static_cast<unsigned long long>(slow));
  ASSERT_GT(fast, 0u);
  ASSERT_GT(slow, 0u);
  EXPECT_LT(fast, 600u);  // the lead (about 43 steps) and W's 200 steps at 3/4 waiting
  EXPECT_NEAR(static_cast<double>(fast), static_cast<double>(slow),
              0.05 * static_cast<double>(fast));
  const SoftSyncOptions fixed{
      .max_lead = 32, .max_wait = std::chrono::seconds(2), .max_wait_steps = 0};
  const uint64_t fixed_fast = StepsUntilMarked(fixed, milliseconds(2), 4, 5000);
  const uint64_t fixed_slow = StepsUntilMarked(fixed, milliseconds(200), 4, 5000);
  std::printf("with W = 2 s: after %llu steps of 2 ms, %llu steps of 200 ms\n",
              static_cast<unsigned long long>(fixed_fast),
              static_cast<unsigned long long>(fixed_slow));
  EXPECT_GT(fixed_fast, fast + 100);
  EXPECT_LT(fixed_slow, slow);
  // A peer as fast as this node is never marked, scaled or not.
  EXPECT_EQ(StepsUntilMarked(scaled, milliseconds(2), 1, 5000), 0u);
}

TEST(SoftSyncTest, WaitsForASlowPeerAtMostWThenMarksItAStraggler) {
  SoftSync s({.max_lead = 4,
              .max_wait = milliseconds(500),
              .max_wait_steps = 0,
              .straggler_hold = milliseconds(2000)});
  TimePoint now{};
  s.Observe(2, 10);
  s.Observe(3, 14);
  EXPECT_TRUE(s.Gate(14, {2, 3}, now).proceed);  // 4 ahead of 2: allowed
  auto d = s.Gate(15, {2, 3}, now);
  EXPECT_FALSE(d.proceed);
  EXPECT_EQ(d.waiting_for, std::vector<NodeId>{2});
  now += milliseconds(300);
  EXPECT_FALSE(s.Gate(15, {2, 3}, now).proceed);
  now += milliseconds(250);
  d = s.Gate(15, {2, 3}, now);
  EXPECT_TRUE(d.proceed);
  EXPECT_EQ(d.newly_marked, std::vector<NodeId>{2});
  EXPECT_TRUE(s.IsStraggler(2, now));
  EXPECT_EQ(s.stragglers_detected(), 1u);
  // The hold expires: 2 is waited for again.
  now += milliseconds(2100);
  s.Observe(3, 40);
  d = s.Gate(40, {2, 3}, now);
  EXPECT_FALSE(d.proceed);
  EXPECT_EQ(d.waiting_for, std::vector<NodeId>{2});
}

// A ring 1-2-3-4 with node 3 slow: node 1 (this one) waits for 2 only because 2's gate holds it
// S + 1 ahead of 3. Node 2 is marked after 2 W, not W (its own wait for 3 marks 3 in W); a peer
// with no member that far behind it, or one that marked that member and ran on past 2 S + 1, is
// marked after W.
TEST(SoftSyncTest, APeerHeldByAnotherMembersGateIsMarkedAfterTwiceTheWait) {
  constexpr int64_t kLead = 4;
  auto marked_after_ms = [](std::optional<uint64_t> member_behind, uint64_t peer_clock) {
    SoftSync s({.max_lead = kLead, .max_wait = milliseconds(500), .max_wait_steps = 0});
    if (member_behind.has_value()) s.Observe(3, *member_behind);
    s.Observe(2, peer_clock);
    TimePoint now{};
    for (int ms = 0; ms <= 2000; ms += 10, now += milliseconds(10)) {
      if (!s.Gate(peer_clock + kLead + 1, {2}, now).newly_marked.empty()) return ms;
    }
    return -1;
  };
  EXPECT_EQ(marked_after_ms(std::nullopt, 20), 500);
  EXPECT_EQ(marked_after_ms(20 - kLead - 1, 20), 1000) << "held S + 1 ahead of node 3";
  EXPECT_EQ(marked_after_ms(20 - 2 * kLead - 1, 20), 1000) << "2 S + 1 ahead: stale clocks";
  EXPECT_EQ(marked_after_ms(20 - 2 * kLead - 2, 20), 500) << "ran on past node 3";
  EXPECT_EQ(marked_after_ms(20 - kLead, 20), 500) << "S ahead of node 3: not held";
  EXPECT_EQ(marked_after_ms(0, 20), 500) << "a member that has not started holds nobody";
}

// The slowest member named in a mark's log line: the lowest clock among members that started.
TEST(SoftSyncTest, TheSlowestKnownMemberIsTheLowestStartedClock) {
  SoftSync s({.max_lead = 4, .max_wait_steps = 0});
  EXPECT_EQ(s.Slowest(), (std::pair<NodeId, uint64_t>{0, 0}));
  s.Observe(5, 0);  // not started
  s.Observe(2, 30);
  s.Observe(7, 12);
  s.Observe(3, 40);
  EXPECT_EQ(s.Slowest(), (std::pair<NodeId, uint64_t>{7, 12}));
  s.Forget(7);
  EXPECT_EQ(s.Slowest(), (std::pair<NodeId, uint64_t>{2, 30}));
}

// A peer that is slow but never W late at a stretch (it paces the others by short waits) is
// marked once the waits add up to W within the window; one that costs little time never is.

TEST(SoftSyncTest, ManyShortWaitsForThePeerAddUpToAMark) {
  auto run = [](double waited_fraction, int cycles) {
    SoftSync s({.max_lead = 0, .max_wait = milliseconds(500), .straggler_hold = std::chrono::seconds(30),
                .straggler_wait_fraction = 0.1});
    TimePoint now{};
    uint64_t self = 1;
    const auto wait = milliseconds(static_cast<int64_t>(100 * waited_fraction));
    for (int c = 0; c < cycles; ++c) {
      s.Observe(2, self);  // the peer reaches this node's clock...
      EXPECT_TRUE(s.Gate(self, {2}, now).proceed);
      ++self;  // ...this node steps ahead and must wait for it
      now += milliseconds(100) - wait;
      auto d = s.Gate(self, {2}, now);
      if (d.proceed) {
        EXPECT_EQ(d.newly_marked, std::vector<NodeId>{2});
        return c;
      }
      now += wait;
    }
    return -1;
  };
  const int marked_after = run(0.8, 1000);  // waits 80 ms of every 100 ms
  EXPECT_GT(marked_after, 3) << "a single 80 ms wait is far below W";
  EXPECT_LT(marked_after, 20) << "the waits add up to W = 500 ms within ~1 s";
  EXPECT_EQ(run(0.05, 1000), -1) << "waiting 5 % of the time (below the 10 % fraction) over 100 s";
}

TEST(SoftSyncTest, AFastPeerCatchingUpEndsTheWait) {
  SoftSync s({.max_lead = 0, .max_wait = milliseconds(500)});
  TimePoint now{};
  s.Observe(2, 3);
  EXPECT_FALSE(s.Gate(4, {2}, now).proceed);  // lock-step: wait
  s.Observe(2, 4);
  now += milliseconds(100);
  EXPECT_TRUE(s.Gate(4, {2}, now).proceed);
  EXPECT_EQ(s.stragglers_detected(), 0u);
  EXPECT_GE(s.total_wait(), milliseconds(100));
}

TEST(SoftSyncTest, UnboundedLeadNeverWaitsAndUnstartedPeersAreNotWaitedFor) {
  SoftSync async({.max_lead = -1});
  async.Observe(2, 1);
  EXPECT_TRUE(async.Gate(1000000, {2}, TimePoint{}).proceed);
  EXPECT_FALSE(async.ShouldCatchUp(0, 1000000));
  SoftSync s({.max_lead = 2});
  EXPECT_TRUE(s.Gate(100, {5}, TimePoint{}).proceed) << "clock 0: never heard of, or just started";
  EXPECT_TRUE(s.ShouldCatchUp(10, 13));
  EXPECT_FALSE(s.ShouldCatchUp(10, 12));
  // Lock-step: a lag within the graph's diameter is the ripple of gates opening one step at a
  // time, not a node left behind (a ring of 8: 4 hops).
  SoftSync lockstep({.max_lead = 0});
  const int hops = HopsAcross({.topology = Topology::kRing}, 8);
  EXPECT_EQ(hops, 4);
  EXPECT_FALSE(lockstep.ShouldCatchUp(10, 14, hops));
  EXPECT_TRUE(lockstep.ShouldCatchUp(10, 15, hops));
  EXPECT_TRUE(lockstep.ShouldCatchUp(10, 11)) << "without the graph's hops, any lag";
  EXPECT_TRUE(s.ShouldCatchUp(10, 13, 1)) << "S above the hops: S decides";
}

TEST(SoftSyncTest, DampingHalvesAtTheStalenessScale) {
  SoftSync s({.staleness_scale = 16});
  s.Observe(2, 84);
  s.Observe(3, 120);
  EXPECT_DOUBLE_EQ(s.Damping(100, 2), 0.5);
  EXPECT_DOUBLE_EQ(s.Damping(100, 3), 1.0) << "peers ahead are not damped";
  s.Observe(2, 50);  // clocks never go back
  EXPECT_EQ(s.ClockOf(2), 84u);
}

TEST(SoftSyncTest, AMarkSaysTheWaitTheClocksAndTheHold) {
  SoftSync s(
      {.max_lead = 0, .max_wait = milliseconds(500), .straggler_hold = std::chrono::seconds(7)});
  s.Observe(2, 3);
  s.Observe(3, 9);
  const std::string why = s.MarkedReason(2, 10);
  EXPECT_NE(why.find("waited 0.50 s for node 2"), std::string::npos) << why;
  EXPECT_NE(why.find("step 3 vs 10"), std::string::npos) << why;
  EXPECT_NE(why.find("node 2 at step 3"), std::string::npos) << why;  // the slowest known
  EXPECT_NE(why.find("for 7 s"), std::string::npos) << why;
}

TEST(InjectedPauseTest, HoldsFromItsStepUntilTheClusterReachesItsEnd) {
  const InjectedPause none;
  EXPECT_FALSE(none.Holds(100, 0));
  const InjectedPause pause{.from = 10, .until = 50};
  EXPECT_FALSE(pause.Holds(9, 20));   // not yet
  EXPECT_TRUE(pause.Holds(10, 20));   // the cluster is short of 50
  EXPECT_FALSE(pause.Holds(10, 50));  // the cluster reached it
}

}  // namespace
}  // namespace murmur::gossip
