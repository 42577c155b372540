// The run's budget (gossip/run_budget.h): which bound ends it, in which order.

#include "gossip/run_budget.h"

#include <gtest/gtest.h>

namespace murmur::gossip {
namespace {

using std::chrono::seconds;

TEST(RunBudgetTest, TheFirstBoundReachedEndsTheRunInItsOrder) {
  const RunBudget budget(/*budget_samples=*/1000, /*target_accuracy=*/0.8, seconds(60),
                         std::nullopt);
  EXPECT_EQ(budget.Spent({.reported_samples = 999, .accuracy = 0.5}), "");
  EXPECT_EQ(budget.Spent({.reported_samples = 1000}), "epochs");
  EXPECT_EQ(budget.Spent({.reported_samples = 10, .accuracy = 0.8}), "accuracy");
  EXPECT_EQ(budget.Spent({.elapsed = seconds(60)}), "time");
  EXPECT_EQ(budget.Spent({.quorum_finished = true}), "peer");
  EXPECT_EQ(budget.Spent({.stop_requested = true}), "stopped");
  EXPECT_EQ(budget.Spent({.reported_samples = 1000, .accuracy = 0.9, .stop_requested = true}),
            "epochs");
}

TEST(RunBudgetTest, TheSchedulesEstimateCountsOnlyForAScheduleThatDecaysToZero) {
  const RunBudget constant(1000, 0, seconds(0), std::nullopt);
  EXPECT_EQ(constant.Spent({.reported_samples = 10, .schedule_samples = 5000}), "");
  LrScheduleOptions options;
  options.kind = LrScheduleKind::kCosine;
  options.total_samples = 1000;
  auto cosine = LrSchedule::Create(options);
  ASSERT_TRUE(cosine.ok()) << cosine.status().ToString();
  const RunBudget decaying(1000, 0, seconds(0), *cosine);
  EXPECT_EQ(decaying.Spent({.reported_samples = 10, .schedule_samples = 999}), "");
  EXPECT_EQ(decaying.Spent({.reported_samples = 10, .schedule_samples = 1000}), "epochs");
}

TEST(RunBudgetTest, UnusedBoundsNeverEndTheRun) {
  const RunBudget none(0, 0, seconds(0), std::nullopt);
  EXPECT_EQ(none.Spent({.reported_samples = INT64_MAX, .accuracy = 1, .elapsed = seconds(1 << 30)}),
            "");
}

}  // namespace
}  // namespace murmur::gossip
