#include "gossip/membership.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>

#include "tests/testing/sim_cluster.h"

namespace murmur::gossip {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::SimCluster;

MembershipOptions Fast() {
  MembershipOptions o;
  o.address = "unused";
  o.probe_interval = milliseconds(200);
  o.probe_timeout = milliseconds(80);
  o.join_retry = milliseconds(400);
  o.dead_gossip = milliseconds(1000);
  o.dead_retention = seconds(120);
  return o;
}

MemberEntry E(Incarnation inc, MemberState s) { return {7, "a", inc, s, 0, 0}; }

TEST(MembershipTest, PrecedenceFollowsIncarnationThenState) {
  using S = MemberState;
  const S states[] = {S::kAlive, S::kSuspect, S::kDead, S::kLeft};
  for (S a : states) {
    for (S b : states) {
      // A newer incarnation wins whatever the states; an older one never does.
      EXPECT_TRUE(Supersedes(E(5, a), E(4, b)));
      EXPECT_FALSE(Supersedes(E(4, a), E(5, b)));
      // Equal incarnations: only a state further along Alive < Suspect < Dead < Left wins.
      EXPECT_EQ(Supersedes(E(5, a), E(5, b)), static_cast<int>(a) > static_cast<int>(b))
          << MemberStateName(a) << " vs " << MemberStateName(b);
    }
  }
}

TEST(MembershipTest, OptionsAreValidated) {
  MembershipOptions o = Fast();
  EXPECT_TRUE(o.Validate().ok());
  o.probe_timeout = o.probe_interval;
  EXPECT_EQ(o.Validate().code(), StatusCode::kInvalidArgument);
  o = Fast();
  o.address.clear();
  EXPECT_EQ(o.Validate().code(), StatusCode::kInvalidArgument);
}

TEST(MembershipTest, DigestsAreCappedAndStillSpreadEveryMember) {
  // 64 nodes whose digests carry at most 8 entries: every digest stays that small, and every
  // node still learns every other one (a random share of the entries in each digest).
  MembershipOptions o = Fast();
  o.max_digest_entries = 8;
  for (uint64_t seed = 1; seed <= 2; ++seed) {
    SimCluster sim(64, o, seed);
    size_t largest = 0;
    sim.on_send = [&](const SimCluster::Delivery& d) {
      if (const auto* digest = std::get_if<Digest>(&d.payload)) {
        largest = std::max(largest, digest->members.size());
      }
    };
    const bool converged = sim.RunFor(seconds(30), [&] { return sim.AllUpSeeAllUpAlive(); });
    EXPECT_TRUE(converged) << "seed " << seed << "\n" << sim.Describe();
    EXPECT_LE(largest, 8u) << "seed " << seed;
    std::printf("seed %llu: 64 nodes, digests of at most %zu entries, converged after %.2f s\n",
                (unsigned long long)seed, largest, ToSeconds(sim.now().time_since_epoch()));
  }
}

TEST(MembershipTest, SixteenNodesConvergeToAFullViewFromSeeds) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    SimCluster sim(16, Fast(), seed);
    const bool converged = sim.RunFor(seconds(10), [&] { return sim.AllUpSeeAllUpAlive(); });
    EXPECT_TRUE(converged) << "seed " << seed << "\n" << sim.Describe();
    std::printf("seed %llu: 16 nodes converged after %.2f s\n", (unsigned long long)seed,
                ToSeconds(sim.now().time_since_epoch()));
    for (size_t i = 0; i < sim.size(); ++i) {
      EXPECT_EQ(sim.node(i).LiveView().size(), 16u);
    }
  }
}

