// GossipNode, the gossip node's decisions, on the shared fake network and a manual clock
// (tests/testing/node_cluster.h): joining by snapshot, retrying a lost snapshot, catching up,
// the cluster budget, and never waiting for a crashed member past W. Every property is checked
// over 20 seeds; a failure names its seed.

#include "gossip/gossip_node.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "coding/update_codec.h"
#include "coding/vector_ops.h"
#include "tests/testing/gossip_node_cluster.h"

namespace murmur::gossip {
namespace {

using std::chrono::milliseconds;
using Cluster = murmur::testing::NodeCluster<GossipNode>;
using murmur::testing::FastMembership;

constexpr uint64_t kSeeds = 20;

GossipNodeOptions BaseOptions() { return murmur::testing::GossipTestOptions(); }

Cluster MakeCluster(size_t n, uint64_t seed, const GossipNodeOptions& base) {
  return murmur::testing::MakeGossipCluster(n, seed, base);
}

// What a joining node asked for and what it was sent.
struct JoinTrace {
  NodeId asked = 0;
  int requests = 0;
  TimePoint first_request{};
  std::vector<float> served;
  uint64_t served_round = 0;
};

void TraceJoin(Cluster& cluster, size_t joiner, JoinTrace& trace) {
  cluster.on_output = [&cluster, joiner, &trace](size_t i, const NodeAction& action) {
    const auto* send = std::get_if<SendTo>(&action);
    if (send == nullptr) return;
    if (i == joiner) {
      if (const auto* r = std::get_if<SnapshotRequest>(&send->payload); r != nullptr && r->model) {
        if (trace.requests++ == 0) trace.first_request = cluster.now();
        trace.asked = send->to;
      }
    } else if (send->to == Cluster::Id(joiner)) {
      if (const auto* r = std::get_if<SnapshotReply>(&send->payload);
          r != nullptr && r->model && send->frame) {  // (a refusal has no frame)
        coding::Update u;
        ASSERT_TRUE(coding::DecodeUpdate(*send->frame, r->dimension, u).ok());
        trace.served = u.values;
        trace.served_round = r->round;
      }
    }
  };
}

// Nodes 0-2 at 1, 2 and 3 ms a step (node 0 the most advanced), for 1.5 s.
void StartThreeAtSpeeds(Cluster& cluster) {
  for (size_t i = 0; i < 3; ++i) {
    cluster.node(i).step_time = milliseconds(1 + i);
    cluster.Start(i);
  }
  cluster.RunFor(milliseconds(1500));
}

TEST(GossipNodeTest, JoiningNodeAdoptsTheMostAdvancedPeersModelAndClock) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    GossipNodeOptions base = BaseOptions();
    base.soft_sync.max_lead = -1;  // unbounded: the clocks spread with the speeds
    Cluster cluster = MakeCluster(4, seed, base);
    StartThreeAtSpeeds(cluster);
    JoinTrace trace;
    TraceJoin(cluster, 3, trace);
    cluster.Start(3);
    ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(5), [&] { return cluster.machine(3).joined(); }));
    const GossipNodeState& s = cluster.machine(3).state();
    EXPECT_TRUE(s.joined_by_snapshot);
    EXPECT_EQ(trace.asked, Cluster::Id(0));
    EXPECT_EQ(trace.requests, 1);
    EXPECT_GT(trace.served_round, static_cast<uint64_t>(base.join_after_steps));
    EXPECT_EQ(s.step, trace.served_round);
    EXPECT_EQ(cluster.node(3).x, trace.served);  // bit for bit, before its first step lands
    EXPECT_GE(cluster.node(3).resets, 1u);
    // Whoever was asked was ahead of every other member when the joiner asked.
    EXPECT_GE(trace.served_round, cluster.machine(1).state().step);
  }
}

// A member over its snapshot rate says so (a frameless SnapshotReply of dimension 0) and the
// joiner asks the next most advanced member at once, instead of waiting out snapshot_timeout
// (found by the simulator: a joiner idled 5 s after a burst of catch-ups spent the rate).
TEST(GossipNodeTest, ARefusedSnapshotIsAskedOfTheNextMemberAtOnce) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    GossipNodeOptions base = BaseOptions();
    base.soft_sync.max_lead = -1;
    base.model_snapshot_burst = 1;
    base.model_snapshots_per_s = 0.01;
    Cluster cluster = MakeCluster(4, seed, base);
    StartThreeAtSpeeds(cluster);
    // Node 0 spends its one snapshot on node 1.
    Envelope e;
    e.sender_id = Cluster::Id(1);
    e.incarnation = cluster.node(1).membership->incarnation();
    e.step_clock = cluster.machine(1).state().step;
    e.payload = SnapshotRequest{0, true};
    cluster.Inject(0, e);
    JoinTrace trace;
    TraceJoin(cluster, 3, trace);
    cluster.Start(3);
    ASSERT_TRUE(
        cluster.RunFor(std::chrono::seconds(5), [&] { return cluster.machine(3).joined(); }));
    EXPECT_TRUE(cluster.machine(3).state().joined_by_snapshot);
    EXPECT_EQ(trace.requests, 2);  // node 0 refused, the next one served
    EXPECT_NE(trace.asked, Cluster::Id(0));
    EXPECT_LT(cluster.now() - trace.first_request, base.snapshot_timeout);
  }
}

// What a person sees while a node starts: how many members it waits for, whom it
// asked for a snapshot, then training.
TEST(GossipNodeTest, ActivitySaysWhatAStartingNodeWaitsFor) {
  GossipNodeOptions base = BaseOptions();
  base.expect_members = 3;
  base.join_wait = std::chrono::seconds(30);
  base.soft_sync.max_lead = -1;
  Cluster cluster = MakeCluster(4, 5, base);  // seed 5
  cluster.Start(0);
  cluster.RunFor(milliseconds(300));
  EXPECT_EQ(cluster.machine(0).Activity(), "joining: 1 of 3 members");
  cluster.Start(1);
  cluster.Start(2);
  ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(5), [&] {
    return cluster.machine(0).Activity() == "training" && cluster.machine(2).Activity() == "training";
  }));
  cluster.RunFor(milliseconds(1500));  // far past join_after_steps: a late joiner asks for a model
  bool asked = false;
  cluster.on_output = [&](size_t i, const NodeAction& action) {
    const auto* send = std::get_if<SendTo>(&action);
    if (i != 3 || send == nullptr || asked) return;
    if (const auto* r = std::get_if<SnapshotRequest>(&send->payload); r != nullptr && r->model) {
      asked = true;
      EXPECT_EQ(cluster.machine(3).Activity(), "waiting for a model snapshot from node " +
                                                   std::to_string(send->to));
    }
  };
  cluster.Start(3);
  ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(5), [&] { return cluster.machine(3).joined(); }));
  EXPECT_TRUE(asked);
  EXPECT_EQ(cluster.machine(3).Activity(), "training");
}

