// The report lines of `murmur node --report json` and what `murmur local` reads back: written and
// parsed by node_report.h, so a field renamed on one side fails here.

#include "node/driver/node_report.h"

#include <gtest/gtest.h>

namespace murmur::node {
namespace {

nlohmann::json Line(const std::string& text) { return nlohmann::json::parse(text); }

TEST(NodeReportTest, GossipLinesRoundTrip) {
  GossipProgress p;
  p.id = 3;
  p.step = 120;
  p.cluster_samples = 5000;
  p.budget_samples = 9000;
  p.accuracy = -1;
  p.stragglers = {2};
  ChildReport r;
  Absorb(r, Line(GossipProgressJson(p, false)));
  EXPECT_EQ(r.progress["step"], 120);
  EXPECT_TRUE(r.progress["accuracy"].is_null());
  EXPECT_FALSE(r.new_accuracy);
  EXPECT_FALSE(r.final_report.is_object());
  p.accuracy = 0.81;
  p.accuracy_step = 120;
  Absorb(r, Line(GossipProgressJson(p, false)));
  EXPECT_TRUE(r.new_accuracy);
  EXPECT_DOUBLE_EQ(r.progress["accuracy"].get<double>(), 0.81);
  EXPECT_EQ(r.progress["stragglers"], nlohmann::json::array({2}));
  p.end_reason = "epochs";
  Absorb(r, Line(GossipProgressJson(p, true)));
  ASSERT_TRUE(r.final_report.is_object());
  EXPECT_EQ(r.final_report["end"], "epochs");
}

TEST(NodeReportTest, CodedLinesRoundTrip) {
  CodedProgress p;
  p.mode = "coded-tree";
  p.rank = 0;
  p.role = "root";
  p.iteration = 7;
  p.iteration_ms = {10, 20, 30};
  p.loss = std::nan("");
  ChildReport r;
  Absorb(r, Line(CodedProgressJson(p)));
  EXPECT_EQ(r.progress["kind"], "coded");
  EXPECT_TRUE(r.progress["loss"].is_null());
  EXPECT_FALSE(r.progress.contains("iteration_ms"));  // only the final line carries them all
  p.final = true;
  Absorb(r, Line(CodedProgressJson(p)));
  ASSERT_TRUE(r.final_report.is_object());
  EXPECT_EQ(r.final_report["iteration_ms"], nlohmann::json::array({10.0, 20.0, 30.0}));
  EXPECT_DOUBLE_EQ(r.final_report["iteration_ms_mean"].get<double>(), 20.0);
}

TEST(NodeReportTest, MembershipLinesAndMalformedOnes) {
  PeerSnapshot s;
  s.id = 1;
  const gossip::MemberState states[] = {gossip::MemberState::kAlive, gossip::MemberState::kSuspect,
                                        gossip::MemberState::kDead};
  for (uint64_t id = 1; id <= 3; ++id) {
    gossip::MemberEntry m;
    m.id = id;
    m.state = states[id - 1];
    m.heartbeat = id == 1 ? 9 : 0;
    s.members.push_back(m);
  }
  ChildReport r;
  Absorb(r, Line(SnapshotJson(s, 1.5)));
  EXPECT_EQ(r.sees, (std::map<uint64_t, char>{{1, 'A'}, {2, 'S'}, {3, 'D'}}));
  EXPECT_EQ(r.heartbeat, 9u);
  EXPECT_EQ(r.alive, 1u);
  Absorb(r, Line(R"({"members": "not a list"})"));  // ignored: the table keeps the last view
  EXPECT_EQ(r.sees.size(), 3u);
  Absorb(r, Line(R"({"kind": "train"})"));  // a progress line without its fields: ignored
  EXPECT_FALSE(r.progress.is_object());
}

}  // namespace
}  // namespace murmur::node