// A cluster started together, every node given the same two seeds (as murmur local starts
// one): a node's first Join goes out at once, not at its first period (spread over the probe
// interval), and a member that learns of one it did not know sends its digests then (at most
// every quarter period), not a period later. Measured here before that (seeds 1-3): 4 nodes
// knew each other after 0.45-1.3 periods, 16 after 2.7-3.9, 64 after 5.1-6.3; after it 0.13-0.2,
// 1-2 and 1.9-3.2, at 5-6 digests per node and period over the first two or three (2.4-3.3
// before), and the usual 3 once nobody new comes.
TEST(MembershipTest, AClusterStartedTogetherKnowsItselfWithinPeriods) {
  const MembershipOptions o = Fast();
  const std::map<size_t, Duration> bound = {
      {4, o.probe_interval / 4}, {16, o.probe_interval * 5 / 2}, {64, o.probe_interval * 4}};
  for (const auto& [n, within] : bound) {
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      SCOPED_TRACE("n " + std::to_string(n) + ", seed " + std::to_string(seed));
      SimCluster sim(n, o, seed, {.seed_nodes = 2});
      size_t digests = 0;
      sim.on_send = [&](const SimCluster::Delivery& d) {
        digests += std::holds_alternative<Digest>(d.payload);
      };
      ASSERT_TRUE(sim.RunFor(within, [&] { return sim.AllUpSeeAllUpAlive(); })) << sim.Describe();
      const Duration converged = sim.now() - TimePoint{};
      // Two periods more: the periodic digests, the join replies and the news, together.
      sim.RunFor(2 * o.probe_interval);
      const double periods = ToSeconds(sim.now() - TimePoint{}) / ToSeconds(o.probe_interval);
      const double per_node_period =
          static_cast<double>(digests) / static_cast<double>(n) / periods;
      std::printf("n %zu seed %llu: converged after %.3f s, %.1f digests per node and period\n", n,
                  (unsigned long long)seed, ToSeconds(converged), per_node_period);
      EXPECT_LE(per_node_period, 8);
    }
  }
}

// News of a joined member goes out at most every quarter period, however fast it comes: 62
// members joining one a tick (5 ms) after the two seeds, so that most nodes learn of someone new
// at nearly every tick. A node that is not a seed (the seeds answer every Join) sends at most
// its period's digests and four rounds of news per period, each to gossip_fanout members.
TEST(MembershipTest, NewsOfJoinsIsSentAtMostEveryQuarterPeriod) {
  const MembershipOptions o = Fast();
  constexpr size_t kNodes = 64, kSeedNodes = 2;
  SimCluster sim(kNodes, o, 1, {.seed_nodes = kSeedNodes});
  for (size_t i = kSeedNodes; i < kNodes; ++i) sim.Crash(i);  // not started yet
  std::vector<size_t> digests(kNodes, 0);
  std::vector<TimePoint> started(kNodes, TimePoint{});
  sim.on_send = [&](const SimCluster::Delivery& d) {
    digests[d.from] += std::holds_alternative<Digest>(d.payload);
  };
  for (size_t i = kSeedNodes; i < kNodes; ++i) {
    sim.Start(i, 0);
    started[i] = sim.now();
    sim.RunFor(SimCluster::kStep);
  }
  ASSERT_TRUE(sim.RunFor(seconds(10), [&] { return sim.AllUpSeeAllUpAlive(); })) << sim.Describe();
  const double bound = (1 + 4) * o.gossip_fanout + 1;  // + 1: a period boundary in the window
  double most = 0;
  for (size_t i = kSeedNodes; i < kNodes; ++i) {
    const double periods = ToSeconds(sim.now() - started[i]) / ToSeconds(o.probe_interval);
    most = std::max(most, static_cast<double>(digests[i]) / periods);
  }
  std::printf("at most %.1f digests per node and period (bound %.0f)\n", most, bound);
  EXPECT_LE(most, bound);
}

