// The simulator is the protocols' truth, not a second implementation: for the same
// seed, a membership run in `murmur sim`'s engine and the same run on the unit tests' fake
// network (tests/testing/sim_cluster.h) send the same messages — the same ends, at the same
// virtual times, with the same header bytes — through joins, a crash and a restart. What the
// simulator must match to compare: ticks in lock-step (SimOptions::lockstep_ticks), an ideal link
// of one tick's latency (the fake network's fixed delay), the first 3 nodes as seeds.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "node/sim/simulator.h"
#include "node/sim/wire.h"
#include "tests/testing/sim_cluster.h"

namespace murmur::sim {
namespace {

using gossip::testing::SimCluster;
using std::chrono::milliseconds;

constexpr size_t kNodes = 12;
constexpr size_t kCrashed = 5;
const Duration kCrashAt = milliseconds(2500);  // after the fake network's step at 2.5 s
const Duration kRestartAt = milliseconds(4000);
const Duration kEnd = milliseconds(7000);

struct Sent {
  double t_s;
  size_t from, to;
  std::string header;
  bool operator==(const Sent&) const = default;
};

gossip::MembershipOptions Timing() {
  gossip::MembershipOptions m;
  m.probe_interval = milliseconds(100);
  m.probe_timeout = milliseconds(40);
  m.join_retry = milliseconds(200);
  m.dead_gossip = milliseconds(500);
  return m;
}

// Real incarnations are wall-clock milliseconds at start (the simulator's, + 1).
gossip::Incarnation IncarnationAt(Duration at) {
  return 1 + static_cast<uint64_t>(std::chrono::duration_cast<milliseconds>(at).count());
}

std::vector<Sent> OnTheFakeNetwork(uint64_t seed) {
  SimCluster cluster(kNodes, Timing(), seed, {.seed_nodes = 3, .incarnation = IncarnationAt({})});
  cluster.faults() = {SimCluster::kStep, SimCluster::kStep, 0, 0};
  std::vector<Sent> sent;
  std::vector<uint64_t> sequence(kNodes, 0);
  cluster.on_send = [&](const SimCluster::Delivery& d) {
    // The envelope PeerNode (and the simulator) would put on the wire for this payload.
    gossip::Envelope e;
    e.sender_id = SimCluster::Id(d.from);
    e.incarnation = cluster.node(d.from).incarnation();
    e.sequence = ++sequence[d.from];
    e.payload = d.payload;
    sent.push_back({Seconds(cluster.now().time_since_epoch()), d.from, d.to,
                    MakeWire(d.from, d.to, std::move(e), nullptr, 1)->header});
  };
  cluster.RunFor(kCrashAt);
  cluster.Crash(kCrashed);
  cluster.RunFor(kRestartAt - kCrashAt);
  sequence[kCrashed] = 0;
  cluster.Start(kCrashed, IncarnationAt(kRestartAt));
  cluster.RunFor(kEnd - kRestartAt);
  EXPECT_TRUE(cluster.AllUpSeeAllUpAlive()) << cluster.Describe();
  return sent;
}

std::vector<Sent> InTheSimulator(uint64_t seed, bool lockstep) {
  SimOptions o;
  o.kind = SimKind::kMembership;
  o.nodes = kNodes;
  o.duration = kEnd;
  o.link = LinkSpec{SimCluster::kStep, 0, 0};
  o.membership = Timing();
  o.tick = SimCluster::kStep;
  o.lockstep_ticks = lockstep;
  // Between the fake network's steps, so that the crash follows its step at 2.5 s.
  const Duration half_step = SimCluster::kStep / 2;
  o.crashes = {{kCrashed, kCrashAt + half_step, kRestartAt - kCrashAt - half_step}};
  o.seed = seed;
  auto sim = Simulator::Create(o, nullptr);
  EXPECT_TRUE(sim.ok()) << sim.status();
  if (!sim.ok()) return {};
  std::vector<Sent> sent;
  (*sim)->on_message = [&](const SimMessage& m) {
    sent.push_back({m.t_s, m.from, m.to, m.header});
  };
  const SimResult r = (*sim)->Run();
  EXPECT_EQ(r.nodes[kCrashed].restarts, 1u);
  EXPECT_EQ(r.first_step_s, -1);  // membership alone: nothing trains
  return sent;
}

std::string Describe(const Sent& s) {
  return "t=" + std::to_string(s.t_s) + " " + std::to_string(s.from) + "->" + std::to_string(s.to) +
         " header " + std::to_string(s.header.size()) + " bytes";
}

TEST(SimTraceTest, MembershipSendsWhatTheFakeNetworkSends) {
  for (uint64_t seed : {1, 2, 3}) {
    std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
    SCOPED_TRACE("seed " + std::to_string(seed));
    const std::vector<Sent> fake = OnTheFakeNetwork(seed);
    const std::vector<Sent> sim = InTheSimulator(seed, true);
    std::printf("  %zu messages on the fake network, %zu in the simulator\n", fake.size(),
                sim.size());
    // A run worth comparing: every node probed every period, and the crashed node spoke again.
    ASSERT_GT(fake.size(), kNodes * 60);
    size_t restarted_sends = 0;
    for (const Sent& s : fake) restarted_sends += s.from == kCrashed && s.t_s > 4.0;
    EXPECT_GT(restarted_sends, 10u);
    size_t same = 0;
    while (same < std::min(fake.size(), sim.size()) && fake[same] == sim[same]) ++same;
    EXPECT_EQ(same, fake.size()) << "first difference at message " << same << ": fake "
                                 << (same < fake.size() ? Describe(fake[same]) : "(none)")
                                 << ", simulator "
                                 << (same < sim.size() ? Describe(sim[same]) : "(none)");
    EXPECT_EQ(sim.size(), fake.size());
  }
}

// The comparison can fail: nodes ticking at their own phases (the simulator's default, as
// independent processes do) send at other times.
TEST(SimTraceTest, IndependentPhasesGiveAnotherTrace) {
  const std::vector<Sent> fake = OnTheFakeNetwork(1);
  const std::vector<Sent> sim = InTheSimulator(1, false);
  ASSERT_FALSE(sim.empty());
  EXPECT_NE(sim, fake);
}

}  // namespace
}  // namespace murmur::sim