// a node restarted from its own checkpoint trains on at its saved step with its saved
// public copy, asking nobody for a model; when the cluster has gone more than resume_max_lag
// steps beyond the checkpoint it joins with a peer's model instead.
TEST(GossipNodeTest, ResumedNodeTrainsOnFromItsCheckpointUnlessTheClusterIsTooFarAhead) {
  for (uint64_t lag : {uint64_t{100000}, uint64_t{5}}) {
    SCOPED_TRACE("resume_max_lag " + std::to_string(lag) + ", seed 3");
    GossipNodeOptions base = BaseOptions();
    base.resume_max_lag = lag;
    std::optional<ResumePoint> resume;
    std::vector<float> saved_model;
    Cluster cluster(4, FastMembership(), 3, [&](size_t i, Cluster::Node& node, TimePoint now) {
      GossipNodeOptions o = base;
      o.self = Cluster::Id(i);
      o.incarnation = node.membership->incarnation();
      if (i == 3 && resume.has_value()) node.x = saved_model;
      auto machine = GossipNode::Create(o, node.x, std::vector<float>(node.x.size()), true, now);
      EXPECT_TRUE(machine.ok());
      if (i == 3 && resume.has_value()) {
        EXPECT_TRUE((*machine)->Resume(*resume).ok());
      }
      return *std::move(machine);
    });
    for (size_t i = 0; i < 4; ++i) cluster.Start(i);
    cluster.RunFor(milliseconds(1500));
    const GossipNodeState before = cluster.machine(3).state();
    ASSERT_GT(before.step, 20u);
    const auto copy = cluster.machine(3).PublicCopyOnHost();
    resume = ResumePoint{before.step, before.local_steps, before.samples, {copy.begin(), copy.end()}};
    saved_model = cluster.node(3).x;
    cluster.Crash(3);
    cluster.RunFor(milliseconds(300));
    JoinTrace trace;
    TraceJoin(cluster, 3, trace);
    cluster.Start(3, /*incarnation=*/2);
    ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(5), [&] { return cluster.machine(3).joined(); }));
    const GossipNodeState& s = cluster.machine(3).state();
    if (lag > 1000) {
      EXPECT_EQ(trace.requests, 0);
      EXPECT_FALSE(s.joined_by_snapshot);
      EXPECT_EQ(s.resumed_step, before.step);
      EXPECT_EQ(s.step, before.step);
      EXPECT_EQ(s.samples, before.samples);
      EXPECT_EQ(s.local_steps, before.local_steps);
      const auto now_copy = cluster.machine(3).PublicCopyOnHost();
      EXPECT_TRUE(std::equal(now_copy.begin(), now_copy.end(), resume->public_copy.begin()));
    } else {
      EXPECT_EQ(trace.requests, 1);
      EXPECT_TRUE(s.joined_by_snapshot);
      EXPECT_EQ(s.resumed_step, 0u);
      EXPECT_EQ(s.step, trace.served_round);
    }
    // Either way it trains on with the others.
    const int64_t local = s.local_steps;
    cluster.RunFor(milliseconds(300));
    EXPECT_GT(cluster.machine(3).state().local_steps, local);
  }
}

TEST(GossipNodeTest, NodesStartingTogetherDoNotAskForSnapshots) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Cluster cluster = MakeCluster(4, seed, BaseOptions());
    JoinTrace trace;
    TraceJoin(cluster, 3, trace);
    for (size_t i = 0; i < 4; ++i) cluster.Start(i);
    cluster.RunFor(milliseconds(800));
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_TRUE(cluster.machine(i).joined()) << "node " << i;
      EXPECT_FALSE(cluster.machine(i).state().joined_by_snapshot) << "node " << i;
      EXPECT_GT(cluster.machine(i).state().step, 0u) << "node " << i;
    }
    EXPECT_EQ(trace.requests, 0);
  }
}

TEST(GossipNodeTest, LostSnapshotReplyIsAskedForAgain) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    GossipNodeOptions base = BaseOptions();
    base.soft_sync.max_lead = -1;
    Cluster cluster = MakeCluster(4, seed, base);
    for (size_t i = 0; i < 3; ++i) cluster.Start(i);
    cluster.RunFor(milliseconds(1000));
    int lost = 0;
    cluster.net().drop_if = [&lost](size_t, size_t to, const murmur::testing::Packet& p) {
      const auto* r = std::get_if<SnapshotReply>(&p.envelope.payload);
      return to == 3 && r != nullptr && r->model && lost++ == 0;  // the first reply is lost
    };
    JoinTrace trace;
    TraceJoin(cluster, 3, trace);
    cluster.Start(3);
    ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(5), [&] { return cluster.machine(3).joined(); }));
    const GossipNodeState& s = cluster.machine(3).state();
    EXPECT_EQ(lost, 2);  // both replies went out; the first was lost
    EXPECT_TRUE(s.joined_by_snapshot);
    EXPECT_EQ(s.join_requests, 2u);
    EXPECT_GE(cluster.now() - trace.first_request, base.snapshot_timeout);
    EXPECT_EQ(cluster.node(3).x, trace.served);
  }
}

TEST(GossipNodeTest, NodeFiveSBehindCatchesUp) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    GossipNodeOptions base = BaseOptions();
    base.soft_sync.max_lead = 4;
    base.soft_sync.max_wait = milliseconds(100);
    Cluster cluster = MakeCluster(3, seed, base);
    for (size_t i = 0; i < 3; ++i) cluster.Start(i);
    cluster.node(2).step_time = std::chrono::hours(1);  // stuck in its first step
    const uint64_t S = 4;
    ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(5), [&] {
      return cluster.machine(0).state().step > 5 * S + 10 && cluster.machine(1).state().step > 5 * S + 10;
    }));
    ASSERT_LE(cluster.machine(2).state().step, 1u);
    cluster.node(2).step_time = milliseconds(2);
    cluster.node(2).compute_done = cluster.now();  // the stuck step ends now
    const TimePoint released = cluster.now();
    ASSERT_TRUE(cluster.RunFor(milliseconds(500), [&] { return cluster.machine(2).state().catchups > 0; }));
    const GossipNodeState& s = cluster.machine(2).state();
    const uint64_t behind = std::min(cluster.machine(0).state().step, cluster.machine(1).state().step);
    EXPECT_GE(s.step + S, behind) << "caught up to " << s.step << " of " << behind;
    EXPECT_GE(cluster.node(2).resets, 1u);
    EXPECT_LE(cluster.now() - released, milliseconds(50));
  }
}