TEST(MembershipTest, TrainingProgressSpreadsAndOnlyGrowsWithinALife) {
  SimCluster sim(6, Fast(), 2);
  ASSERT_TRUE(sim.RunFor(seconds(10), [&] { return sim.AllUpSeeAllUpAlive(); }));
  sim.node(2).SetProgress(120, 7680, false);
  auto everyone_knows = [&](uint64_t step, uint64_t samples, bool finished) {
    for (size_t i = 0; i < sim.size(); ++i) {
      auto e = sim.node(i).Find(sim.node(2).id());
      if (!e || e->step_clock != step || e->samples != samples || e->finished != finished) return false;
    }
    return true;
  };
  EXPECT_TRUE(sim.RunFor(seconds(5), [&] { return everyone_knows(120, 7680, false); }))
      << sim.Describe();
  // The run ended: "finished" spreads; stale gossip with smaller numbers cannot undo anything.
  sim.node(2).SetProgress(130, 8320, true);
  EXPECT_TRUE(sim.RunFor(seconds(5), [&] { return everyone_knows(130, 8320, true); }));
  MemberEntry stale = *sim.node(0).Find(sim.node(2).id());
  stale.step_clock = 5;
  stale.samples = 1;
  stale.finished = false;
  sim.node(0).Step(Envelope{kSchemaVersion, "", sim.node(3).id(), 1, 0, 1, 0, Digest{{stale}, false}},
                   sim.now());
  auto e = sim.node(0).Find(sim.node(2).id());
  EXPECT_EQ(e->step_clock, 130u);
  EXPECT_EQ(e->samples, 8320u);
  EXPECT_TRUE(e->finished);
}

TEST(MembershipTest, ShuffledRoundRobinProbesEveryMemberOncePerPass) {
  SimCluster sim(9, Fast(), 3);
  ASSERT_TRUE(sim.RunFor(seconds(10), [&] { return sim.AllUpSeeAllUpAlive(); }));
  sim.RunFor(seconds(3));  // let the first pass that began with a partial view finish
  std::map<size_t, int> pinged;
  int pings = 0;
  sim.on_send = [&](const SimCluster::Delivery& d) {
    if (d.from == 0 && std::holds_alternative<Ping>(d.payload)) {
      ++pinged[d.to];
      ++pings;
    }
  };
  // Three full passes of n-1 = 8 periods each: every member three times (within one of it, as
  // a pass boundary can fall inside the window).
  sim.RunFor(Fast().probe_interval * 24);
  EXPECT_EQ(pinged.size(), 8u);
  for (auto [to, count] : pinged) EXPECT_NEAR(count, 3, 1) << "node " << to;
  EXPECT_NEAR(pings, 24, 1);
}

TEST(MembershipTest, CrashedNodeIsDeclaredDeadWithinTheBound) {
  double total = 0;
  const int runs = 20;
  for (uint64_t seed = 1; seed <= runs; ++seed) {
    SimCluster sim(8, Fast(), seed);
    ASSERT_TRUE(sim.RunFor(seconds(10), [&] { return sim.AllUpSeeAllUpAlive(); }));
    const size_t victim = seed % 8;
    sim.Crash(victim);
    const TimePoint crashed = sim.now();
    const Duration bound = sim.node((victim + 1) % 8).DetectionBound(8);
    const bool dead = sim.RunFor(bound, [&] { return sim.AllUpSeeGone(victim); });
    EXPECT_TRUE(dead) << "seed " << seed << ", bound " << ToSeconds(bound) << " s\n"
                      << sim.Describe();
    total += ToSeconds(sim.now() - crashed);
    // Nobody else was hurt.
    for (const auto& e : sim.events()) {
      if (e.event.kind == MemberEvent::Kind::kDead) {
        EXPECT_EQ(e.event.id, SimCluster::Id(victim)) << "seed " << seed;
      }
    }
  }
  std::printf("8 nodes, T = 200 ms: crash declared dead everywhere after %.2f s on average "
              "(bound %.2f s)\n",
              total / runs, ToSeconds(Membership(Fast(), TimePoint{}).DetectionBound(8)));
}

TEST(MembershipTest, NoFalseDeathsUnderOnePercentLossAndDuplicates) {
  SimCluster sim(16, Fast(), 11);
  ASSERT_TRUE(sim.RunFor(seconds(10), [&] { return sim.AllUpSeeAllUpAlive(); }));
  sim.faults().drop = 0.01;
  sim.faults().duplicate = 0.01;
  sim.faults().max_delay = milliseconds(40);
  sim.RunFor(seconds(120));
  for (const auto& e : sim.events()) {
    EXPECT_NE(e.event.kind, MemberEvent::Kind::kDead) << "node " << e.event.id << " seen by "
                                                      << e.observer;
  }
  sim.faults() = {};
  EXPECT_TRUE(sim.RunFor(seconds(5), [&] { return sim.AllUpSeeAllUpAlive(); }))
      << sim.Describe();
}

