// The gossip summary's account of how a run ended (local_summary.h): one set of numbers for the
// end reason and the share of the budget, each contradiction of the old summary as a case.

#include "cli/local_summary.h"

#include <gtest/gtest.h>

#include <string>

namespace murmur::node {
namespace {

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// "ended by epochs" next to "87 % of the budget" (a 4x straggler): both said together, with
// what "epochs" means and which node ended how.
TEST(EndAccountTest, EpochsBelowTheBudgetSaysBothAndWhoEndedHow) {
  const std::string s = EndAccount("epochs", {{"epochs", {1, 2, 4}}, {"peer", {3}}}, "", 104656,
                                   120000, 2.7, 4, 4, false);
  EXPECT_TRUE(Has(s,
                  "ended by epochs (the nodes' estimate of the cluster's samples reached the "
                  "budget) after 2.7 s"))
      << s;
  EXPECT_TRUE(Has(s, "count 104656 of 120000 samples (87%)")) << s;
  EXPECT_TRUE(Has(s, "nodes 1, 2, 4 by epochs, node 3 by peer")) << s;
}

// A crash and restart: what the killed process trained is in no report, and the account says so.
TEST(EndAccountTest, ACrashIsSaidToLeaveSamplesUncounted) {
  const std::string s =
      EndAccount("epochs", {{"epochs", {1, 2, 3, 4}}}, "", 163608, 180000, 4.4, 4, 4, true);
  EXPECT_TRUE(Has(s, "(91%; not what a crashed process trained before it was killed)")) << s;
  EXPECT_FALSE(Has(s, " by peer")) << s;  // one reason: no list
}

// "ended by ? ... (0x more)": a failure is named as the end, with the failing node.
TEST(EndAccountTest, AFailureIsTheEndWhenNoNodeFinished) {
  const std::string s = EndAccount("", {}, "node 1 exited with code 2", 0, 0, 0.3, 0, 2, false);
  EXPECT_EQ(s,
            "ended by a failure after 0.3 s: node 1 exited with code 2 (only 0 of 2 nodes "
            "finished cleanly)");
  EXPECT_FALSE(Has(s, "?"));
}

TEST(EndAccountTest, AFailureBesideFinishedNodesIsNamedWithThem) {
  const std::string s = EndAccount("epochs", {{"epochs", {1, 2}}}, "node 3 exited with code 1",
                                   90000, 180000, 3.0, 2, 3, false);
  EXPECT_TRUE(Has(s, "ended by epochs")) << s;
  EXPECT_TRUE(Has(s, "(only 2 of 3 nodes finished cleanly; node 3 exited with code 1)")) << s;
}

TEST(EndAccountTest, NoReportAndNoFailureSaysSo) {
  EXPECT_EQ(EndAccount("", {}, "", 0, 0, 1.5, 0, 2, false),
            "ended after 1.5 s with no node's final report (only 0 of 2 nodes finished cleanly)");
}

TEST(JoinIdsTest, CommaSeparated) {
  EXPECT_EQ(JoinIds({}), "");
  EXPECT_EQ(JoinIds({3}), "3");
  EXPECT_EQ(JoinIds({1, 2, 4}), "1, 2, 4");
}

}  // namespace
}  // namespace murmur::node