// A node whose steps are far shorter than its view's refresh (a small model on the library) ends
// on its own samples as they are, not as its last view held them: a lone node with one view,
// fed steps at once, stops at its budget.
TEST(GossipNodeTest, BudgetCountsThisNodesOwnSamplesBetweenViews) {
  GossipNodeOptions o = BaseOptions();
  o.self = 1;
  o.expect_members = 1;
  o.budget_samples = 80;  // 10 steps of 8
  std::vector<float> x(16, 0.0f), initial(16, 0.0f);
  auto machine = GossipNode::Create(o, x, initial, /*from_initial=*/true, TimePoint{});
  ASSERT_TRUE(machine.ok()) << machine.status().ToString();
  GossipNode& node = **machine;
  TimePoint now{};
  MemberEntry self;
  self.id = 1;
  node.Step(MemberView{{self}}, now);
  int steps = 0;
  bool finished = false;
  for (int i = 0; i < 1000 && !finished; ++i) {
    now += std::chrono::microseconds(10);
    node.Tick(now);
    for (const NodeAction& action : node.TakeOutput()) {
      if (std::holds_alternative<ComputeStep>(action)) {
        ++steps;
        node.Step(StepComputed{true, 0.5, 8}, now);
      } else if (std::holds_alternative<Evaluate>(action)) {
        node.Step(Evaluated{}, now);
      } else if (std::holds_alternative<Finished>(action)) {
        finished = true;
      }
    }
  }
  ASSERT_TRUE(finished) << "still training after " << steps << " steps of a 10-step budget";
  EXPECT_EQ(steps, 10);
  EXPECT_EQ(node.state().end_reason, "epochs");
}

// Between views the budget also counts the steps another member's clock announces: with one
// view from before anyone stepped and a neighbour announcing it keeps pace, a node ends when the
// two of them have spent the budget, not when it alone has.
TEST(GossipNodeTest, BudgetCountsTheStepsAMembersClockAnnouncesBetweenViews) {
  GossipNodeOptions o = BaseOptions();
  o.self = 1;
  o.expect_members = 2;
  o.budget_samples = 160;  // 20 steps of 8 over the two
  std::vector<float> x(16, 0.0f), initial(16, 0.0f);
  auto machine = GossipNode::Create(o, x, initial, /*from_initial=*/true, TimePoint{});
  ASSERT_TRUE(machine.ok()) << machine.status().ToString();
  GossipNode& node = **machine;
  TimePoint now{};
  MemberEntry self, other;
  self.id = 1;
  other.id = 2;
  node.Step(MemberView{{self, other}}, now);
  int steps = 0;
  bool finished = false;
  for (int i = 0; i < 1000 && !finished; ++i) {
    now += std::chrono::microseconds(10);
    node.Tick(now);
    for (const NodeAction& action : node.TakeOutput()) {
      if (std::holds_alternative<ComputeStep>(action)) {
        ++steps;  // the neighbour announces the same step first
        node.Step(Incoming{2, 0, static_cast<uint64_t>(steps), NoPayload{}, {}, 0}, now);
        node.Step(StepComputed{true, 0.5, 8}, now);
      } else if (std::holds_alternative<Evaluate>(action)) {
        node.Step(Evaluated{}, now);
      } else if (std::holds_alternative<Finished>(action)) {
        finished = true;
      }
    }
  }
  ASSERT_TRUE(finished) << "still training after " << steps << " steps";
  EXPECT_EQ(steps, 10) << "its own 10 steps and the neighbour's 10 announced spend the budget";
  EXPECT_EQ(node.state().end_reason, "epochs");
}

TEST(GossipNodeTest, BudgetEndsTheRunOnEveryNodeWithinADigestPeriod) {
  const Duration period = FastMembership().probe_interval;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    GossipNodeOptions base = BaseOptions();
    base.budget_samples = 6000;  // 10 samples a step: 600 steps over the cluster
    Cluster cluster = MakeCluster(4, seed, base);
    std::vector<uint64_t> samples(4, 0);
    std::optional<TimePoint> spent;  // when the members' samples first reached the budget
    cluster.on_output = [&](size_t i, const NodeAction& action) {
      if (const auto* a = std::get_if<Announce>(&action)) samples[i] = a->samples;
      uint64_t total = 0;
      for (uint64_t v : samples) total += v;
      if (!spent && total >= static_cast<uint64_t>(base.budget_samples)) spent = cluster.now();
    };
    for (size_t i = 0; i < 4; ++i) cluster.Start(i);
    cluster.RunFor(milliseconds(400));
    const bool crash = seed % 2 == 1;  // odd seeds crash node 3, even ones pause it
    if (crash) {
      cluster.Crash(3);
    } else {
      cluster.Hold(3, true);
    }
    ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(10), [&] {
      return cluster.node(0).finished && cluster.node(1).finished && cluster.node(2).finished;
    }));
    ASSERT_TRUE(spent.has_value());
    TimePoint first = cluster.node(0).finished_at, last = first;
    for (size_t i = 0; i < 3; ++i) {
      first = std::min(first, cluster.node(i).finished_at);
      last = std::max(last, cluster.node(i).finished_at);
    }
    const Duration slack = milliseconds(20);  // a step in flight, network delay, ticks
    EXPECT_LE(first - *spent, period + slack);
    EXPECT_LE(last - first, period + slack);
    ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(2), [&] {
      return cluster.node(0).over && cluster.node(1).over && cluster.node(2).over;
    }));
    for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(cluster.node(i).over->ok()) << "node " << i;
    if (!crash) {  // the paused member stops too once it runs again
      cluster.Hold(3, false);
      ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(2), [&] { return cluster.node(3).finished.has_value(); }));
    }
  }
}