TEST(MembershipTest, FalseSuspicionIsRefutedWithAHigherIncarnation) {
  SimCluster sim(5, Fast(), 5);
  ASSERT_TRUE(sim.RunFor(seconds(10), [&] { return sim.AllUpSeeAllUpAlive(); }));
  const Incarnation before = sim.node(2).incarnation();
  // Node 0 hears a (false) rumour that node 2 is suspect.
  Envelope rumour;
  rumour.sender_id = SimCluster::Id(1);
  rumour.payload = Digest{{{SimCluster::Id(2), SimCluster::Address(2), before,
                            MemberState::kSuspect, 0, 0}},
                          false};
  sim.node(0).Step(rumour, sim.now());
  EXPECT_EQ(sim.View(0, 2), MemberState::kSuspect);
  ASSERT_TRUE(sim.RunFor(seconds(3), [&] { return sim.AllUpSeeAllUpAlive(); }))
      << sim.Describe();
  EXPECT_GT(sim.node(2).incarnation(), before);
  for (const auto& e : sim.events()) EXPECT_NE(e.event.kind, MemberEvent::Kind::kDead);
}

// A member whose link is full (a collector receiving every member's model over a thin link)
// answers probes late but still sends: its own messages restart its suspicion deadline, so it is
// not declared dead while it speaks; once silent it is, one suspicion timeout after its last word.
TEST(MembershipTest, ASuspectThatStillSpeaksIsNotDeclaredDead) {
  SimCluster sim(3, Fast(), 7, {.incarnation = 1000});
  ASSERT_TRUE(sim.RunFor(seconds(10), [&] { return sim.AllUpSeeAllUpAlive(); }));
  Membership& a = sim.node(0);
  const NodeId slow = SimCluster::Id(2);
  const Incarnation inc = sim.node(2).incarnation();
  auto state = [&] { return a.Find(slow)->state; };
  TimePoint now = sim.now();
  Envelope rumour;
  rumour.sender_id = SimCluster::Id(1);
  rumour.payload =
      Digest{{{slow, SimCluster::Address(2), inc, MemberState::kSuspect, 0, 0}}, false};
  ASSERT_TRUE(a.Step(rumour, now));
  ASSERT_EQ(state(), MemberState::kSuspect);
  const Duration timeout = a.SuspicionTimeout();
  // Node 0 runs alone from here: nothing it sends arrives. Node 2's digests reach it every half
  // timeout, for three timeouts.
  Envelope own;
  own.sender_id = slow;
  own.incarnation = inc;
  own.payload = Digest{{{slow, SimCluster::Address(2), inc, MemberState::kAlive, 0, 0}}, false};
  for (int k = 0; k < 6; ++k) {
    now += timeout / 2;
    a.Tick(now);
    a.TakeOutput();
    ASSERT_EQ(state(), MemberState::kSuspect) << "after " << ToSeconds(now - sim.now()) << " s";
    a.Step(own, now);
  }
  // An old life's message is no word from the member now.
  Envelope old = own;
  old.incarnation = inc - 1;
  a.Step(old, now);
  now += timeout - milliseconds(1);
  a.Tick(now);
  EXPECT_EQ(state(), MemberState::kSuspect);
  now += milliseconds(2);
  a.Tick(now);
  EXPECT_EQ(state(), MemberState::kDead);
}

