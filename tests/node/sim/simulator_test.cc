// The simulator (node/sim/): its network model, determinism, and the real machines of
// every mode run to their end in virtual time.
#include "node/sim/simulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "coding/compressor.h"
#include "gossip/mode.h"
#include "node/sim/network.h"
#include "node/sim/workload.h"
#include "tests/testing/plain_choco_options.h"

namespace murmur::sim {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(LinkTest, ParsesNamesAndOverrides) {
  auto wan = ParseLink("wan:50ms,100Mbit");
  ASSERT_TRUE(wan.ok()) << wan.status();
  EXPECT_EQ(wan->latency, milliseconds(50));
  EXPECT_EQ(wan->bits_per_s, 100e6);
  auto lan = ParseLink("1GbE,loss=0.01");
  ASSERT_TRUE(lan.ok()) << lan.status();
  EXPECT_EQ(lan->bits_per_s, 1e9);
  EXPECT_EQ(lan->loss, 0.01);
  auto custom = ParseLink("latency=2ms,bandwidth=10Gbit");
  ASSERT_TRUE(custom.ok());
  EXPECT_EQ(custom->latency, milliseconds(2));
  auto back = ParseLink(custom->ToString());
  ASSERT_TRUE(back.ok()) << custom->ToString();
  EXPECT_EQ(back->latency, custom->latency);
  EXPECT_EQ(back->bits_per_s, custom->bits_per_s);
  for (const char* bad : {"", "fast", "1GbE,loss=1", "latency=5", "bandwidth=10", "wan:x"}) {
    auto r = ParseLink(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("allowed"), std::string::npos) << r.status();
    }
  }
}

TEST(NetworkModelTest, SerializesEachNicAndAddsLatency) {
  // 8 Mbit/s: 1000 bytes take 1 ms on a link; latency 10 ms.
  NetworkModel net(3, LinkSpec{milliseconds(10), 8e6, 0}, 1);
  const TimePoint t0{};
  // Two messages from node 0 at once: the second leaves the uplink 1 ms later.
  auto a = net.Send(0, 1, 1000, t0);
  auto b = net.Send(0, 2, 1000, t0);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, t0 + milliseconds(10));
  EXPECT_EQ(*b, t0 + milliseconds(11));
  // An idle downlink delivers at first byte + transmission.
  EXPECT_EQ(net.Receive(1, 1000, *a), t0 + milliseconds(11));
  // Incast: two senders' messages arriving at one downlink at once queue.
  auto c = net.Send(1, 2, 1000, t0);
  EXPECT_EQ(net.Receive(2, 1000, *c), t0 + milliseconds(11));
  EXPECT_EQ(net.Receive(2, 1000, *b), t0 + milliseconds(12));
  net.Partition({0, 0, 1});
  EXPECT_FALSE(net.Reachable(0, 2));
  EXPECT_TRUE(net.Reachable(0, 1));
  net.Heal();
  net.SetDown(2, true);
  EXPECT_FALSE(net.Reachable(0, 2));
}

