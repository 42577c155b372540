// SyncNode, a synchronous-mode node's decisions: rank assembly (the same ranks everywhere, a view
// that changes mid-assembly refused, too many or too few nodes), and whole runs of the
// synchronous modes on the shared fake network (tests/testing/node_cluster.h). Seeds are printed
// on failure.

#include "gossip/sync_node.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "coding/update_codec.h"
#include "tests/testing/node_cluster.h"

namespace murmur::gossip {
namespace {

using std::chrono::milliseconds;
using Cluster = murmur::testing::NodeCluster<SyncNode>;

constexpr uint64_t kSeeds = 20;
constexpr size_t kDim = 8;

MemberView ViewOf(std::vector<NodeId> ids) {
  MemberView v;
  for (NodeId id : ids) v.members.push_back({.id = id, .address = "sim://" + std::to_string(id)});
  return v;
}

SyncNodeOptions Options(NodeId self) {
  SyncNodeOptions o;
  o.self = self;
  o.batch = 60;
  o.iterations = 5;
  o.eval_every = 2;
  o.settle = milliseconds(200);
  o.join_timeout = std::chrono::seconds(10);
  o.linger = milliseconds(100);
  return o;
}

std::unique_ptr<SyncNode> MakeNode(Mode mode, NodeId self, TimePoint now, SyncNodeOptions o = {}) {
  if (o.self == 0) o = Options(self);
  auto node = SyncNode::Create(*MakeSyncPlan(mode, 3, 1, 1, 1), o, std::vector<float>(kDim, 0.0f), now);
  EXPECT_TRUE(node.ok()) << node.status().ToString();
  return *std::move(node);
}

std::optional<Status> RunOverOf(std::vector<NodeAction> actions) {
  for (auto& a : actions) {
    if (auto* over = std::get_if<RunOver>(&a)) return over->status;
  }
  return std::nullopt;
}

TEST(SyncNodeTest, AssemblesOnceTheFullViewHeldForTheSettleTime) {
  TimePoint t{};
  auto node = MakeNode(Mode::kGc, 2, t);  // gc over 3 workers: 4 processes
  node->Step(ViewOf({1, 2, 3}), t);
  EXPECT_FALSE(node->assembled());
  EXPECT_EQ(node->detail(), "assembling the gc: 3 of 4 nodes alive");
  node->Step(ViewOf({1, 2, 3, 4}), t += milliseconds(10));
  node->Step(ViewOf({1, 2, 3, 4}), t += milliseconds(150));
  EXPECT_FALSE(node->assembled());  // not settled yet
  node->Step(ViewOf({1, 2, 3, 4}), t += milliseconds(60));
  ASSERT_TRUE(node->assembled());
  EXPECT_EQ(node->ranks(), (std::vector<NodeId>{1, 2, 3, 4}));
  EXPECT_EQ(node->rank(), 1);
  EXPECT_EQ(node->role(), "leaf");
  EXPECT_EQ(node->state().refused_views, 0u);
}

TEST(SyncNodeTest, ViewThatChangesMidAssemblyIsRefused) {
  TimePoint t{};
  auto node = MakeNode(Mode::kGc, 1, t);
  node->Step(ViewOf({1, 2, 3, 4}), t);
  node->Step(ViewOf({1, 2, 3, 5}), t += milliseconds(100));  // 4 replaced by 5 before it settled
  EXPECT_FALSE(node->assembled());
  EXPECT_EQ(node->state().refused_views, 1u);
  node->Step(ViewOf({1, 2, 3}), t += milliseconds(150));  // and one gone
  EXPECT_EQ(node->state().refused_views, 2u);
  node->Step(ViewOf({1, 2, 3, 5}), t += milliseconds(10));
  node->Step(ViewOf({1, 2, 3, 5}), t += milliseconds(199));
  EXPECT_FALSE(node->assembled());
  node->Step(ViewOf({1, 2, 3, 5}), t += milliseconds(1));
  ASSERT_TRUE(node->assembled());
  EXPECT_EQ(node->ranks(), (std::vector<NodeId>{1, 2, 3, 5}));
  EXPECT_EQ(node->rank(), 0);
  EXPECT_EQ(node->role(), "root");
}

TEST(SyncNodeTest, TooManyNodesFailWithTheReason) {
  TimePoint t{};
  auto node = MakeNode(Mode::kGc, 1, t);
  node->Step(ViewOf({1, 2, 3, 4, 5}), t);
  auto over = RunOverOf(node->TakeOutput());
  ASSERT_TRUE(over.has_value());
  EXPECT_EQ(over->code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(over->message().find("needs exactly 4 nodes and the cluster has 5 alive"), std::string::npos)
      << over->ToString();
  EXPECT_EQ(node->phase(), SyncNode::Phase::kOver);
}

TEST(SyncNodeTest, TooFewNodesTimeOutSayingHowManyJoined) {
  TimePoint t{};
  SyncNodeOptions o = Options(1);
  o.join_timeout = std::chrono::seconds(1);
  auto node = MakeNode(Mode::kRing, 1, t, o);
  node->Step(ViewOf({1, 2}), t);
  node->Tick(t += milliseconds(900));
  EXPECT_FALSE(RunOverOf(node->TakeOutput()).has_value());
  node->Tick(t += milliseconds(200));
  auto over = RunOverOf(node->TakeOutput());
  ASSERT_TRUE(over.has_value());
  EXPECT_EQ(over->code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(over->message().find("needs 3 nodes; only 2 joined"), std::string::npos) << over->ToString();
}

// The others assembled first and ran the whole (short) run while this node was settling; they
// leave at once when done, so waiting for a full view would only end in the join timeout.
TEST(SyncNodeTest, ARunThatEndedWhileThisNodeSettledIsOverForItToo) {
  TimePoint t{};
  auto node = MakeNode(Mode::kGc, 2, t);
  node->Step(ViewOf({1, 2, 3, 4}), t);
  MemberView done = ViewOf({1, 2, 3, 4});
  done.members[0].finished = true;  // the root
  node->Step(done, t += milliseconds(100));
  EXPECT_FALSE(node->assembled());
  EXPECT_EQ(node->phase(), SyncNode::Phase::kOver);
  auto over = RunOverOf(node->TakeOutput());
  ASSERT_TRUE(over.has_value());
  EXPECT_TRUE(over->ok()) << over->ToString();
  EXPECT_EQ(node->state().end_reason, "peer");
  EXPECT_EQ(node->state().rejected_messages, 0u);
}

// A member that stops answering (SIGSTOP, a lost host) is declared dead by the membership; the
// run then fails with the reason where it cannot go on without it, and only there.
std::unique_ptr<SyncNode> Assembled(Mode mode, NodeId self, std::vector<NodeId> ids, TimePoint& t) {
  auto node = MakeNode(mode, self, t);
  node->Step(ViewOf(ids), t);
  node->Step(ViewOf(ids), t += milliseconds(250));
  EXPECT_TRUE(node->assembled());
  node->TakeOutput();
  return node;
}

MemberView WithDead(std::vector<NodeId> ids, std::vector<NodeId> dead, bool finished = false) {
  MemberView v = ViewOf(ids);
  for (MemberEntry& m : v.members) {
    if (std::find(dead.begin(), dead.end(), m.id) == dead.end()) continue;
    m.state = MemberState::kDead;
    m.finished = finished;
  }
  return v;
}

TEST(SyncNodeTest, ARingRankDeclaredDeadEndsTheRingWithTheReason) {
  TimePoint t{};
  auto node = Assembled(Mode::kRing, 1, {1, 2, 3}, t);
  node->Step(WithDead({1, 2, 3}, {3}), t += milliseconds(20));
  auto over = RunOverOf(node->TakeOutput());
  ASSERT_TRUE(over.has_value());
  EXPECT_EQ(over->code(), StatusCode::kUnavailable);
  EXPECT_NE(over->message().find("ring rank 2 (node 3) is gone (declared dead"), std::string::npos)
      << over->ToString();
}

TEST(SyncNodeTest, AMemberThatFinishedIsNotGone) {
  TimePoint t{};
  auto node = Assembled(Mode::kRing, 1, {1, 2, 3}, t);
  node->Step(WithDead({1, 2, 3}, {3}, /*finished=*/true), t += milliseconds(20));
  auto over = RunOverOf(node->TakeOutput());
  EXPECT_TRUE(!over.has_value() || over->ok()) << over->ToString();
}

TEST(SyncNodeTest, AParentGoesOnWhileItsCodeDecodesWithoutTheGoneChildren) {
  TimePoint t{};
  auto root = Assembled(Mode::kGc, 1, {1, 2, 3, 4}, t);  // gc: n = 3, s = 1
  root->Step(WithDead({1, 2, 3, 4}, {3}), t += milliseconds(20));
  EXPECT_FALSE(RunOverOf(root->TakeOutput()).has_value()) << "s = 1 tolerates one gone child";
  EXPECT_EQ(root->phase(), SyncNode::Phase::kRunning);
  root->Step(WithDead({1, 2, 3, 4}, {3, 4}), t += milliseconds(20));
  auto over = RunOverOf(root->TakeOutput());
  ASSERT_TRUE(over.has_value());
  EXPECT_EQ(over->code(), StatusCode::kUnavailable);
  EXPECT_NE(over->message().find("2 of this parent's 3 children are gone (nodes 3, 4)"),
            std::string::npos)
      << over->ToString();
}

TEST(SyncNodeTest, TheRootGoneEndsEveryRank) {
  TimePoint t{};
  auto leaf = Assembled(Mode::kGc, 2, {1, 2, 3, 4}, t);
  leaf->Step(WithDead({1, 2, 3, 4}, {4}), t += milliseconds(20));
  EXPECT_FALSE(RunOverOf(leaf->TakeOutput()).has_value()) << "a leaf needs no sibling";
  leaf->Step(WithDead({1, 2, 3, 4}, {1, 4}), t += milliseconds(20));
  auto over = RunOverOf(leaf->TakeOutput());
  ASSERT_TRUE(over.has_value());
  EXPECT_EQ(over->code(), StatusCode::kUnavailable);
  EXPECT_NE(over->message().find("the root (node 1) is gone"), std::string::npos)
      << over->ToString();
}

TEST(SyncNodeTest, MessagesBeforeAssemblyWaitForTheRanks) {
  TimePoint t{};
  auto node = MakeNode(Mode::kGc, 2, t);
  // The root's model for iteration 0 arrives before this node assembled.
  auto frame = std::make_shared<std::vector<std::byte>>();
  std::vector<float> model(kDim, 0.25f);
  coding::EncodeDense(model, *frame);
  Incoming in{1, 1, 0, CodedMessage{CodedMessage::Kind::kModel, 0, 0, kDim}, *frame, 1};
  node->Step(in, t);
  node->Step(ViewOf({1, 2, 3, 4}), t);
  node->Step(ViewOf({1, 2, 3, 4}), t += milliseconds(250));
  ASSERT_TRUE(node->assembled());
  bool asked = false;
  for (auto& a : node->TakeOutput()) {
    if (auto* c = std::get_if<ComputeGradient>(&a)) {
      asked = true;
      EXPECT_EQ(c->iteration, 0u);
      EXPECT_EQ(std::vector<float>(c->model.begin(), c->model.end()), model);
    }
  }
  EXPECT_TRUE(asked);
}

TEST(SyncNodeTest, MessagesBeforeAssemblyKeepEachSendersNewest) {
  // A node stopped while settling (SIGSTOP) finds its parent's models for many iterations
  // queued: the oldest are superseded, dropped and counted, never rejected.
  TimePoint t{};
  auto node = MakeNode(Mode::kGc, 2, t);  // 4 processes
  const size_t share = SyncNode::kMaxEarlyMessages / 4;
  std::vector<float> model(kDim, 0.0f);
  for (uint64_t i = 0; i < share + 10; ++i) {
    auto frame = std::make_shared<std::vector<std::byte>>();
    std::fill(model.begin(), model.end(), static_cast<float>(i));
    coding::EncodeDense(model, *frame);
    node->Step(Incoming{1, 1, 0, CodedMessage{CodedMessage::Kind::kModel, i, 0, kDim}, *frame, 1},
               t);
  }
  EXPECT_EQ(node->state().rejected_messages, 0u);
  EXPECT_EQ(node->state().early_dropped, 10u);
  node->Step(ViewOf({1, 2, 3, 4}), t);
  node->Step(ViewOf({1, 2, 3, 4}), t += milliseconds(250));
  ASSERT_TRUE(node->assembled());
  // The first model handled is the oldest one kept.
  std::vector<uint64_t> asked;
  for (auto& a : node->TakeOutput()) {
    if (auto* c = std::get_if<ComputeGradient>(&a)) {
      asked.push_back(c->iteration);
      EXPECT_EQ(c->model[0], static_cast<float>(c->iteration));
    }
  }
  ASSERT_FALSE(asked.empty());
  EXPECT_EQ(asked.front(), 10u) << "a superseded model was handled, or a kept one lost";
}

TEST(SyncNodeTest, MessagesBeforeAssemblyFromMoreSendersThanThePlanAreRejected) {
  TimePoint t{};
  auto node = MakeNode(Mode::kGc, 2, t);  // 4 processes: at most 4 legitimate senders
  auto frame = std::make_shared<std::vector<std::byte>>();
  coding::EncodeDense(std::vector<float>(kDim, 0.25f), *frame);
  const size_t share = SyncNode::kMaxEarlyMessages / 4;
  for (NodeId from : {1, 2, 3, 4}) {
    for (size_t i = 0; i < share; ++i) {
      node->Step(
          Incoming{from, 1, 0, CodedMessage{CodedMessage::Kind::kModel, i, 0, kDim}, *frame, 1}, t);
    }
  }
  EXPECT_EQ(node->state().rejected_messages, 0u);
  EXPECT_EQ(node->state().early_dropped, 0u);
  node->Step(Incoming{9, 1, 0, CodedMessage{CodedMessage::Kind::kModel, 0, 0, kDim}, *frame, 1},
             t);  // a fifth sender once the bound is reached: per-sender state stays bounded
  EXPECT_EQ(node->state().rejected_messages, 1u);
  node->Step(Incoming{1, 1, 0, CodedMessage{CodedMessage::Kind::kModel, share, 0, kDim}, *frame, 1},
             t);  // a known sender's newer message replaces its oldest
  EXPECT_EQ(node->state().rejected_messages, 1u);
  EXPECT_EQ(node->state().early_dropped, 1u);
}

// Every rank's part: the sum of its weights in every coordinate (so the decoded sum is B).
std::vector<float> WeightSum(const SyncNode& node) {
  double sum = 0;
  for (const auto& p : node.own()) sum += p.weight;
  return std::vector<float>(kDim, static_cast<float>(sum));
}

Cluster MakeCluster(Mode mode, int n, int layers, int s, uint64_t seed) {
  const SyncPlan plan = *MakeSyncPlan(mode, n, layers, s, 1);
  MembershipOptions m;
  m.probe_interval = milliseconds(100);
  m.probe_timeout = milliseconds(40);
  m.join_retry = milliseconds(200);
  Cluster c(static_cast<size_t>(plan.processes), m, seed, [plan](size_t i, Cluster::Node&, TimePoint now) {
              SyncNodeOptions o = Options(Cluster::Id(i));
              o.iterations = 8;
              auto node = SyncNode::Create(plan, o, std::vector<float>(kDim, 0.0f), now);
              EXPECT_TRUE(node.ok()) << node.status().ToString();
              return *std::move(node);
            });
  return c;
}

TEST(SyncNodeTest, EveryNodeAssemblesTheSameRanks) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const Mode mode = std::array{Mode::kCodedTree, Mode::kTree, Mode::kGc, Mode::kRing}[seed % 4];
    Cluster cluster = MakeCluster(mode, 2, 2, 1, seed);  // trees: 7 processes; ring: 6
    cluster.gradient = [&cluster](size_t i, const ComputeGradient&) { return WeightSum(cluster.machine(i)); };
    std::mt19937_64 rng(seed);
    cluster.net().faults().drop = 0.02;
    // Nodes start in a random order over 300 ms.
    std::vector<size_t> order(cluster.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i : order) {
      cluster.Start(i, 1, kDim);
      cluster.RunFor(milliseconds(rng() % 60));
    }
    ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(5), [&] {
      for (size_t i = 0; i < cluster.size(); ++i) {
        if (!cluster.machine(i).assembled()) return false;
      }
      return true;
    }));
    std::vector<NodeId> expected;
    for (size_t i = 0; i < cluster.size(); ++i) expected.push_back(Cluster::Id(i));
    for (size_t i = 0; i < cluster.size(); ++i) {
      EXPECT_EQ(cluster.machine(i).ranks(), expected) << "node " << i;
      EXPECT_EQ(cluster.machine(i).rank(), static_cast<int64_t>(i));
    }
  }
}