TEST(MembershipTest, RestartedNodeRejoinsWithHigherOrEqualIncarnation) {
  for (Incarnation restart_inc : {Incarnation{0}, Incarnation{1000}}) {
    SimCluster sim(6, Fast(), 21 + restart_inc);
    ASSERT_TRUE(sim.RunFor(seconds(10), [&] { return sim.AllUpSeeAllUpAlive(); }));
    sim.Crash(3);
    ASSERT_TRUE(sim.RunFor(sim.node(0).DetectionBound(6), [&] { return sim.AllUpSeeGone(3); }));
    sim.Start(3, restart_inc);
    const bool back = sim.RunFor(seconds(5), [&] { return sim.AllUpSeeAllUpAlive(); });
    EXPECT_TRUE(back) << "restart incarnation " << restart_inc << "\n" << sim.Describe();
    EXPECT_GE(sim.node(3).incarnation(), restart_inc);
    bool recovered = false;
    for (const auto& e : sim.events()) {
      recovered |= e.event.kind == MemberEvent::Kind::kRecovered && e.event.id == SimCluster::Id(3);
    }
    EXPECT_TRUE(recovered);
  }
}

TEST(MembershipTest, GracefulLeaveIsSeenAtOnceAndNeverSuspected) {
  SimCluster sim(6, Fast(), 8);
  ASSERT_TRUE(sim.RunFor(seconds(10), [&] { return sim.AllUpSeeAllUpAlive(); }));
  sim.node(4).Leave(sim.now());
  sim.RunFor(milliseconds(50));
  sim.Crash(4);
  for (size_t i = 0; i < 6; ++i) {
    if (i == 4) continue;
    EXPECT_EQ(sim.View(i, 4), MemberState::kLeft) << "node " << i;
  }
  sim.RunFor(seconds(10));
  for (const auto& e : sim.events()) {
    if (e.event.id == SimCluster::Id(4)) {
      EXPECT_NE(e.event.kind, MemberEvent::Kind::kSuspected);
      EXPECT_NE(e.event.kind, MemberEvent::Kind::kDead);
    }
  }
}

TEST(MembershipTest, AMemberThatFinishesAndLeavesAtOnceLeavesItsFinishBehind) {
  // The run's end and the graceful leave within one protocol period (a short linger): "finished"
  // must reach every member anyway, or members that wait for it (a synchronous run's ranks) wait
  // forever. The leaving member's final entry goes out with its Leave.
  SimCluster sim(6, Fast(), 12);
  ASSERT_TRUE(sim.RunFor(seconds(10), [&] { return sim.AllUpSeeAllUpAlive(); }));
  sim.node(4).SetProgress(40, 2560, true);
  sim.node(4).Leave(sim.now());
  sim.RunFor(milliseconds(20));
  sim.Crash(4);
  for (size_t i = 0; i < 6; ++i) {
    if (i == 4) continue;
    auto e = sim.node(i).Find(SimCluster::Id(4));
    ASSERT_TRUE(e.has_value()) << "node " << i;
    EXPECT_EQ(e->state, MemberState::kLeft) << "node " << i;
    EXPECT_TRUE(e->finished) << "node " << i;
    EXPECT_EQ(e->step_clock, 40u) << "node " << i;
  }
}

TEST(MembershipTest, ATwinWithTheSameIdIsReportedNotFought) {
  SimCluster sim(3, Fast(), 17);
  ASSERT_TRUE(sim.RunFor(seconds(5), [&] { return sim.AllUpSeeAllUpAlive(); }));
  const Incarnation before = sim.node(0).incarnation();
  Envelope twin;
  twin.payload = Digest{{{SimCluster::Id(0), "sim://elsewhere", before + 5, MemberState::kAlive, 0, 0}},
                        false};
  twin.sender_id = SimCluster::Id(1);  // a member that heard of the twin
  sim.node(0).Step(twin, sim.now());
  sim.node(0).Step(twin, sim.now());
  const auto events = sim.node(0).TakeEvents();
  ASSERT_EQ(std::count_if(events.begin(), events.end(),
                          [](const MemberEvent& e) { return e.kind == MemberEvent::Kind::kIdConflict; }),
            1)
      << "reported once per period";
  EXPECT_EQ(sim.node(0).incarnation(), before) << "the twin started an incarnation war";
}