TEST(GossipNodeTest, StepsFollowTheLearningRateScheduleAtTheClustersSamples) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    GossipNodeOptions base = BaseOptions();
    base.budget_samples = 6000;  // 10 samples a step over 4 nodes: ~150 steps each
    auto spec = LrSchedule::Parse("cosine", 0.1);
    ASSERT_TRUE(spec.ok());
    spec->total_samples = base.budget_samples;
    spec->warmup_samples = 600;
    base.lr_schedule = *LrSchedule::Create(*spec);
    Cluster cluster = MakeCluster(4, seed, base);
    // Each step's rate against the rate at the cluster's true samples when it was asked for
    // (the digests that carry the counts are a period old; the node's estimate is not).
    std::vector<uint64_t> samples(4, 0);
    double worst = 0, first_max = 0, last_max = 0;
    int steps = 0;
    cluster.on_output = [&](size_t i, const NodeAction& action) {
      if (const auto* a = std::get_if<Announce>(&action)) samples[i] = a->samples;
      const auto* c = std::get_if<ComputeStep>(&action);
      if (c == nullptr) return;
      ASSERT_TRUE(c->lr.has_value());
      uint64_t total = 0;
      for (uint64_t v : samples) total += v;
      const double expected = base.lr_schedule->At(static_cast<int64_t>(total));
      worst = std::max(worst, std::abs(*c->lr - expected));
      if (total < 500) first_max = std::max(first_max, *c->lr);
      if (total > 5400) last_max = std::max(last_max, *c->lr);
      ++steps;
    };
    for (size_t i = 0; i < 4; ++i) cluster.Start(i);
    ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(20), [&] {
      return cluster.node(0).finished && cluster.node(1).finished && cluster.node(2).finished &&
             cluster.node(3).finished;
    }));
    EXPECT_GT(steps, 500);
    EXPECT_LT(first_max, 0.1);           // still warming up
    EXPECT_LT(last_max, 0.1 * 0.03);     // cosine near its end (t > 0.9: < 2.5 % of the peak)
    // 0.01 is 60 samples of the warm-up's slope: within a step of each of the 4 nodes.
    EXPECT_LT(worst, 0.01) << "a node's rate strayed from the cluster's schedule";
    // The run ends when the schedule is spent, not a digest period later (at rate 0): the
    // samples computed are the budget within a step of each node.
    uint64_t total = 0;
    for (uint64_t v : samples) total += v;
    EXPECT_GE(total, static_cast<uint64_t>(base.budget_samples) * 9 / 10);
    EXPECT_LE(total, static_cast<uint64_t>(base.budget_samples) + 4 * 10 * 2);
  }
}

// Nodes in `evaluating` evaluate every 50 steps, the others only when told to check.
Cluster MakeTargetCluster(uint64_t seed, std::vector<size_t> evaluating,
                          GossipNodeOptions base = BaseOptions()) {
  base.target_accuracy = 0.9;
  return Cluster(4, FastMembership(), seed, [base, evaluating](size_t i, Cluster::Node& node, TimePoint now) {
    GossipNodeOptions o = base;
    o.self = Cluster::Id(i);
    o.incarnation = node.membership->incarnation();
    o.eval_every = std::count(evaluating.begin(), evaluating.end(), i) ? 50 : 1000000000;
    std::vector<float> initial(node.x.size(), 0.0f);
    return *GossipNode::Create(o, node.x, initial, /*from_initial=*/true, now);
  });
}

bool AllFinished(Cluster& cluster) {
  for (size_t i = 0; i < cluster.size(); ++i) {
    if (!cluster.node(i).finished) return false;
  }
  return true;
}

// "finished" from one member (which an invented member could claim) does not end the run; it
// makes the others check the target with an evaluation of their own.
TEST(GossipNodeTest, OneMemberAtTheTargetEndsOnlyItsOwnRunAndMakesTheOthersCheck) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const size_t lucky = seed % 4;
    Cluster cluster = MakeTargetCluster(seed, {lucky});
    cluster.accuracy = [lucky](size_t i) { return i == lucky ? 0.95 : 0.5; };
    std::vector<int> evaluations(4, 0);
    cluster.on_output = [&](size_t i, const NodeAction& action) {
      if (std::holds_alternative<Evaluate>(action)) ++evaluations[i];
    };
    for (size_t i = 0; i < 4; ++i) cluster.Start(i);
    ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(10), [&] { return cluster.node(lucky).finished.has_value(); }));
    EXPECT_EQ(cluster.node(lucky).finished, "accuracy");
    cluster.RunFor(std::chrono::seconds(1), [] { return false; });
    for (size_t i = 0; i < 4; ++i) {
      if (i == lucky) continue;
      EXPECT_FALSE(cluster.node(i).finished.has_value()) << "node " << i << " ended on one member's word";
      EXPECT_EQ(evaluations[i], 1) << "node " << i << " must check the target once";
    }
  }
}

// A member that finished computes no more steps: soft sync does not wait for it (found by
// `murmur sim`: every run whose first member finished before the others stalled them for
// max_wait while it lingered).
TEST(GossipNodeTest, AMemberThatFinishedIsNotWaitedFor) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const size_t lucky = seed % 4;
    GossipNodeOptions base = BaseOptions();
    base.soft_sync.max_lead = 2;
    base.soft_sync.max_wait = milliseconds(800);
    base.linger = std::chrono::seconds(3);  // it stays a live member, at its last step
    Cluster cluster = MakeTargetCluster(seed, {lucky}, base);
    cluster.accuracy = [lucky](size_t i) { return i == lucky ? 0.95 : 0.5; };
    for (size_t i = 0; i < 4; ++i) cluster.Start(i);
    ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(10),
                               [&] { return cluster.node(lucky).finished.has_value(); }));
    const TimePoint finished = cluster.now();
    cluster.RunFor(std::chrono::seconds(2), [] { return false; });
    for (size_t i = 0; i < 4; ++i) {
      if (i == lucky) continue;
      const auto& ends = cluster.node(i).step_ends;
      Duration longest{0};
      for (size_t k = 1; k < ends.size(); ++k) {
        if (ends[k - 1] >= finished) longest = std::max(longest, ends[k] - ends[k - 1]);
      }
      EXPECT_LT(longest, milliseconds(100)) << "node " << i;
      EXPECT_FALSE(cluster.machine(i).soft_sync().IsStraggler(Cluster::Id(lucky), cluster.now()))
          << "node " << i << " waited for the finished member until it marked it";
    }
  }
}