// Membership messages have a lane of their own (network.h): behind a model on the uplink and on
// the downlink they take latency + their own bytes, and they hold neither NIC for what follows.
TEST(NetworkModelTest, MembershipMessagesDoNotQueueBehindModels) {
  NetworkModel net(2, LinkSpec{milliseconds(10), 8e6, 0}, 1);  // 1000 bytes a millisecond
  const TimePoint t0{};
  auto model = net.Send(0, 1, 500'000, t0);  // 500 ms on each NIC
  auto probe = net.Send(0, 1, 1000, t0, Duration(0), /*own_lane=*/true);
  ASSERT_TRUE(model && probe);
  EXPECT_EQ(*probe, t0 + milliseconds(10));
  EXPECT_EQ(net.Receive(1, 500'000, *model), t0 + milliseconds(510));
  EXPECT_EQ(net.Receive(1, 1000, *probe, /*own_lane=*/true), t0 + milliseconds(11));
  // The next model still waits for the first on both NICs: the probe took no room there.
  auto next = net.Send(0, 1, 1000, t0);
  ASSERT_TRUE(next);
  EXPECT_EQ(*next, t0 + milliseconds(510));
  EXPECT_EQ(net.Receive(1, 1000, *next), t0 + milliseconds(511));
}

SimOptions GossipOptions(size_t nodes, int64_t budget) {
  SimOptions o;
  o.kind = SimKind::kGossip;
  o.nodes = nodes;
  o.link = *ParseLink("1GbE");
  o.membership.probe_interval = milliseconds(200);
  o.membership.probe_timeout = milliseconds(80);
  o.membership.join_retry = milliseconds(400);
  o.gossip = murmur::testing::PlainChocoNodeOptions();
  o.gossip.choco.compressor = *coding::ParseCompressorSpec("topk:0.01,values=fp16");
  o.gossip.expect_members = static_cast<int>(nodes);
  o.gossip.budget_samples = budget;
  o.gossip.finish_wait = seconds(2);
  o.gossip.linger = milliseconds(100);
  o.duration = seconds(120);
  return o;
}

TEST(SimulatorTest, GossipRunsToTheConsensusFinishDeterministically) {
  constexpr uint64_t kSeed = 5;
  std::printf("seed %llu\n", static_cast<unsigned long long>(kSeed));
  auto run = [&] {
    SyntheticWorkload w(4, 1000, 6000, 64, 0.5, kSeed);
    SimOptions o = GossipOptions(4, 20 * 6000);
    o.seed = kSeed;
    auto sim = Simulator::Create(o, &w);
    EXPECT_TRUE(sim.ok()) << sim.status();
    return (*sim)->Run();
  };
  const SimResult a = run();
  const SimResult b = run();
  ASSERT_TRUE(a.all_over);
  EXPECT_EQ(a.trace_hash, b.trace_hash);
  EXPECT_EQ(a.messages, b.messages);
  int64_t samples = 0;
  for (const SimNodeResult& n : a.nodes) {
    EXPECT_TRUE(n.ok) << n.status;
    EXPECT_EQ(n.finished, "epochs");
    EXPECT_EQ(n.finish, "averaged");
    samples += n.samples;
    ASSERT_TRUE(n.optimum_distance.has_value());
    std::printf("node %llu: %llu steps, %.3f MB sent, optimum distance %.4f, over at %.3f s\n",
                static_cast<unsigned long long>(n.id), static_cast<unsigned long long>(n.steps),
                n.bytes_sent / 1e6, *n.optimum_distance, n.over_s);
  }
  EXPECT_GE(samples, 20 * 6000);
  EXPECT_LE(samples, 30 * 6000);  // the budget overshoots by what the digests lag
  EXPECT_LT(a.consensus_distance, 1e-3);
  // Training begins once a node has joined and before anyone is over.
  EXPECT_GT(a.first_step_s, 0);
  double first_over = a.virtual_s;
  for (const SimNodeResult& n : a.nodes) first_over = std::min(first_over, n.over_s);
  EXPECT_LT(a.first_step_s, first_over);
  std::printf("training began at %.3f s\n", a.first_step_s);
  std::printf("%llu events, %llu messages, %.1f virtual s in %.2f wall s\n",
              static_cast<unsigned long long>(a.events),
              static_cast<unsigned long long>(a.messages), a.virtual_s, a.wall_s);
}

// A start cost delays every process's start: the whole run happens that much later, the same
// run otherwise (the same steps, messages and ends).
TEST(SimulatorTest, AStartCostDelaysTheRunByItsLength) {
  constexpr uint64_t kSeed = 5;
  std::printf("seed %llu\n", static_cast<unsigned long long>(kSeed));
  auto run = [&](Duration start_cost) {
    SyntheticWorkload w(4, 1000, 6000, 64, 0.5, kSeed);
    SimOptions o = GossipOptions(4, 10 * 6000);
    o.seed = kSeed;
    o.start_cost = start_cost;
    auto sim = Simulator::Create(o, &w);
    EXPECT_TRUE(sim.ok()) << sim.status();
    return (*sim)->Run();
  };
  const SimResult now = run(Duration(0));
  const SimResult later = run(milliseconds(250));
  ASSERT_TRUE(now.all_over && later.all_over);
  EXPECT_NEAR(later.first_step_s - now.first_step_s, 0.25, 1e-9);
  EXPECT_NEAR(later.virtual_s - now.virtual_s, 0.25, 1e-9);
  EXPECT_EQ(later.messages, now.messages);
  for (size_t i = 0; i < now.nodes.size(); ++i) {
    EXPECT_EQ(later.nodes[i].steps, now.nodes[i].steps) << i;
    EXPECT_NEAR(later.nodes[i].over_s - now.nodes[i].over_s, 0.25, 1e-9) << i;
  }
  SimOptions bad = GossipOptions(4, 6000);
  bad.start_cost = -milliseconds(1);
  EXPECT_FALSE(bad.Validate().ok());
}

// A workload whose evaluations cost test rows (TrainerWorkload's are the test set's), counting
// the periodic ones.
class EvaluatingWorkload final : public Workload {
 public:
  explicit EvaluatingWorkload(SyntheticWorkload& inner) : inner_(inner) {}
  size_t nodes() const override { return inner_.nodes(); }
  size_t dimension() const override { return inner_.dimension(); }
  int64_t dataset_rows() const override { return inner_.dataset_rows(); }
  std::vector<float> InitialModel() const override { return inner_.InitialModel(); }
  std::vector<float> OwnInitialModel(uint64_t id) const override { return inner_.OwnInitialModel(id); }
  int64_t ShardRows(size_t node) const override { return inner_.ShardRows(node); }
  std::span<float> Params(size_t node) override { return inner_.Params(node); }
  void Reset(size_t node, std::span<const float> model) override { inner_.Reset(node, model); }
  std::pair<double, int64_t> Step(size_t node, std::optional<double> lr) override {
    return inner_.Step(node, lr);
  }
  std::span<const float> Gradient(size_t node, uint64_t iteration,
                                  std::span<const coding::WeightedSample> own,
                                  std::span<const float> model) override {
    return inner_.Gradient(node, iteration, own, model);
  }
  std::pair<double, double> Evaluate(std::span<const float> model, bool full) override {
    periodic += !full;
    return inner_.Evaluate(model, full);
  }
  int64_t EvaluationRows(bool full) const override { return full ? 5000 : 500; }
  int periodic = 0;

 private:
  SyntheticWorkload& inner_;
};

// An evaluation costs its rows × cost_per_eval_row of the node's thread, paid before its next
// step: each node's compute time beyond its steps' is what its periodic evaluations cost (the
// last one of a node, after its last step, and the final full one are never paid).
TEST(SimulatorTest, EvaluationsCostTheirRowsBeforeTheNextStep) {
  constexpr auto kSample = std::chrono::microseconds(100);
  auto run = [&](Duration per_row, int* evaluations) {
    SyntheticWorkload inner(4, 1000, 6000, 64, 0.5, 5);
    EvaluatingWorkload w(inner);
    SimOptions o = GossipOptions(4, 10 * 6000);
    o.seed = 5;
    o.cost_per_sample = kSample;
    o.cost_per_eval_row = per_row;
    o.gossip.eval_every = 10;
    auto sim = Simulator::Create(o, &w);
    EXPECT_TRUE(sim.ok()) << sim.status();
    SimResult r = (*sim)->Run();
    *evaluations = w.periodic;
    return r;
  };
  int free_evals = 0, paid_evals = 0;
  const SimResult free = run(Duration(0), &free_evals);
  const SimResult paid = run(std::chrono::microseconds(100), &paid_evals);  // 50 ms each
  ASSERT_TRUE(free.all_over && paid.all_over);
  auto evaluation_s = [&](const SimResult& r) {
    double s = 0;
    for (const SimNodeResult& n : r.nodes) s += n.compute_s - n.steps * 64 * 1e-4;
    return s;
  };
  std::printf("free: %d evaluations, %.4f s beyond the steps, %.2f virtual s; paid: %d, %.4f s, "
              "%.2f virtual s\n", free_evals, evaluation_s(free), free.virtual_s, paid_evals,
              evaluation_s(paid), paid.virtual_s);
  EXPECT_NEAR(evaluation_s(free), 0, 1e-6);
  ASSERT_GT(paid_evals, 20);
  EXPECT_LE(evaluation_s(paid), paid_evals * 0.05 + 1e-6);
  EXPECT_GE(evaluation_s(paid), (paid_evals - 4) * 0.05 - 1e-6);
  EXPECT_GT(paid.virtual_s, free.virtual_s + 0.05 * paid_evals / 4 * 0.5);
}

// One run of a synchronous mode on the N = 12 workers of the CodedReduce paper's setting (n = 3,
// L = 2, s = 1), full-batch least squares, `straggle` applied to the given nodes (process indices).
SimResult RunSync(gossip::Mode mode, const std::map<size_t, node::StragglerOptions>& straggle,
                  int cores = 0, Duration step_cost = Duration(0), const gossip::PsOptions& ps = {}) {
  constexpr int64_t kRows = 1200;
  // 12 workers: a tree of n = 3, L = 2, or one layer of 12 under the parameter servers.
  auto plan = mode == gossip::Mode::kPs ? gossip::MakeSyncPlan(mode, 12, 1, 0, 7, ps)
                                        : gossip::MakeSyncPlan(mode, 3, 2, 1, 7);
  EXPECT_TRUE(plan.ok()) << plan.status();
  SyntheticWorkload w(static_cast<size_t>(plan->processes), 256, kRows, kRows, 0.5, 3);
  SimOptions o;
  o.kind = SimKind::kSync;
  o.nodes = static_cast<size_t>(plan->processes);
  o.plan = *plan;
  o.link = *ParseLink("10GbE");
  o.membership.probe_interval = milliseconds(200);
  o.membership.probe_timeout = milliseconds(80);
  o.membership.join_retry = milliseconds(400);
  o.sync.batch = kRows;
  o.sync.iterations = 20;
  o.sync.lr = 0.5;
  o.sync.eval_every = 0;
  o.sync.linger = milliseconds(100);
  o.cost_per_sample = std::chrono::microseconds(100);
  o.cost_per_step = step_cost;
  o.cores = cores;
  o.straggle = straggle;
  o.duration = seconds(120);
  auto sim = Simulator::Create(o, &w);
  EXPECT_TRUE(sim.ok()) << sim.status();
  return (*sim)->Run();
}

double MeanMs(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

TEST(SimulatorTest, SyncModesComputeTheSameStepsAndOnlyCodingIgnoresAStraggler) {
  // Workers 3, 6, 9, 12 (one child of every parent) at 5x: processes 3, 6, 9, 12 after a tree's
  // root, 2, 5, 8, 11 of a ring.
  node::StragglerOptions slow;
  slow.slowdown = 5;
  std::map<std::string, double> base_ms, slow_ms;
  std::optional<double> reference;
  for (gossip::Mode mode :
       {gossip::Mode::kCodedTree, gossip::Mode::kTree, gossip::Mode::kGc, gossip::Mode::kRing}) {
    const std::string name(gossip::ModeName(mode));
    std::map<size_t, node::StragglerOptions> stragglers;
    for (size_t w : {3, 6, 9, 12}) stragglers[mode == gossip::Mode::kRing ? w - 1 : w] = slow;
    for (bool with : {false, true}) {
      const SimResult r =
          RunSync(mode, with ? stragglers : std::map<size_t, node::StragglerOptions>{});
      if (!r.all_over) {
        std::printf("virtual %.2f events %llu\n", r.virtual_s, (unsigned long long)r.events);
        for (const SimNodeResult& n : r.nodes)
          std::printf(
              "node %llu steps %llu fin %s over %.2f view %zu rej %llu recv %llu status %s\n",
              (unsigned long long)n.id, (unsigned long long)n.steps, n.finished.c_str(), n.over_s,
              n.live_view, (unsigned long long)n.rejected, (unsigned long long)n.messages_received,
              n.status.c_str());
      }
      ASSERT_TRUE(r.all_over) << name;
      for (const SimNodeResult& n : r.nodes)
        EXPECT_TRUE(n.ok) << name << " node " << n.id << ": " << n.status;
      ASSERT_EQ(r.iteration_ms.size(), 20u) << name;
      (with ? slow_ms : base_ms)[name] = MeanMs(r.iteration_ms);
      // Exact decoding: every mode takes the same 20 steps of full-batch gradient descent.
      const SimNodeResult& root = r.nodes[0];  // rank 0: the root, or the ring's first
      ASSERT_TRUE(root.optimum_distance.has_value()) << name;
      if (!reference) reference = *root.optimum_distance;
      EXPECT_NEAR(*root.optimum_distance, *reference, 1e-4) << name;
    }
    std::printf("%-10s iteration %.2f ms, with one 5x straggler per parent %.2f ms (%.2fx)\n",
                name.c_str(), base_ms[name], slow_ms[name], slow_ms[name] / base_ms[name]);
  }
  EXPECT_LT(slow_ms["coded-tree"], 1.2 * base_ms["coded-tree"]);
  EXPECT_GT(slow_ms["tree"], 2.5 * base_ms["tree"]);
  EXPECT_GT(slow_ms["ring"], 2.5 * base_ms["ring"]);
}

// The parameter server in the simulator: the synchronous forms take ring's 20 steps
// (one server or the model over three), and with one worker at 5x the synchronous server's
// budget takes much longer while one backup worker or asynchrony hardly waits for it.
TEST(SimulatorTest, ParameterServerFormsTakeRingsStepsAndOnlyTheSynchronousWaits) {
  const SimResult ring = RunSync(gossip::Mode::kRing, {});
  ASSERT_TRUE(ring.all_over && ring.nodes[0].optimum_distance.has_value());
  node::StragglerOptions slow;
  slow.slowdown = 5;
  struct Form {
    std::string name;
    gossip::PsOptions ps;
  };
  const Form forms[] = {{"full", {.servers = 1}},
                        {"full, 3 servers", {.servers = 3}},
                        {"full, 1 backup", {.servers = 1, .backup = 1}},
                        {"async", {.servers = 1, .sync = gossip::PsSync::kAsync}}};
  std::map<std::string, double> ratio;
  for (const Form& f : forms) {
    double budget_s[2] = {0, 0};
    for (bool with : {false, true}) {
      std::map<size_t, node::StragglerOptions> stragglers;
      if (with) stragglers[static_cast<size_t>(f.ps.servers) + 4] = slow;  // worker 5
      const SimResult r = RunSync(gossip::Mode::kPs, stragglers, 0, Duration(0), f.ps);
      ASSERT_TRUE(r.all_over) << f.name;
      for (const SimNodeResult& n : r.nodes) EXPECT_TRUE(n.ok) << f.name << ": " << n.status;
      const SimNodeResult& server = r.nodes[0];
      budget_s[with] = server.finished_s - r.first_step_s;
      if (f.ps.sync == gossip::PsSync::kFull && f.ps.backup == 0) {
        // Full batch, every worker: the step ring all-reduce takes.
        ASSERT_TRUE(server.optimum_distance.has_value()) << f.name;
        EXPECT_NEAR(*server.optimum_distance, *ring.nodes[0].optimum_distance, 1e-4) << f.name;
      }
    }
    ratio[f.name] = budget_s[1] / budget_s[0];
    std::printf("ps %-16s budget %.3f s, with worker 5 at 5x %.3f s (%.2fx)\n", f.name.c_str(),
                budget_s[0], budget_s[1], ratio[f.name]);
  }
  EXPECT_GT(ratio["full"], 2.5);
  EXPECT_GT(ratio["full, 3 servers"], 2.5);
  EXPECT_LT(ratio["full, 1 backup"], 1.3);
  EXPECT_LT(ratio["async"], 1.3);
}

// A ring of more than 32 ranks finishes: a rank still settling keeps every chunk its
// predecessor sent before it (up to N - 1, more than the 1024 / N a sender keeps in the other
// modes; 48 ranks stalled before, their chunks dropped as superseded).
TEST(SimulatorTest, ARingOfFortyEightAssemblesAndFinishes) {
  constexpr int64_t kRows = 48 * 16;
  auto plan = gossip::MakeSyncPlan(gossip::Mode::kRing, 48, 1, 0, 7);
  ASSERT_TRUE(plan.ok()) << plan.status();
  SyntheticWorkload w(static_cast<size_t>(plan->processes), 256, kRows, kRows, 0.5, 3);
  SimOptions o;
  o.kind = SimKind::kSync;
  o.nodes = static_cast<size_t>(plan->processes);
  o.plan = *plan;
  o.link = *ParseLink("1GbE");
  o.sync.batch = kRows;
  o.sync.iterations = 4;
  o.sync.eval_every = 0;
  o.sync.linger = milliseconds(100);
  o.duration = seconds(120);
  auto sim = Simulator::Create(o, &w);
  ASSERT_TRUE(sim.ok()) << sim.status();
  const SimResult r = (*sim)->Run();
  ASSERT_TRUE(r.all_over) << "stalled at " << r.virtual_s << " virtual s";
  for (const SimNodeResult& n : r.nodes) EXPECT_TRUE(n.ok) << "node " << n.id << ": " << n.status;
  EXPECT_EQ(r.iteration_ms.size(), 4u);
}

// Shared cores (cpu.h): the ring's 12 processes on 3 cores compute 4 at a time per core, so an
// iteration (10 ms of compute per worker on its own core) takes about 4x as long, with the same
// steps; a cost per step adds to every iteration.
TEST(SimulatorTest, SharedCoresAndAStepCostLengthenIterations) {
  const SimResult own = RunSync(gossip::Mode::kRing, {});
  const SimResult shared = RunSync(gossip::Mode::kRing, {}, 3);
  const SimResult stepped = RunSync(gossip::Mode::kRing, {}, 0, milliseconds(5));
  for (const SimResult* r : {&own, &shared, &stepped}) ASSERT_TRUE(r->all_over);
  const double a = MeanMs(own.iteration_ms), b = MeanMs(shared.iteration_ms),
               c = MeanMs(stepped.iteration_ms);
  std::printf("ring iteration: %.2f ms, on 3 shared cores %.2f ms, with 5 ms per step %.2f ms\n", a,
              b, c);
  EXPECT_GT(b, a + 25.0);  // 10 ms of compute becomes 40
  EXPECT_LT(b, a + 35.0);
  EXPECT_GT(c, a + 4.0);
  EXPECT_LT(c, a + 6.0);
  EXPECT_NEAR(*shared.nodes[0].optimum_distance, *own.nodes[0].optimum_distance, 1e-6);
}

// A forward clock jump (SimClockJump) of 30 probe periods passes every membership timer of the
// jumped node at once: its pending probe times out, and the indirect probes it then sends are
// answered, so it declares no live member dead and every view stays whole.
TEST(SimulatorTest, AClockJumpDeclaresNoLiveMemberDead) {
  for (uint64_t seed : {1, 2, 3}) {
    std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
    SCOPED_TRACE("seed " + std::to_string(seed));
    SimOptions o;
    o.kind = SimKind::kMembership;
    o.nodes = 6;
    o.duration = seconds(6);
    o.membership.probe_interval = milliseconds(100);
    o.membership.probe_timeout = milliseconds(40);
    o.seed = seed;
    o.check_invariants = true;
    o.clock_jumps = {{1, milliseconds(1500), seconds(3)}};
    auto sim = Simulator::Create(o, nullptr);
    ASSERT_TRUE(sim.ok()) << sim.status();
    const SimResult r = (*sim)->Run();
    EXPECT_EQ(r.violation_count, 0u);
    for (const SimNodeResult& n : r.nodes) EXPECT_EQ(n.live_view, o.nodes) << "node " << n.id;
    size_t dead = 0;
    for (const SimMemberEvent& e : r.member_events) {
      dead += e.event.kind == gossip::MemberEvent::Kind::kDead;
    }
    EXPECT_EQ(dead, 0u);
  }
}

// A synchronous run of `plan` on `link` for the fault tests: every process computes its share
// of `rows` per iteration, 100 ms probes, no evaluation, invariants checked.
SimOptions FaultSyncOptions(const gossip::SyncPlan& plan, const std::string& link, int64_t rows,
                            uint64_t iterations, Duration stall, Duration duration) {
  SimOptions o;
  o.kind = SimKind::kSync;
  o.nodes = static_cast<size_t>(plan.processes);
  o.plan = plan;
  o.link = *ParseLink(link);
  o.membership.probe_interval = milliseconds(100);
  o.membership.probe_timeout = milliseconds(40);
  o.sync.batch = rows;
  o.sync.iterations = iterations;
  o.sync.eval_every = 0;
  o.sync.linger = milliseconds(100);
  o.sync.stall_timeout = stall;
  o.duration = duration;
  o.check_invariants = true;
  return o;
}

// A ring rank whose clock jumps 3x past the stall bound (1 s), three times while it waits for a
// slower rank, does not take its own absence for its peers' silence: the stall bound skips the
// gap, and every rank ends its run well.
TEST(SimulatorTest, AClockJumpPastTheStallBoundIsNotAStall) {
  constexpr int64_t kRows = 400;
  auto plan = gossip::MakeSyncPlan(gossip::Mode::kRing, 4, 1, 0, 7);
  ASSERT_TRUE(plan.ok()) << plan.status();
  SyntheticWorkload w(static_cast<size_t>(plan->processes), 64, kRows, kRows, 0.5, 3);
  SimOptions o = FaultSyncOptions(*plan, "1GbE", kRows, 30, seconds(1), seconds(60));
  o.cost_per_sample = std::chrono::microseconds(500);
  for (bool jump : {false, true}) {
    SCOPED_TRACE(jump ? "with the jump" : "without");
    // Rank 3 computes 4x slower, so rank 1 spends most of its time waiting (not computing)
    // when its clock jumps.
    o.straggle[3].slowdown = 4;
    if (jump) {
      o.clock_jumps = {{1, milliseconds(300), seconds(3)},
                       {1, milliseconds(700), seconds(3)},
                       {1, milliseconds(1100), seconds(3)}};
    }
    auto sim = Simulator::Create(o, &w);
    ASSERT_TRUE(sim.ok()) << sim.status();
    const SimResult r = (*sim)->Run();
    std::printf("%s: %zu iterations over %.2f virtual s\n", jump ? "jumped" : "calm",
                r.iteration_ms.size(), r.virtual_s);
    ASSERT_TRUE(r.all_over);
    EXPECT_EQ(r.violation_count, 0u);
    for (const SimNodeResult& n : r.nodes) EXPECT_TRUE(n.ok) << "node " << n.id << ": " << n.status;
    EXPECT_EQ(r.iteration_ms.size(), 30u);
    ASSERT_GT(r.virtual_s, 1.0) << "the run must outlast the jump's instant";
  }
}

// An insider gone hostile (SimAttack) sends a hostile copy ahead of each of its training
// messages: a step clock out of bounds, or a NaN under a valid checksum. Its receivers refuse
// every one by its reason, and every model ends as without the attack, bit for bit.
TEST(SimulatorTest, AnInsidersHostileCopiesAreRefusedByReasonAndChangeNoModel) {
  constexpr uint64_t kSeed = 5;
  std::printf("seed %llu\n", static_cast<unsigned long long>(kSeed));
  auto run = [&](std::vector<SimAttack> attacks) {
    SyntheticWorkload w(4, 1000, 6000, 64, 0.5, kSeed);
    SimOptions o = GossipOptions(4, 20 * 6000);
    o.seed = kSeed;
    o.link = LinkSpec{};  // no bandwidth: the hostile copies cost no time
    // QSGD levels: a NaN fits in their scale (a narrowed float coding holds none).
    o.gossip.choco.compressor = *coding::ParseCompressorSpec("qsgd:16");
    o.check_invariants = true;
    o.attacks = std::move(attacks);
    auto sim = Simulator::Create(o, &w);
    EXPECT_TRUE(sim.ok()) << sim.status();
    return (*sim)->Run();
  };
  const SimResult calm = run({});
  ASSERT_TRUE(calm.all_over);
  for (const auto& [kind, reason] : {std::pair{SimAttackKind::kClock, "implausible_clock"},
                                     std::pair{SimAttackKind::kNonFinite, "non_finite"}}) {
    SCOPED_TRACE(reason);
    const SimResult r = run({{1, Duration(0), kind}});
    ASSERT_TRUE(r.all_over);
    EXPECT_EQ(r.violation_count, 0u) << (r.violations.empty() ? "" : r.violations[0]);
    EXPECT_GT(r.hostile_messages, 0u);
    // Refusals beyond the calm run's: all of the attack's reason.
    int64_t refused = 0;
    for (size_t i = 0; i < r.nodes.size(); ++i) {
      const SimNodeResult& n = r.nodes[i];
      EXPECT_TRUE(n.ok) << n.status;
      EXPECT_EQ(n.model_digest, calm.nodes[i].model_digest) << "node " << n.id;
      std::map<std::string, int64_t> extra;
      for (const auto& [why, count] : n.refused_by_reason) extra[why] += count;
      for (const auto& [why, count] : calm.nodes[i].refused_by_reason) extra[why] -= count;
      for (const auto& [why, count] : extra) {
        if (why == reason) {
          refused += count;
        } else {
          // A hostile copy's delivery is a turn of the receiver's loop, as in the real driver:
          // the order of its decisions may move by an event (one more or less outlier).
          EXPECT_LE(std::abs(count), 2) << "node " << n.id << ": " << why;
        }
      }
    }
    std::printf("%s: %llu hostile copies sent, %lld more refused than without them\n", reason,
                static_cast<unsigned long long>(r.hostile_messages),
                static_cast<long long>(refused));
    // Every hostile copy that reached a running node was refused (a few reach none: sent to a
    // node whose run was over).
    EXPECT_GT(refused, 0);
    EXPECT_LE(refused, static_cast<int64_t>(r.hostile_messages));
    EXPECT_GE(refused, static_cast<int64_t>(r.hostile_messages * 9 / 10));
  }
}

// Lost messages in the synchronous modes: a rank that takes nothing for a quarter of the stall
// bound sends its last messages again (the receivers drop what they already have), so 2 % loss
// no longer ends a ring, a tree or a parameter server at the bound; every run ends well.
TEST(SimulatorTest, SynchronousRanksSendAgainWhatALossyLinkLost) {
  for (gossip::Mode mode : {gossip::Mode::kRing, gossip::Mode::kCodedTree, gossip::Mode::kPs}) {
    for (uint64_t seed : {1, 2, 3}) {
      const std::string name(gossip::ModeName(mode));
      SCOPED_TRACE(name + " seed " + std::to_string(seed));
      constexpr int64_t kRows = 480;
      auto plan = mode == gossip::Mode::kRing ? gossip::MakeSyncPlan(mode, 4, 1, 0, 7)
                                              : gossip::MakeSyncPlan(mode, 3, 1, 1, 7);
      ASSERT_TRUE(plan.ok()) << plan.status();
      SyntheticWorkload w(static_cast<size_t>(plan->processes), 64, kRows, kRows, 0.5, 3);
      SimOptions o = FaultSyncOptions(*plan, "10GbE,loss=0.02", kRows, 40, seconds(2), seconds(120));
      o.seed = seed;
      auto sim = Simulator::Create(o, &w);
      ASSERT_TRUE(sim.ok()) << sim.status();
      const SimResult r = (*sim)->Run();
      uint64_t lost = 0;
      for (const SimNodeResult& n : r.nodes) lost += n.lost;
      std::printf("%s seed %llu: %llu messages lost, %.2f virtual s\n", name.c_str(),
                  static_cast<unsigned long long>(seed), static_cast<unsigned long long>(lost),
                  r.virtual_s);
      ASSERT_TRUE(r.all_over);
      EXPECT_EQ(r.violation_count, 0u);
      EXPECT_GT(lost, 0u) << "a run worth the name loses messages";
      for (const SimNodeResult& n : r.nodes) {
        EXPECT_TRUE(n.ok) << "node " << n.id << ": " << n.status;
      }
    }
  }
}

TEST(SimulatorTest, AClockJumpMustGoForwardAndNameANode) {
  SimOptions o;
  o.kind = SimKind::kMembership;
  o.clock_jumps = {{0, seconds(1), Duration(0)}};
  EXPECT_FALSE(o.Validate().ok());
  o.clock_jumps = {{o.nodes, seconds(1), seconds(1)}};
  EXPECT_FALSE(o.Validate().ok());
  o.clock_jumps = {{0, seconds(1), seconds(1)}};
  EXPECT_TRUE(o.Validate().ok());
}

}  // namespace
}  // namespace murmur::sim
