// The report lines of `murmur node --report json` and what `murmur local` reads back: written and
// parsed by node_report.h, so a field renamed on one side fails here.

#include "node/driver/node_report.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "node/driver/memory_table.h"

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
  p.phase = gossip::GossipNode::Phase::kTraining;
  ChildReport r;
  Absorb(r, Line(GossipProgressJson(p, false)));
  ASSERT_TRUE(r.gossip.has_value());
  EXPECT_EQ(r.gossip->step, 120u);
  EXPECT_EQ(r.gossip->accuracy, -1);
  EXPECT_EQ(r.gossip->phase, gossip::GossipNode::Phase::kTraining);
  EXPECT_FALSE(r.new_accuracy);
  EXPECT_FALSE(r.has_final());
  p.accuracy = 0.81;
  p.accuracy_step = 120;
  Absorb(r, Line(GossipProgressJson(p, false)));
  EXPECT_TRUE(r.new_accuracy);
  EXPECT_DOUBLE_EQ(r.gossip->accuracy, 0.81);
  EXPECT_EQ(r.gossip->stragglers, std::vector<gossip::NodeId>{2});
  p.end_reason = "epochs";
  p.phase = gossip::GossipNode::Phase::kOver;
  Absorb(r, Line(GossipProgressJson(p, true)));
  ASSERT_TRUE(r.gossip_final.has_value());
  EXPECT_TRUE(r.has_final());
  EXPECT_EQ(r.gossip_final->end_reason, "epochs");
  EXPECT_EQ(r.gossip_final->phase, gossip::GossipNode::Phase::kOver);
}

// Every field the line carries comes back: the line written again from what was parsed is the
// line, for a progress with every field away from its default (seed 11, printed).
TEST(NodeReportTest, AParsedGossipLineWritesTheSameLine) {
  std::printf("seed 11\n");
  std::mt19937_64 rng(11);
  auto u = [&rng](uint64_t hi) { return std::uniform_int_distribution<uint64_t>(1, hi)(rng); };
  auto x = [&rng] { return std::uniform_real_distribution<double>(0.01, 0.99)(rng); };
  GossipProgress p;
  p.id = u(9), p.step = u(1000), p.local_steps = static_cast<int64_t>(u(900));
  p.samples = static_cast<int64_t>(u(90000)), p.local_epoch = x(), p.cluster_samples = 12345;
  p.budget_samples = 99999, p.loss = x(), p.have_loss = true, p.accuracy = x();
  p.accuracy_step = u(100), p.elapsed_s = x(), p.device = "cuda:1";
  p.device_memory_bytes = u(1 << 30), p.host_device_bytes = u(1 << 20), p.bytes_sent = u(1 << 30);
  p.bytes_received = u(1 << 30), p.rounds = u(50), p.outer_rounds = u(9);
  p.overlapped_steps = u(7), p.max_lag = u(40), p.consensus_distance = x();
  p.consensus_average = x(), p.consensus_estimate = x(), p.activity = "training";
  p.gossip_period = 80, p.density_factor = 2, p.gamma = x(), p.lr = x(), p.wait_s = x();
  p.catchups = u(3), p.model_requests = u(3), p.gamma_halvings = u(2);
  p.stragglers = {2, 5}, p.stragglers_detected = u(4), p.live_members = 4;
  p.verdicts = {{"applied", u(100)}, {"gap", u(5)}}, p.rejected_messages = u(6);
  p.skipped_steps = u(2), p.joined_by_snapshot = true, p.resumed_step = u(30);
  p.finished = true, p.end_reason = "target", p.phase = gossip::GossipNode::Phase::kLingering;
  p.finish = "averaged", p.finish_contributors = 4, p.finish_collector = 1, p.finish_moved = x();
  p.own_accuracy = x(), p.finish_verdicts = {{"averaged", 1}};
  p.phases.compute = std::chrono::microseconds(u(1 << 24));
  p.phases.mix = std::chrono::nanoseconds(u(1 << 30));
  p.phases.evaluate = std::chrono::milliseconds(u(900));
  p.phase_samples = 4096, p.phase_thread_cpu_s = x(), p.phase_process_cpu_s = x();
  p.memory.Add("model", u(1 << 30)), p.memory.Add("choco_copies", u(1 << 30));
  p.memory.Add("inbox", u(1 << 20)), p.memory_resident_bytes = u(1ULL << 33);
  p.peak_resident_bytes = u(1ULL << 33);
  p.scalars = {{"val/loss", x()}, {"lr", x()}};
  for (bool final : {false, true}) {
    const std::string line = GossipProgressJson(p, final);
    auto parsed = ParseGossipReport(Line(line));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(parsed->final, final);
    EXPECT_EQ(GossipProgressJson(parsed->progress, final), line);
  }
  // Without a loss or an accuracy yet (null on the wire).
  p.loss = std::numeric_limits<double>::quiet_NaN(), p.accuracy = -1, p.own_accuracy = -1;
  const std::string line = GossipProgressJson(p, true);
  auto parsed = ParseGossipReport(Line(line));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_FALSE(parsed->progress.have_loss);
  EXPECT_EQ(GossipProgressJson(parsed->progress, true), line);
}