// Each checks the target itself at once. One that hears of a second finished member before its
// check (a quorum of four: lucky and one that checked) ends with them, as promptly.
TEST(GossipNodeTest, OthersAtTheTargetFinishAsSoonAsOneMemberDoes) {
  const Duration period = FastMembership().probe_interval;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const size_t lucky = seed % 4;
    Cluster cluster = MakeTargetCluster(seed, {lucky});
    cluster.accuracy = [](size_t) { return 0.95; };
    for (size_t i = 0; i < 4; ++i) cluster.Start(i);
    ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(10), [&] { return AllFinished(cluster); }));
    int checked = 0;
    for (size_t i = 0; i < 4; ++i) {
      const std::string& why = *cluster.node(i).finished;
      EXPECT_TRUE(why == "accuracy" || why == "peer") << "node " << i << ": " << why;
      checked += why == "accuracy" && i != lucky;
      EXPECT_LE(cluster.node(i).finished_at - cluster.node(lucky).finished_at, period + milliseconds(20))
          << "node " << i;
    }
    EXPECT_EQ(cluster.node(lucky).finished, "accuracy");
    EXPECT_GE(checked, 1) << "no member but the first checked the target itself";
  }
}

TEST(GossipNodeTest, AQuorumOfFinishedMembersEndsTheRunEverywhere) {
  const Duration period = FastMembership().probe_interval;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const size_t a = seed % 4, b = (seed + 1) % 4;
    Cluster cluster = MakeTargetCluster(seed, {a, b});
    cluster.accuracy = [a, b](size_t i) { return i == a || i == b ? 0.95 : 0.5; };
    for (size_t i = 0; i < 4; ++i) cluster.Start(i);
    ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(10), [&] { return AllFinished(cluster); }));
    const TimePoint quorum = std::max(cluster.node(a).finished_at, cluster.node(b).finished_at);
    for (size_t i = 0; i < 4; ++i) {
      if (i == a || i == b) continue;
      EXPECT_EQ(cluster.node(i).finished, "peer") << "node " << i;
      EXPECT_LE(cluster.node(i).finished_at - quorum, period + milliseconds(20)) << "node " << i;
    }
  }
}

// A node still joining when the cluster ends (murmur local --crash restarts one late, and it
// never sees the members it expects live at once): once a quorum of the members it saw have
// finished it stops waiting and ends with them, instead of waiting out expect_wait for members
// that left (it used to wait the whole 30 s, then "train alone").
TEST(GossipNodeTest, ANodeStillJoiningEndsWithAFinishedCluster) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    GossipNodeOptions base = BaseOptions();
    base.budget_samples = 3000;
    Cluster cluster(4, FastMembership(), seed, [base](size_t i, Cluster::Node& node, TimePoint now) {
      GossipNodeOptions o = base;
      o.self = Cluster::Id(i);
      o.incarnation = node.membership->incarnation();
      if (i == 3) {
        o.expect_members = 5;  // more than will ever be live
        o.expect_wait = std::chrono::seconds(30);
      }
      std::vector<float> initial(node.x.size(), 0.0f);
      return *GossipNode::Create(o, node.x, initial, /*from_initial=*/true, now);
    });
    for (size_t i = 0; i < 4; ++i) cluster.Start(i);
    ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(10), [&] {
      return cluster.node(0).over && cluster.node(1).over && cluster.node(2).over;
    }));
    const TimePoint ended = cluster.now();
    ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(30), [&] { return cluster.node(3).over.has_value(); }));
    EXPECT_LE(cluster.now() - ended, std::chrono::seconds(2)) << "waited for members that had left";
    EXPECT_EQ(cluster.node(3).finished, "peer");
    EXPECT_EQ(cluster.machine(3).state().local_steps, 0) << "it never trained alone";
  }
}

// Lock-step (S = 0) runs at the pace of its slowest neighbour's messages, not of the membership
// view: a round's messages carry the clock of the step just taken (they carried the previous
// one, so every neighbour waited for the next view refresh), and under the consensus target a
// node still gossips every H steps when S is below consensus_slack x H (a round is how its
// neighbours learn its clock). murmur experiment ops/scenarios/stragglers.toml showed lock-step
// at ~5 steps/s for its first 2-3 s, until W ran out and the nodes marked each other.
TEST(GossipNodeTest, LockStepGossipsEveryStepUnderConsensusControl) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    GossipNodeOptions base = BaseOptions();
    base.soft_sync.max_lead = 0;
    base.soft_sync.max_wait = std::chrono::seconds(2);
    base.consensus_target = 10;  // always under the target once the first 8 rounds are done
    base.consensus_slack = 4;
    Cluster cluster = MakeCluster(4, seed, base);
    for (size_t i = 0; i < 4; ++i) cluster.Start(i);
    cluster.RunFor(std::chrono::seconds(1));
    for (size_t i = 0; i < 4; ++i) {
      const GossipNodeState& s = cluster.machine(i).state();
      EXPECT_EQ(s.gossip_period, 1) << "node " << i;
      // Lock-step's pace is a step (2 ms) plus the slower neighbour's message (1-5 ms): about
      // 110 steps a second here. One step per view refresh (100 ms) would be 10.
      EXPECT_GT(s.step, 60u) << "node " << i << " crawled (one step per view refresh)";
      EXPECT_EQ(cluster.machine(i).soft_sync().stragglers_detected(), 0u) << "node " << i;
    }
  }
}

// Local SGD with H above S: between rounds a node announces its step clock every S / 2 steps
// (a header without payload), so its neighbours' gates do not wait for the membership view's
// clocks, a probe period (100 ms here) old. Without it a node here waited at every period.
TEST(GossipNodeTest, LocalStepsBeyondTheLeadDoNotWaitForTheView) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    GossipNodeOptions base = BaseOptions();
    base.local_steps = 20;
    base.soft_sync.max_lead = 4;
    base.soft_sync.max_wait = std::chrono::seconds(2);
    Cluster cluster = MakeCluster(3, seed, base);
    size_t announcements = 0;
    cluster.on_output = [&](size_t, const NodeAction& action) {
      const auto* send = std::get_if<SendTo>(&action);
      if (send != nullptr && std::holds_alternative<NoPayload>(send->payload)) ++announcements;
    };
    for (size_t i = 0; i < 3; ++i) cluster.Start(i);
    cluster.RunFor(std::chrono::seconds(1));
    for (size_t i = 0; i < 3; ++i) {
      const GossipNodeState& s = cluster.machine(i).state();
      // 2 ms a step: about 350 steps in the ~0.7 s after joining; waiting a view refresh every
      // 20 steps would be about 140.
      EXPECT_GT(s.local_steps, 250) << "node " << i;
      EXPECT_LT(cluster.machine(i).soft_sync().total_wait(), milliseconds(100)) << "node " << i;
      EXPECT_EQ(cluster.machine(i).soft_sync().stragglers_detected(), 0u) << "node " << i;
      EXPECT_NEAR(static_cast<double>(s.rounds), s.local_steps / 20.0, 1) << "node " << i;
    }
    // Every S / 2 = 2 steps between rounds, to both ring neighbours.
    EXPECT_GT(announcements, 3 * 250 / 2);
  }
}

