// The one writer of summary JSON (cli/summary_json.h): where the object goes, and how the shared
// summary structs become JSON.

#include "cli/summary_json.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace murmur::node {
namespace {

std::string ReadAll(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(SummaryJsonTest, WritesTheRunDirectoryAndPrintsOnlyWhenAsked) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("murmur_summary_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const nlohmann::json summary = {{"mode", "gossip"}, {"ok", true}};
  testing::internal::CaptureStdout();
  EXPECT_FALSE(WriteSummary(summary, {"murmur test", false, dir}));
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "");
  EXPECT_EQ(nlohmann::json::parse(ReadAll(dir / "result.json")), summary);

  testing::internal::CaptureStdout();
  EXPECT_TRUE(WriteSummary({{"mode", "ring"}}, {"murmur test", true, {}}));
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "{\"mode\":\"ring\"}\n");
  // No run directory: the earlier result.json is left as it was.
  EXPECT_EQ(nlohmann::json::parse(ReadAll(dir / "result.json")), summary);
  std::filesystem::remove_all(dir);
}

TEST(SummaryJsonTest, MissingAndNonFiniteMeasurementsAreNull) {
  EXPECT_TRUE(Number(NAN).is_null());
  EXPECT_TRUE(Number(INFINITY).is_null());
  EXPECT_EQ(Number(0.25).get<double>(), 0.25);
  EXPECT_TRUE(Measured(std::nullopt).is_null());
  EXPECT_EQ(Measured(2.0).get<double>(), 2.0);
  EXPECT_TRUE(MeasuredOrNegative(-1).is_null());
  EXPECT_EQ(MeasuredOrNegative(0).get<double>(), 0.0);
}

TEST(SummaryJsonTest, SharedStructsUseTheirMembersNamesAsKeys) {
  CompressionReport report{"topk:ratio=0.01", 10, 0.01, 2400, 940584, 12.5};
  const nlohmann::json j = report;
  EXPECT_EQ(j["spec"], "topk:ratio=0.01");
  EXPECT_EQ(j["steps"], 10);
  EXPECT_EQ(j["dense_bytes_per_step"], 940584.0);
  EXPECT_EQ(j.size(), 6u);

  sim::SimNodeResult n;
  n.id = 3;
  n.bytes_sent = 1234;
  nlohmann::json e = n;
  EXPECT_EQ(e["id"], 3);
  EXPECT_EQ(e["bytes_sent"], 1234);
  EXPECT_TRUE(e["accuracy"].is_null());  // never evaluated
  EXPECT_TRUE(e["optimum_distance"].is_null());
  n.accuracy = 0.87;
  n.optimum_distance = 0.5;
  e = n;
  EXPECT_EQ(e["accuracy"], 0.87);
  EXPECT_EQ(e["optimum_distance"], 0.5);
}

}  // namespace
}  // namespace murmur::node