TEST(SyncNodeTest, RunsEndOnEveryNodeWithAPausedLeaf) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Cluster cluster = MakeCluster(Mode::kCodedTree, 3, 1, 1, seed);  // root + 3 leaves, s = 1
    cluster.gradient = [&cluster](size_t i, const ComputeGradient&) { return WeightSum(cluster.machine(i)); };
    for (size_t i = 0; i < cluster.size(); ++i) cluster.Start(i, 1, kDim);
    ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(5), [&] { return cluster.machine(0).assembled(); }));
    const size_t paused = 1 + seed % 3;
    cluster.Hold(paused, true);  // SIGSTOP: the code tolerates one missing leaf per parent
    ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(10), [&] { return cluster.node(0).over.has_value(); }));
    EXPECT_TRUE(cluster.node(0).over->ok());
    EXPECT_EQ(cluster.machine(0).state().iteration, 8u);
    EXPECT_EQ(cluster.node(0).finished, "iterations");
    // Every step was plain SGD on the decoded mean gradient (1 per coordinate): x = -lr * 8.
    for (float v : cluster.machine(0).model()) EXPECT_NEAR(v, -0.1 * 8, 1e-5);
    ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(3), [&] {
      for (size_t i = 1; i < cluster.size(); ++i) {
        if (i != paused && !cluster.node(i).over) return false;
      }
      return true;
    }));
    for (size_t i = 1; i < cluster.size(); ++i) {
      if (i != paused) {
        EXPECT_EQ(cluster.node(i).finished, "peer") << "node " << i;
      }
    }
  }
}