TEST(GossipNodeTest, InjectedPauseHoldsComputeUntilTheClusterIsAheadButNotTheEnd) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    GossipNodeOptions base = BaseOptions();
    base.soft_sync.max_lead = -1;
    base.budget_samples = 12000;  // 1200 steps over the cluster
    Cluster cluster = MakeCluster(3, seed, base);
    for (size_t i = 0; i < 3; ++i) cluster.Start(i);
    cluster.machine(2).Step(InjectedPause{10, 150}, cluster.now());  // pause=10..150
    ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(5), [&] { return cluster.machine(2).paused(); }));
    EXPECT_EQ(cluster.machine(2).state().step, 10u);
    ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(5), [&] { return cluster.machine(2).state().step > 10; }));
    EXPECT_GE(cluster.machine(2).best_clock(), 150u) << "resumed before a member reached step 150";
    cluster.machine(2).Step(InjectedPause{0, 1'000'000'000}, cluster.now());  // forever
    ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(10), [&] {
      return cluster.node(0).over && cluster.node(1).over && cluster.node(2).over;
    }));
    EXPECT_TRUE(cluster.node(2).finished.has_value()) << "a paused node still ends with the cluster";
    EXPECT_TRUE(cluster.node(2).over->ok());
  }
}

TEST(GossipNodeTest, CrashedMemberIsNeverWaitedForPastW) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    GossipNodeOptions base = BaseOptions();
    base.soft_sync.max_lead = 2;
    base.soft_sync.max_wait = milliseconds(150);
    base.soft_sync.straggler_hold = milliseconds(300);  // the mark runs out before death is known
    Cluster cluster = MakeCluster(3, seed, base);
    for (size_t i = 0; i < 3; ++i) cluster.Start(i);
    // Crashed while training (at 300 ms, the end of join_wait, it had not taken a step: a clock
    // of 0 is never waited for, and the survivors' marks came from their waits on each other).
    ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(5), [&] {
      return cluster.machine(0).state().step > 20 && cluster.machine(1).state().step > 20 &&
             cluster.machine(2).state().step > 20;
    }));
    cluster.Crash(2);
    const TimePoint crashed = cluster.now();
    cluster.RunFor(std::chrono::seconds(3));
    for (size_t i = 0; i < 2; ++i) {
      const auto& ends = cluster.node(i).step_ends;
      Duration longest{0};
      for (size_t k = 1; k < ends.size(); ++k) {
        if (ends[k - 1] >= crashed) longest = std::max(longest, ends[k] - ends[k - 1]);
      }
      EXPECT_LE(longest, base.soft_sync.max_wait + milliseconds(10)) << "node " << i;
      EXPECT_GT(cluster.machine(i).state().step, 500u) << "node " << i;  // it kept training
      EXPECT_GE(cluster.machine(i).soft_sync().stragglers_detected(), 1u) << "node " << i;
    }
  }
}

// The consensus finish (consensus_finish.h): every node alive at the end holds the same model,
// the average of their final models, also with a 4x straggler and with a member that crashed
// during the run (odd seeds). A settled finish ends the run without the linger: the members as
// soon as they hold the average, the collector once they have left.
TEST(GossipNodeTest, ConsensusFinishLeavesEveryLiveNodeOnTheAverageModel) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    GossipNodeOptions base = BaseOptions();
    base.budget_samples = 8000;
    base.finish_wait = std::chrono::seconds(4);
    base.linger = std::chrono::seconds(3);
    Cluster cluster = MakeCluster(4, seed, base);
    cluster.node(3).step_time = milliseconds(8);  // 4x the others
    std::map<size_t, std::vector<float>> own;    // each node's model when its training ended
    cluster.on_output = [&](size_t i, const NodeAction& action) {
      if (std::holds_alternative<Finished>(action)) own[i] = cluster.node(i).x;
    };
    for (size_t i = 0; i < 4; ++i) cluster.Start(i);
    const bool crash = seed % 2 == 1;
    cluster.RunFor(milliseconds(400));
    if (crash) cluster.Crash(2);
    std::vector<size_t> live = crash ? std::vector<size_t>{0, 1, 3} : std::vector<size_t>{0, 1, 2, 3};
    ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(20), [&] {
      return std::all_of(live.begin(), live.end(), [&](size_t i) { return cluster.node(i).over.has_value(); });
    }));
    std::vector<float> average(cluster.node(0).x.size(), 0.0f);
    for (size_t i : live) {
      ASSERT_TRUE(own.contains(i)) << "node " << i << " never finished";
      for (size_t k = 0; k < average.size(); ++k) average[k] += own[i][k] / static_cast<float>(live.size());
    }
    for (size_t i : live) {
      SCOPED_TRACE("node " + std::to_string(i));
      const GossipNodeState& st = cluster.machine(i).state();
      EXPECT_EQ(st.finish, "averaged");
      EXPECT_EQ(st.finish_contributors, live.size());
      EXPECT_EQ(cluster.node(i).x, cluster.node(live[0]).x) << "bit-identical models";
      for (size_t k = 0; k < average.size(); ++k) {
        ASSERT_NEAR(cluster.node(i).x[k], average[k], 1e-3 * std::abs(average[k]) + 1e-6) << k;
      }
      EXPECT_TRUE(cluster.node(i).over->ok());
    }
    TimePoint last_finished{};
    for (size_t i : live) last_finished = std::max(last_finished, cluster.node(i).finished_at);
    const size_t collector = live[0];  // the lowest live id
    for (size_t i : live) {
      EXPECT_LT(cluster.node(i).over_at - last_finished, base.linger - std::chrono::seconds(2))
          << "node " << i << " lingered after a settled finish";
      EXPECT_GE(cluster.node(collector).over_at, cluster.node(i).over_at)
          << "the collector left before member " << i;
    }
  }
}