TEST(MembershipTest, PartitionedHalvesDeclareEachOtherDeadThenHeal) {
  SimCluster sim(8, Fast(), 13);
  ASSERT_TRUE(sim.RunFor(seconds(10), [&] { return sim.AllUpSeeAllUpAlive(); }));
  sim.Partition({0, 0, 0, 0, 1, 1, 1, 1});
  sim.RunFor(sim.node(0).DetectionBound(8));
  EXPECT_EQ(sim.View(0, 5), MemberState::kDead) << sim.Describe();
  EXPECT_EQ(sim.View(6, 1), MemberState::kDead) << sim.Describe();
  const uint64_t epoch = sim.node(0).view_epoch();
  EXPECT_EQ(sim.node(0).LiveView().size(), 4u);
  sim.Heal();
  const bool healed = sim.RunFor(seconds(15), [&] { return sim.AllUpSeeAllUpAlive(); });
  EXPECT_TRUE(healed) << sim.Describe();
  EXPECT_GT(sim.node(0).view_epoch(), epoch);
  EXPECT_EQ(sim.node(0).LiveView().size(), 8u);
}

// The nemesis: random partitions, loss, duplication, delay, crashes and restarts, then a healed
// network. Invariants: after healing, every running node sees every running node alive (no live
// node stays dead), and every node down for longer than the detection bound is gone everywhere.
TEST(MembershipTest, NemesisKeepsTheInvariants) {
  const int runs = 24;
  for (uint64_t seed = 100; seed < 100 + runs; ++seed) {
    std::mt19937_64 rng(seed);
    const size_t n = 3 + rng() % 8;
    SimCluster sim(n, Fast(), seed);
    std::vector<Incarnation> lives(n, 0);
    for (int round = 0; round < 30; ++round) {
      switch (rng() % 6) {
        case 0: {
          std::vector<int> groups(n);
          for (auto& g : groups) g = static_cast<int>(rng() % 2);
          sim.Partition(groups);
          break;
        }
        case 1:
          sim.Heal();
          break;
        case 2: {
          const size_t victim = rng() % n;
          if (sim.up(victim)) sim.Crash(victim);
          break;
        }
        case 3: {
          const size_t i = rng() % n;
          if (!sim.up(i)) sim.Start(i, (rng() % 2) ? ++lives[i] : 0);
          break;
        }
        case 4:
          sim.faults().drop = (rng() % 30) / 100.0;
          sim.faults().duplicate = (rng() % 20) / 100.0;
          break;
        case 5:
          sim.faults().max_delay = milliseconds(5 + rng() % 400);
          break;
      }
      sim.RunFor(milliseconds(200 + rng() % 1500));
    }
    // Keep at least two nodes running, and end with a partition long enough for both sides to
    // declare each other dead, so healing has real work to do.
    for (size_t i = 0; i < 2; ++i) {
      if (!sim.up(i)) sim.Start(i, ++lives[i]);
    }
    std::vector<int> halves(n);
    for (size_t i = 0; i < n; ++i) halves[i] = static_cast<int>(i % 2);
    sim.Partition(halves);
    sim.faults() = {};
    sim.RunFor(sim.node(0).DetectionBound(n));
    ASSERT_NE(sim.View(0, 1), MemberState::kAlive) << "seed " << seed << ": partition had no effect";
    sim.Heal();
    const TimePoint healed_at = sim.now();
    const Duration settle = sim.node(0).DetectionBound(n) + seconds(15);
    const bool ok = sim.RunFor(settle, [&] {
      if (!sim.AllUpSeeAllUpAlive()) return false;
      for (size_t j = 0; j < n; ++j) {
        if (!sim.up(j) && !sim.AllUpSeeGone(j)) return false;
      }
      return true;
    });
    ASSERT_TRUE(ok) << "nemesis seed " << seed << " (n = " << n << ") did not settle within "
                    << ToSeconds(settle) << " s of healing\n"
                    << sim.Describe();
    std::printf("nemesis seed %llu: n = %zu, settled %.2f s after healing\n",
                (unsigned long long)seed, n, ToSeconds(sim.now() - healed_at));
  }
}

}  // namespace
}  // namespace murmur::gossip