// --eval-every evaluates on eval_samples rows, as the gossip nodes do (a whole test set per
// periodic evaluation held the ring's root, and every rank behind it); the final one on all.
TEST(SyncNodeTest, PeriodicEvaluationsTakeTheSubsetAndTheFinalOneTheWholeTestSet) {
  for (const Mode mode : {Mode::kRing, Mode::kTree, Mode::kCodedTree}) {
    SCOPED_TRACE("mode " + std::to_string(static_cast<int>(mode)));
    Cluster cluster = MakeCluster(mode, 3, 1, 1, 1);  // eval_every 2, 8 iterations
    cluster.gradient = [&cluster](size_t i, const ComputeGradient&) {
      return WeightSum(cluster.machine(i));
    };
    std::vector<std::pair<uint64_t, bool>> asked;  // (iteration, full) on rank 0
    cluster.on_output = [&](size_t i, NodeAction& action) {
      if (auto* e = std::get_if<Evaluate>(&action); e != nullptr && i == 0) {
        asked.emplace_back(cluster.machine(0).state().iteration, e->full);
      }
    };
    for (size_t i = 0; i < cluster.size(); ++i) cluster.Start(i, 1, kDim);
    ASSERT_TRUE(
        cluster.RunFor(std::chrono::seconds(10), [&] { return cluster.node(0).over.has_value(); }));
    ASSERT_TRUE(cluster.node(0).over->ok()) << cluster.node(0).over->ToString();
    const std::vector<std::pair<uint64_t, bool>> expected = {
        {2, false}, {4, false}, {6, false}, {8, false}, {8, true}};
    EXPECT_EQ(asked, expected);
  }
}

}  // namespace
}  // namespace murmur::gossip