// A member whose own model comes to hold a NaN (a library user's buffer) neither crashes nor
// spreads it: its run ends with the reason, no finish takes its model, and every other member
// ends on a finite model (a request for its model meanwhile is refused: model_server_test.cc).
TEST(GossipNodeTest, AMemberWithANonFiniteModelEndsWithTheReasonAndSpreadsNothing) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    GossipNodeOptions base = BaseOptions();
    base.budget_samples = 8000;
    base.finish_wait = std::chrono::seconds(2);
    Cluster cluster = MakeCluster(3, seed, base);
    for (size_t i = 0; i < 3; ++i) cluster.Start(i);
    cluster.RunFor(milliseconds(300));
    cluster.node(1).x[0] = std::numeric_limits<float>::quiet_NaN();
    ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(30), [&] {
      for (size_t i = 0; i < 3; ++i) {
        if (!cluster.node(i).over.has_value()) return false;
      }
      return true;
    }));
    // Its next round finds the model unfit to publish and ends its run with the reason (a
    // finish, had it come first, would have left it out: "own model not finite").
    const Status& over = *cluster.node(1).over;
    std::printf("node 2: %s; finish '%s'\n", over.ToString().c_str(),
                cluster.machine(1).state().finish.c_str());
    EXPECT_FALSE(over.ok());
    EXPECT_NE(over.message().find("not finite"), std::string_view::npos) << over;
    EXPECT_NE(cluster.machine(1).state().finish, "averaged");
    for (size_t i : {0, 2}) {
      SCOPED_TRACE("node " + std::to_string(i));
      EXPECT_TRUE(cluster.node(i).over->ok());
      EXPECT_TRUE(coding::AllFinite(cluster.node(i).x));
    }
  }
}

// The finish evaluates the own model on the periodic rows while the contributions travel, and
// the model the run ends on on the full test set: the average, or the own model when the
// collector never answers. An evaluation holds the adoption (it runs on the model itself), so two
// full ones held an expensive evaluation's finish for twice its time.
TEST(GossipNodeTest, TheFinishEvaluatesTheFullTestSetOnlyOnTheModelTheRunEndsOn) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const bool answered = seed % 2 == 0;
    GossipNodeOptions base = BaseOptions();
    base.budget_samples = 3000;
    // Unanswered, the members give up before they could suspect the collector and collect anew.
    base.finish_wait = answered ? std::chrono::seconds(2) : milliseconds(100);
    Cluster cluster = MakeCluster(3, seed, base);
    std::map<size_t, std::vector<bool>> after_finished;  // Evaluate's `full`, from Finished on
    std::set<size_t> ended;
    cluster.on_output = [&](size_t i, const NodeAction& action) {
      if (std::holds_alternative<Finished>(action)) ended.insert(i);
      const auto* e = std::get_if<Evaluate>(&action);
      if (e != nullptr && ended.contains(i)) after_finished[i].push_back(e->full);
    };
    for (size_t i = 0; i < 3; ++i) cluster.Start(i);
    ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(10), [&] { return ended.contains(1); }));
    if (!answered) cluster.Hold(0, true);  // the collector (lowest id) never answers
    ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(10), [&] {
      return cluster.node(1).over.has_value() && cluster.node(2).over.has_value();
    }));
    for (size_t i : {size_t{1}, size_t{2}}) {
      SCOPED_TRACE("node " + std::to_string(i));
      EXPECT_EQ(cluster.machine(i).state().finish, answered ? "averaged" : "missed");
      EXPECT_EQ(after_finished[i], (std::vector<bool>{false, true}))
          << "the own model on the periodic rows, then the final one on the full test set";
      EXPECT_GE(cluster.machine(i).state().own_accuracy, 0);
    }
  }
}

// local_steps 0: a cluster of at most kSparseScheduleMembers members gossips every 2nd step with
// twice top-k's kept fraction and the default γ of that fraction; one member more, every step
// with the fraction and γ given. Other operators keep every step.
TEST(GossipNodeTest, SmallClustersGossipEveryOtherStepWithTwiceTheFraction) {
  struct Case {
    size_t nodes;
    const char* spec;
    bool sparse;
  };
  constexpr size_t kDimension = 200;
  for (const Case& c :
       {Case{3, "topk:0.05", true}, Case{kSparseScheduleMembers, "topk:0.05", true},
        Case{kSparseScheduleMembers + 1, "topk:0.05", false}, Case{3, "qsgd:16", false}}) {
    SCOPED_TRACE(std::to_string(c.nodes) + " nodes, " + c.spec);
    GossipNodeOptions base = BaseOptions();
    base.local_steps = 0;
    base.choco.gamma = 0;  // the operator's default
    base.consensus_target = 0;
    base.choco.compressor = *coding::ParseCompressorSpec(c.spec);
    Cluster cluster = MakeCluster(c.nodes, 3, base);
    // Every step moves every value, so that each update has its full count of entries.
    std::mt19937 rng(7);
    cluster.compute = [&](size_t i, std::optional<double>) {
      std::normal_distribution<float> step(0.0f, 0.01f);
      for (float& v : cluster.node(i).x) v += step(rng);
      return std::pair<double, int64_t>{1.0, 10};
    };
    // Node: the most entries an update of it had in the second second, once every view is whole.
    std::map<size_t, size_t> most_entries;
    const TimePoint settled = cluster.now() + std::chrono::seconds(1);
    cluster.on_output = [&](size_t i, const NodeAction& action) {
      const auto* send = std::get_if<SendTo>(&action);
      if (send == nullptr || !std::holds_alternative<UpdateHeader>(send->payload)) return;
      if (cluster.now() < settled) return;
      coding::Update u;
      ASSERT_TRUE(coding::DecodeUpdate(*send->frame, kDimension, u).ok());
      most_entries[i] = std::max(most_entries[i], u.dense ? u.dimension : u.indices.size());
    };
    for (size_t i = 0; i < c.nodes; ++i) cluster.Start(i, 1, kDimension);
    cluster.RunFor(std::chrono::seconds(2));
    for (size_t i = 0; i < c.nodes; ++i) {
      const GossipNodeState& st = cluster.machine(i).state();
      ASSERT_GT(st.local_steps, 200) << "node " << i;
      EXPECT_EQ(st.gossip_period, c.sparse ? 2 : 1) << "node " << i;
      EXPECT_EQ(st.density_factor, c.sparse ? 2 : 1) << "node " << i;
      // Joining views are smaller for a while: the first rounds may take the other schedule.
      const double per_round = static_cast<double>(st.local_steps) / static_cast<double>(st.rounds);
      EXPECT_NEAR(per_round, c.sparse ? 2.0 : 1.0, 0.1) << "node " << i;
      if (std::string_view(c.spec).starts_with("topk")) {
        const double ratio = c.sparse ? 0.1 : 0.05;
        EXPECT_EQ(most_entries[i], static_cast<size_t>(std::ceil(ratio * kDimension)))
            << "node " << i;
        // The default γ of the fraction sent, with the divergence guard's halvings.
        EXPECT_DOUBLE_EQ(
            st.gamma, std::max(std::ldexp(5 * ratio, -static_cast<int>(st.gamma_halvings)), 1e-4))
            << "node " << i;
      }
    }
  }
}