TEST(NodeReportTest, AMalformedGossipLineIsRefusedWithTheKey) {
  GossipProgress p;
  nlohmann::json line = Line(GossipProgressJson(p, false));
  line.erase("rounds");
  auto missing = ParseGossipReport(line);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("'rounds'"), std::string::npos) << missing.status();
  line = Line(GossipProgressJson(p, false));
  line["step"] = "many";
  auto mistyped = ParseGossipReport(line);
  ASSERT_FALSE(mistyped.ok());
  EXPECT_NE(mistyped.status().message().find("'step'"), std::string::npos) << mistyped.status();
  line = Line(GossipProgressJson(p, false));
  line["phase"] = "dreaming";
  EXPECT_FALSE(ParseGossipReport(line).ok());
  line = Line(GossipProgressJson(p, true));
  line.erase("phases");
  EXPECT_FALSE(ParseGossipReport(line).ok());
  line = Line(GossipProgressJson(p, true));
  line.erase("memory");
  EXPECT_FALSE(ParseGossipReport(line).ok());
}

// A program's figures come from another process: the reader keeps what Peer::Log would keep.
TEST(NodeReportTest, AProgramsFiguresAreReadWithinTheirBounds) {
  GossipProgress p;
  nlohmann::json line = Line(GossipProgressJson(p, false));
  EXPECT_FALSE(line.contains("scalars")) << "no figures, no key";
  nlohmann::json many = nlohmann::json::object();
  for (size_t i = 0; i < 3 * GossipProgress::kMaxScalars; ++i) many["s" + std::to_string(i)] = i;
  many[std::string(GossipProgress::kMaxScalarName + 1, 'a')] = 1;
  many["text"] = "not a number";
  line["scalars"] = many;
  auto parsed = ParseGossipReport(line);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->progress.scalars.size(), GossipProgress::kMaxScalars);
  for (const auto& [name, value] : parsed->progress.scalars) {
    EXPECT_LE(name.size(), GossipProgress::kMaxScalarName);
  }
  EXPECT_EQ(parsed->progress.scalars.count("text"), 0u);
}

TEST(NodeReportTest, TheMemoryTableAddsTheBuffersByOwner) {
  GossipProgress a;
  a.memory.Add("model", 4'000'000), a.memory.Add("gradient", 4'000'000);
  a.memory.Add("choco_public", 4'000'000), a.memory.Add("choco_copies", 8'000'000);
  a.memory.Add("activations", 1'000'000);
  a.memory_resident_bytes = 30'000'000, a.peak_resident_bytes = 40'000'000;
  const std::vector<const GossipProgress*> finals{&a, nullptr};
  const nlohmann::json j = MemoryJson(finals);
  ASSERT_EQ(j.size(), 1u) << "a node without a report is left out";
  EXPECT_EQ(j[0]["node"], 1);
  EXPECT_EQ(j[0]["buffers_bytes"], 21'000'000u);
  EXPECT_EQ(j[0]["buffers"]["choco_copies"], 8'000'000u);
  EXPECT_DOUBLE_EQ(j[0]["peak_model_multiple"].get<double>(), 10.0);
  char* text = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&text, &size);
  PrintMemoryTable(finals, out);
  std::fclose(out);
  const std::string table(text, size);
  std::free(text);
  // model 4.0, grad+opt 4.0, choco 12.0, outer 0, finish 0, queues 0, other 1.0, buffers 21.0,
  // resident 30.0, peak 40.0, 10x the model.
  EXPECT_NE(table.find("    1      4.0      4.0     12.0      0.0      0.0      0.0      1.0     "
                       "21.0     30.0     40.0    10.0"),
            std::string::npos)
      << table;
}

TEST(NodeReportTest, CodedLinesRoundTrip) {
  CodedProgress p;
  p.mode = gossip::Mode::kCodedTree;
  p.rank = 0;
  p.role = "root";
  p.iteration = 7;
  p.iteration_ms = {10, 20, 30};
  p.loss = std::nan("");
  ChildReport r;
  Absorb(r, Line(CodedProgressJson(p)));
  ASSERT_TRUE(r.coded.has_value());
  EXPECT_FALSE(r.coded->final);
  EXPECT_TRUE(std::isnan(r.coded->progress.loss));
  EXPECT_TRUE(r.coded->progress.iteration_ms.empty());  // only the final line carries them all
  EXPECT_DOUBLE_EQ(r.coded->iteration_ms_mean, 20.0);
  EXPECT_FALSE(r.has_final());
  p.final = true;
  Absorb(r, Line(CodedProgressJson(p)));
  ASSERT_TRUE(r.coded_final.has_value());
  EXPECT_EQ(r.coded_final->progress.iteration_ms, (std::vector<double>{10.0, 20.0, 30.0}));
  EXPECT_EQ(r.coded_final->progress.mode, gossip::Mode::kCodedTree);
  // Written again from what was parsed, the final line is the line, a server's included.
  EXPECT_EQ(CodedProgressJson(r.coded_final->progress), CodedProgressJson(p));
  p.mode = gossip::Mode::kPs;
  p.stats.applied = 12, p.stats.staleness_sum = 17, p.stats.staleness_max = 4, p.stats.gated = 2;
  auto server = ParseCodedReport(Line(CodedProgressJson(p)));
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ(CodedProgressJson(server->progress), CodedProgressJson(p));
  nlohmann::json bad = Line(CodedProgressJson(p));
  bad["mode"] = "carrier-pigeon";
  EXPECT_FALSE(ParseCodedReport(bad).ok());
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
  EXPECT_FALSE(r.gossip.has_value());
  EXPECT_FALSE(r.coded.has_value());
}

}  // namespace
}  // namespace murmur::node
