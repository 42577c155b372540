// The evaluation schedule (gossip/evaluation_schedule.h).

#include "gossip/evaluation_schedule.h"

#include <gtest/gtest.h>

#include <vector>

namespace murmur::gossip {
namespace {

std::vector<int64_t> DueSteps(EvaluationSchedule s, int64_t steps, int64_t batch, size_t members) {
  std::vector<int64_t> due;
  for (int64_t step = 1; step <= steps; ++step) {
    if (s.Due(step, step * batch, members)) due.push_back(step);
  }
  return due;
}

TEST(EvaluationScheduleTest, AFixedPeriodOrNone) {
  EXPECT_EQ(DueSteps(EvaluationSchedule(4, 0), 12, 32, 1), (std::vector<int64_t>{4, 8, 12}));
  EXPECT_TRUE(DueSteps(EvaluationSchedule(0, 1000), 500, 32, 1).empty());
}

TEST(EvaluationScheduleTest, PerRunSpreadsAboutTwentyOverTheNodesShareOfTheBudget) {
  // 4 members at a batch of 32 share 4 × 32 × 2000 samples: 2000 steps each, one every 100.
  const auto due = DueSteps(EvaluationSchedule(kEvalPerRun, 4 * 32 * 2000), 2000, 32, 4);
  ASSERT_FALSE(due.empty());
  EXPECT_EQ(due[0], 1) << "the first step evaluates, so a run shows accuracy early";
  EXPECT_EQ(due[1], 101);
  EXPECT_NEAR(static_cast<double>(due.size()), kEvaluationsPerRun, 1);
}

TEST(EvaluationScheduleTest, PerRunWithoutABudgetEveryFixedNumberOfSteps) {
  const auto due = DueSteps(EvaluationSchedule(kEvalPerRun, 0), 1000, 32, 4);
  EXPECT_EQ(due, (std::vector<int64_t>{1, 1 + kEvalEveryWithoutBudget, 1 + 2 * kEvalEveryWithoutBudget,
                                       1 + 3 * kEvalEveryWithoutBudget, 1 + 4 * kEvalEveryWithoutBudget}));
}

}  // namespace
}  // namespace murmur::gossip