// Consensus control: under the target a node gossips every consensus_slack x H steps (after its
// first 8 rounds); off, every H.
TEST(GossipNodeTest, ConsensusControlGossipsLessUnderTheTarget) {
  for (const double target : {0.0, 100.0}) {
    SCOPED_TRACE("target " + std::to_string(target));
    GossipNodeOptions base = BaseOptions();
    base.consensus_target = target;
    base.consensus_slack = 4;
    Cluster cluster = MakeCluster(3, 7, base);
    for (size_t i = 0; i < 3; ++i) cluster.Start(i);
    cluster.RunFor(std::chrono::seconds(2));
    for (size_t i = 0; i < 3; ++i) {
      const GossipNodeState& st = cluster.machine(i).state();
      ASSERT_GT(st.local_steps, 200) << "node " << i;
      if (target == 0) {  // off: a round every step
        EXPECT_EQ(static_cast<int64_t>(st.rounds), st.local_steps) << "node " << i;
        EXPECT_EQ(st.gossip_period, 1);
      } else {           // always under after the first 8 rounds: every 4th step
        EXPECT_NEAR(static_cast<double>(st.rounds), 8 + (st.local_steps - 8) / 4.0, 2) << "node " << i;
        EXPECT_EQ(st.gossip_period, 4);
        EXPECT_GT(st.consensus_average, 0);
      }
    }
  }
}

// Consensus control decides by the mean of the node's own estimate and its mixing peers' (sent
// with their updates), so both ends of a link gossip alike: a node whose own distance is under
// the target still gossips every step while its neighbour reports one far above it.
TEST(GossipNodeTest, ConsensusControlHeedsTheNeighboursEstimate) {
  GossipNodeOptions base = BaseOptions();
  base.consensus_target = 10;
  base.consensus_slack = 4;
  Cluster cluster = MakeCluster(2, 5, base);
  float reported = -2;  // what node 1 said last
  cluster.on_output = [&](size_t i, NodeAction& action) {
    auto* send = std::get_if<SendTo>(&action);
    auto* update = send == nullptr ? nullptr : std::get_if<UpdateHeader>(&send->payload);
    if (update == nullptr || i != 1) return;
    reported = update->consensus;
    update->consensus = 50;  // (own + 50) / 2 > 10 on node 0
  };
  for (size_t i = 0; i < 2; ++i) cluster.Start(i);
  cluster.RunFor(std::chrono::seconds(2));
  const GossipNodeState& heeds = cluster.machine(0).state();
  const GossipNodeState& sender = cluster.machine(1).state();
  ASSERT_GT(heeds.local_steps, 200);
  ASSERT_GT(sender.local_steps, 200);
  EXPECT_LT(heeds.consensus_average, base.consensus_target) << "its own alone is under the target";
  // The estimate is taken before a step's round, the average after it.
  EXPECT_NEAR(heeds.consensus_estimate, (heeds.consensus_average + 50) / 2, 0.01);
  EXPECT_EQ(heeds.gossip_period, 1);
  EXPECT_EQ(static_cast<int64_t>(heeds.rounds), heeds.local_steps);
  // Node 1 hears node 0's own figure, under the target: every 4th step. What it sends is its
  // own average as of its latest round.
  EXPECT_EQ(sender.gossip_period, 4);
  EXPECT_LT(sender.consensus_estimate, base.consensus_target);
  EXPECT_FLOAT_EQ(reported, static_cast<float>(sender.consensus_average));
}

// A node stopped by its operator while it waits for the finish's result ends at once on its own
// model, and says so.
TEST(GossipNodeTest, StopWhileWaitingForTheFinishEndsAtOnce) {
  GossipNodeOptions base = BaseOptions();
  base.budget_samples = 3000;
  base.finish_wait = std::chrono::seconds(60);
  Cluster cluster = MakeCluster(3, 11, base);
  for (size_t i = 0; i < 3; ++i) cluster.Start(i);
  ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(10), [&] { return cluster.node(1).finished.has_value(); }));
  cluster.Hold(0, true);  // the collector (lowest id) has not answered, and now never will
  cluster.RunFor(milliseconds(20));  // far less than it takes to suspect node 0
  EXPECT_EQ(cluster.machine(1).phase(), GossipNode::Phase::kFinishing);
  cluster.machine(1).Step(StopRequested{}, cluster.now());
  const TimePoint stopped = cluster.now();
  ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(2), [&] { return cluster.node(1).over.has_value(); }));
  EXPECT_LE(cluster.now() - stopped, base.linger + milliseconds(20));
  EXPECT_EQ(cluster.machine(1).state().finish, "missed");
}

// A node its operator stops leaves without announcing that it finished: the other member of a
// 2-node cluster (which a finished member would make a quorum) trains on instead of ending with
// it and waiting for a finish nobody answers. Its own stop then ends it with the finish off.
TEST(GossipNodeTest, AStoppedMemberDoesNotEndTheOthersRun) {
  GossipNodeOptions base = BaseOptions();
  base.budget_samples = 1000000;  // the run ends by the operator only
  Cluster cluster = MakeCluster(2, 11, base);
  for (size_t i = 0; i < 2; ++i) cluster.Start(i);
  ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(10), [&] {
    return cluster.machine(1).state().local_steps > 20;
  }));
  cluster.machine(0).Step(StopRequested{}, cluster.now());
  ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(5), [&] { return cluster.node(0).over.has_value(); }));
  EXPECT_EQ(cluster.node(0).finished, "stopped");
  const int64_t steps = cluster.machine(1).state().local_steps;
  cluster.RunFor(std::chrono::seconds(3));  // several membership periods: node 0 is gone
  EXPECT_FALSE(cluster.node(1).finished.has_value()) << *cluster.node(1).finished;
  EXPECT_GT(cluster.machine(1).state().local_steps, steps) << "node 1 trains on";
  cluster.machine(1).Step(StopRequested{}, cluster.now());
  ASSERT_TRUE(cluster.RunFor(std::chrono::seconds(5), [&] { return cluster.node(1).over.has_value(); }));
  EXPECT_EQ(cluster.machine(1).state().finish, "off");
}

}  // namespace
}  // namespace murmur::gossip
