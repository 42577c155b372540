#include "gossip/soft_sync.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

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
  SoftSync s({.max_lead = 4, .max_wait = milliseconds(700)});
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
  const SoftSyncOptions fixed{.max_lead = 32, .max_wait = std::chrono::seconds(2)};
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

}  // namespace
}  // namespace murmur::gossip
