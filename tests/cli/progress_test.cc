#include "cli/progress.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace murmur::node {
namespace {

TrainProgress Halfway() {
  TrainProgress p;
  p.epoch = 2;
  p.epochs = 3;
  p.step = 50;
  p.total_steps = 100;
  p.samples = 3200;
  p.recent_loss = 0.41234;
  p.elapsed_seconds = 2.0;
  return p;
}

TEST(ProgressTest, LineShowsEpochStepLossRateAndEta) {
  const std::string line = FormatProgress(Halfway(), 10);
  EXPECT_NE(line.find("epoch 2/3"), std::string::npos) << line;
  EXPECT_NE(line.find("[#####.....]"), std::string::npos) << line;
  EXPECT_NE(line.find("step 50/100"), std::string::npos) << line;
  EXPECT_NE(line.find("loss 0.4123"), std::string::npos) << line;
  EXPECT_NE(line.find("1600 samples/s"), std::string::npos) << line;
  EXPECT_NE(line.find("ETA 0:02"), std::string::npos) << line;
}

TEST(ProgressTest, TtyModeRedrawsAtMostTenTimesASecond) {
  char* buffer = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&buffer, &size);
  ManualClock clock;
  ProgressReporter reporter(ProgressMode::kTty, out, clock);
  TrainProgress p = Halfway();
  for (int i = 0; i < 100; ++i) {
    reporter.Update(p);
    clock.Advance(std::chrono::milliseconds(10));  // 1 s in all
  }
  reporter.Finish();
  std::fclose(out);
  const std::string text(buffer, size);
  free(buffer);
  size_t draws = 0;
  for (size_t pos = 0; (pos = text.find("\r\033[K", pos)) != std::string::npos; ++pos) ++draws;
  EXPECT_GE(draws, 9u);
  EXPECT_LE(draws, 11u);
  EXPECT_EQ(text.back(), '\n');
}

TEST(ProgressTest, AutoModeIsPlainWhenNotATerminal) {
  std::FILE* f = std::tmpfile();
  EXPECT_EQ(ResolveProgressMode("auto", f), ProgressMode::kPlain);
  EXPECT_EQ(ResolveProgressMode("none", f), ProgressMode::kNone);
  std::fclose(f);
}

TEST(SummaryTest, JsonIsOneParseableObjectWithTheHeadlineFigures) {
  TrainSummary s;
  s.epochs = 3;
  s.steps = 2814;
  s.samples = 180000;
  s.wall_seconds = 1.5;
  s.samples_per_second = 120000;
  s.test = {0.38, 0.8666, 10000};
  s.test_per_epoch = {s.test};
  const RunInfo info{"fashion-mnist", "784-256-128-10 softmax-ce", 235146, 60000, 10000};
  const std::string json = SummaryJson(info, s).dump();
  EXPECT_EQ(json.find('\n'), std::string::npos);
  auto j = nlohmann::json::parse(json);
  EXPECT_DOUBLE_EQ(j["test_accuracy"].get<double>(), 0.8666);
  EXPECT_EQ(j["params"].get<int64_t>(), 235146);
  EXPECT_EQ(j["per_epoch"].size(), 1u);
  // Regression has no accuracy: JSON null, not NaN (which is not JSON).
  s.test.accuracy = NAN;
  EXPECT_TRUE(nlohmann::json::parse(SummaryJson(info, s).dump())["test_accuracy"].is_null());
  EXPECT_NE(SummaryText(info, s).find("test accuracy  n/a"), std::string::npos);
}

// murmur local --progress plain: a log gets the title and header once, then only the rows that
// changed, stamped with the time (it used to get the whole table every 2 s).
TEST(ProgressTest, PlainLocalProgressPrintsOnlyChangedRows) {
  std::vector<std::string> printed;
  const std::string first =
      PlainChanges("title 1.0 s\nnode step\n   0  -  joining\n   1  -  starting\n", 1.0, printed);
  EXPECT_EQ(
      first,
      "title 1.0 s\n        node step\n   1.0 s    0  -  joining\n   1.0 s    1  -  starting\n");
  // The title's time changed, node 0's row did not, node 1's did.
  EXPECT_EQ(PlainChanges("title 2.0 s\nnode step\n   0  -  joining\n   1  5\n", 2.0, printed),
            "   2.0 s    1  5\n");
  EXPECT_EQ(PlainChanges("title 3.0 s\nnode step\n   0  -  joining\n   1  5\n", 3.0, printed), "");
  // A row that appears later (a restarted node's) is printed once.
  EXPECT_EQ(PlainChanges("title\nnode step\n   0  -  joining\n   1  5\n   2  7\n", 4.0, printed),
            "   4.0 s    2  7\n");
}

}  // namespace
}  // namespace murmur::node
