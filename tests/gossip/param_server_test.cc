// The parameter-server roles (gossip/param_server.h) alone — the SSP gate, the async apply order
// and its staleness scaling, the backup-worker cut — and whole `ps` runs of SyncNode on the fake
// network under a manual clock: every form ends its budget with a straggler among the workers, a
// dead worker is dropped, a dead server fails the run with the reason. 20 seeds each, printed on
// failure.

#include "gossip/param_server.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "base/check.h"
#include "coding/update.h"
#include "coding/update_codec.h"
#include "gossip/sync_node.h"
#include "tests/testing/node_cluster.h"

namespace murmur::gossip {
namespace {

using std::chrono::milliseconds;

constexpr uint64_t kSeeds = 20;
constexpr uint32_t kDim = 6;

PsServer MakeServer(PsOptions ps, int64_t workers, int64_t batch = 60, double momentum = 0.9) {
  auto server = PsServer::Create({.server = 0,
                                  .workers = workers,
                                  .batch = batch,
                                  .dimension = kDim,
                                  .ps = ps,
                                  .momentum = momentum},
                                 std::vector<float>(kDim, 0.0f));
  MURMUR_CHECK_OK(server.status());
  return *std::move(server);
}

CodedMessage Push(uint64_t version) {
  return {CodedMessage::Kind::kPartialGradient, version, 0, kDim};
}

// Replies (worker ranks) among `actions`, and the one Aggregated if any.
std::vector<int64_t> Replies(const std::vector<CodedAction>& actions) {
  std::vector<int64_t> out;
  for (const auto& a : actions) {
    if (const auto* send = std::get_if<CodedSend>(&a)) out.push_back(send->to);
  }
  return out;
}
const Aggregated* AggregatedOf(const std::vector<CodedAction>& actions) {
  for (const auto& a : actions) {
    if (const auto* done = std::get_if<Aggregated>(&a)) return done;
  }
  return nullptr;
}

TEST(PsSyncSpecTest, ParsesTheThreeFormsAndRefusesTheRestWithTheReason) {
  EXPECT_EQ(ParsePsSync("full")->sync, PsSync::kFull);
  EXPECT_EQ(ParsePsSync("async")->sync, PsSync::kAsync);
  EXPECT_EQ(ParsePsSync("ssp:3")->ssp_bound, 3);
  for (const char* bad : {"ssp", "ssp:", "ssp:-1", "ssp:2x", "sync", ""}) {
    EXPECT_FALSE(ParsePsSync(bad).ok()) << bad;
  }
  EXPECT_FALSE(ValidatePs({.backup = 4}, 4).ok());  // backup < N
  EXPECT_FALSE(ValidatePs({.sync = PsSync::kAsync, .backup = 1}, 4).ok());
  EXPECT_FALSE(ValidatePs({.staleness_lr = true}, 4).ok());  // full is never stale
  EXPECT_FALSE(ValidatePs({.servers = 65}, 4).ok());
  EXPECT_FALSE(ValidatePs({.momentum = PsMomentum::kDana}, 4).ok());  // full: one velocity
  EXPECT_TRUE(ValidatePs({.sync = PsSync::kAsync, .momentum = PsMomentum::kDana}, 4).ok());
}

TEST(PsSliceTest, SlicesCoverTheModelContiguously) {
  for (size_t d : {1u, 5u, 64u, 1000u}) {
    for (int64_t k = 1; k <= 7; ++k) {
      size_t next = 0;
      for (int64_t s = 0; s < k; ++s) {
        const auto [begin, end] = PsSlice(d, k, s);
        EXPECT_EQ(begin, next);
        next = end;
      }
      EXPECT_EQ(next, d) << "d " << d << ", K " << k;
    }
  }
}

// Workers push in a random order among those the server has answered; every reply keeps the
// worker within S pushes of the slowest live worker, and nobody deadlocks.
TEST(PsServerTest, SspGateKeepsEveryWorkerWithinSOfTheSlowest) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const int64_t n = 2 + static_cast<int64_t>(seed % 4), bound = static_cast<int64_t>(seed % 3);
    PsServer server = MakeServer({.sync = PsSync::kSsp, .ssp_bound = bound}, n);
    std::vector<int64_t> pushes(static_cast<size_t>(n), 0);
    std::vector<bool> ready(static_cast<size_t>(n), true);
    std::vector<uint64_t> version(static_cast<size_t>(n), 0);
    int64_t gated_seen = 0;
    for (int round = 0; round < 200; ++round) {
      std::vector<int64_t> can;
      for (int64_t w = 0; w < n; ++w) {
        if (ready[static_cast<size_t>(w)]) can.push_back(w);
      }
      ASSERT_FALSE(can.empty()) << "every worker waits: the gate deadlocked";
      const int64_t w = can[rng() % can.size()];
      ready[static_cast<size_t>(w)] = false;
      ++pushes[static_cast<size_t>(w)];
      server.Step(w + 1, Push(version[static_cast<size_t>(w)]), std::vector<float>(kDim, 1.0f));
      ASSERT_NE(AggregatedOf(server.TakeOutput()), nullptr);
      server.Applied(std::vector<float>(kDim, 0.0f), 0.1);
      const auto replies = Replies(server.TakeOutput());
      if (std::find(replies.begin(), replies.end(), w + 1) == replies.end()) ++gated_seen;
      const int64_t slowest = *std::min_element(pushes.begin(), pushes.end());
      for (int64_t r : replies) {
        const auto v = static_cast<size_t>(r - 1);
        EXPECT_LE(pushes[v] - slowest, bound) << "worker " << v << " let through too far ahead";
        ready[v] = true;
        version[v] = server.version();
      }
    }
    EXPECT_EQ(static_cast<int64_t>(server.stats().gated), gated_seen);
    EXPECT_GT(gated_seen, 0);  // random orders put someone ahead
  }
}

// Async applies every gradient at once, in the order it arrives, each as its own update with the
// staleness the server saw; with staleness_lr its weight is 1 / (B max(1, τ)).
TEST(PsServerTest, AsyncAppliesInArrivalOrderWithItsStaleness) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const int64_t n = 3 + static_cast<int64_t>(seed % 3), batch = 60;
    const bool scaled = seed % 2 == 0;
    PsServer server = MakeServer({.sync = PsSync::kAsync, .staleness_lr = scaled}, n, batch);
    std::vector<uint64_t> version(static_cast<size_t>(n), 0);
    uint64_t stale_sum = 0, stale_max = 0;
    for (int i = 0; i < 100; ++i) {
      const auto w = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
      const auto value = static_cast<float>(i + 1);  // which push this is
      server.Step(w + 1, Push(version[static_cast<size_t>(w)]), std::vector<float>(kDim, value));
      const auto actions = server.TakeOutput();
      const Aggregated* done = AggregatedOf(actions);
      ASSERT_NE(done, nullptr) << "async never waits";
      EXPECT_EQ(done->gradient[0], value) << "applied out of arrival order";
      const uint64_t tau = server.version() - version[static_cast<size_t>(w)];
      stale_sum += tau;
      stale_max = std::max(stale_max, tau);
      const double expected =
          (scaled ? 1.0 / static_cast<double>(std::max<uint64_t>(1, tau)) : 1.0) / batch;
      EXPECT_DOUBLE_EQ(done->weight, expected);
      server.Applied(std::vector<float>(kDim, value), 0.1);
      EXPECT_EQ(Replies(server.TakeOutput()), std::vector<int64_t>{w + 1});
      version[static_cast<size_t>(w)] = server.version();
    }
    EXPECT_EQ(server.stats().applied, 100u);
    EXPECT_EQ(server.stats().staleness_sum, stale_sum);
    EXPECT_EQ(server.stats().staleness_max, stale_max);
  }
}

// DANA-Zero: each gradient moves its own worker's velocity, v_w = μ v_w + c g / B (c = 1 / τ with
// staleness_lr), which is what the node steps with (no velocity of its own); every reply is the
// look-ahead θ - lr μ Σ v over the live workers; a dropped worker's velocity leaves the sum.
// Checked against a double-precision reference over random arrival orders.
TEST(PsServerTest, DanaStepsWithEachWorkersVelocityAndRepliesTheLookAhead) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    const int64_t n = 2 + static_cast<int64_t>(seed % 4), batch = 32;
    const double mu = seed % 2 == 0 ? 0.9 : 0.5, lr = 0.05 * static_cast<double>(1 + seed % 3);
    const bool scaled = seed % 3 == 0;
    const PsOptions ps{.sync = seed % 4 == 0 ? PsSync::kSsp : PsSync::kAsync,
                       .ssp_bound = 1000,
                       .staleness_lr = scaled,
                       .momentum = PsMomentum::kDana};
    PsServer server = MakeServer(ps, n, batch, mu);
    ASSERT_TRUE(server.dana());
    std::vector<std::vector<double>> velocity(static_cast<size_t>(n), std::vector<double>(kDim));
    std::vector<double> theta(kDim, 0.0);
    std::vector<uint64_t> version(static_cast<size_t>(n), 0);
    std::vector<bool> live(static_cast<size_t>(n), true);
    for (int i = 0; i < 60; ++i) {
      if (i == 40) {  // the last worker dies: its momentum no longer moves the model
        server.DropWorker(n);
        live[static_cast<size_t>(n - 1)] = false;
        velocity[static_cast<size_t>(n - 1)].assign(kDim, 0.0);
        ASSERT_TRUE(server.TakeOutput().empty());
      }
      auto w = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
      if (!live[static_cast<size_t>(w)]) w = 0;
      std::vector<float> g(kDim);
      for (float& x : g) x = uniform(rng);
      const uint64_t tau = server.version() - version[static_cast<size_t>(w)];
      server.Step(w + 1, Push(version[static_cast<size_t>(w)]), g);
      const auto actions = server.TakeOutput();
      const Aggregated* done = AggregatedOf(actions);
      ASSERT_NE(done, nullptr);
      EXPECT_TRUE(done->with_momentum);
      EXPECT_EQ(done->weight, 1.0);
      const double c = (scaled ? 1.0 / static_cast<double>(std::max<uint64_t>(1, tau)) : 1.0) /
                       static_cast<double>(batch);
      auto& v = velocity[static_cast<size_t>(w)];
      for (size_t j = 0; j < kDim; ++j) {
        v[j] = mu * v[j] + c * g[j];
        EXPECT_NEAR(done->gradient[j], v[j], 1e-6 * (1 + std::abs(v[j]))) << "coordinate " << j;
        theta[j] -= lr * v[j];
      }
      server.Applied(std::vector<float>(theta.begin(), theta.end()), lr);
      const auto replies = server.TakeOutput();
      ASSERT_EQ(replies.size(), 1u);
      const auto& reply = std::get<CodedSend>(replies[0]);
      EXPECT_EQ(reply.to, w + 1);
      for (size_t j = 0; j < kDim; ++j) {
        double sum = 0;
        for (const auto& u : velocity) sum += u[j];
        const double expected = static_cast<float>(theta[j]) - lr * mu * sum;
        EXPECT_NEAR(reply.vector[j], expected, 1e-5) << "coordinate " << j;
      }
      version[static_cast<size_t>(w)] = server.version();
    }
  }
}

// DANA's velocities are bounded in bytes: a server refuses what would exceed kMaxDanaBytes.
TEST(PsServerTest, DanaRefusesVelocitiesBeyondItsMemoryBound) {
  const PsOptions ps{.sync = PsSync::kAsync, .momentum = PsMomentum::kDana};
  const auto workers = static_cast<int64_t>(kMaxDanaBytes / (kDim * sizeof(float))) + 1;
  const auto refused = PsServer::Create(
      {.workers = workers, .batch = workers, .dimension = kDim, .ps = ps, .momentum = 0.9},
      std::vector<float>(kDim, 0.0f));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("--servers"), std::string::npos)
      << refused.status().message();
  EXPECT_TRUE(PsServer::Create({.workers = 4, .batch = 4, .dimension = kDim, .ps = ps},
                               std::vector<float>(kDim, 0.0f))
                  .ok());
}

// Full with b backup workers: the step comes with the first N - b gradients, as their mean; the
// rest of the iteration is late; the model goes to every worker.
TEST(PsServerTest, BackupWorkersCutTheIterationAtNMinusB) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const int64_t n = 4 + static_cast<int64_t>(seed % 3), b = 1 + static_cast<int64_t>(seed % 2),
                  batch = 7 * n + static_cast<int64_t>(seed % 5);
    PsServer server = MakeServer({.backup = b}, n, batch);
    for (uint64_t t = 0; t < 5; ++t) {
      std::vector<int64_t> order(static_cast<size_t>(n));
      for (int64_t w = 0; w < n; ++w) order[static_cast<size_t>(w)] = w;
      std::shuffle(order.begin(), order.end(), rng);
      int64_t positions = 0;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t w = order[static_cast<size_t>(i)];
        server.Step(w + 1, Push(t), std::vector<float>(kDim, 1.0f));
        const auto actions = server.TakeOutput();
        if (i < n - b) positions += batch * (w + 1) / n - batch * w / n;
        if (i < n - b - 1) {
          EXPECT_EQ(AggregatedOf(actions), nullptr) << "cut before N - b gradients";
        } else if (i == n - b - 1) {
          const Aggregated* done = AggregatedOf(actions);
          ASSERT_NE(done, nullptr);
          EXPECT_EQ(done->iteration, t);
          EXPECT_DOUBLE_EQ(done->weight, 1.0 / static_cast<double>(positions));
          EXPECT_FLOAT_EQ(done->gradient[0], static_cast<float>(n - b));
          server.Applied(std::vector<float>(kDim, 0.0f), 0.1);
          EXPECT_EQ(Replies(server.TakeOutput()).size(), static_cast<size_t>(n));
        } else {
          EXPECT_EQ(AggregatedOf(actions), nullptr) << "a backup worker's gradient counted";
        }
      }
    }
    EXPECT_EQ(server.stats().iterations, 5u);
    EXPECT_EQ(server.stats().late_dropped, static_cast<uint64_t>(5 * b));
    EXPECT_EQ(server.stats().children_ignored, static_cast<uint64_t>(5 * b));
  }
}

TEST(PsServerTest, RefusesWhatIsNotAWorkersPushForThisServer) {
  PsServer server = MakeServer({.sync = PsSync::kAsync}, 3);
  server.Step(0, Push(0), std::vector<float>(kDim, 1.0f));  // a server's rank
  server.Step(4, Push(0), std::vector<float>(kDim, 1.0f));  // beyond the workers
  server.Step(1, Push(1), std::vector<float>(kDim, 1.0f));  // a version not served yet
  server.Step(1, Push(0), std::vector<float>(kDim - 1, 1.0f));
  server.Step(1, {CodedMessage::Kind::kModel, 0, 0, kDim}, std::vector<float>(kDim, 1.0f));
  EXPECT_EQ(server.stats().rejected, 5u);
  EXPECT_TRUE(server.TakeOutput().empty());
}

// Compressed pushes keep what they did not send: over two pushes of the same gradient, what
// reached each server plus the worker's residual is exactly twice the gradient (error feedback).
TEST(PsWorkerTest, CompressedPushesCarryTheRestInTheResidual) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const int64_t servers = 1 + static_cast<int64_t>(seed % 3);
    const uint32_t dim = 40 + static_cast<uint32_t>(seed);
    auto spec = coding::ParseCompressorSpec("topk:0.25");
    ASSERT_TRUE(spec.ok());
    auto worker = PsWorker::Create({.rank = servers,
                                    .workers = 2,
                                    .dimension = dim,
                                    .ps = {.servers = servers},
                                    .compress = *spec},
                                   std::vector<float>(dim, 0.0f));
    ASSERT_TRUE(worker.ok()) << worker.status();
    std::normal_distribution<float> normal;
    std::vector<float> g(dim);
    for (float& v : g) v = normal(rng);
    std::vector<double> reached(dim, 0.0);
    worker->Start();
    worker->TakeOutput();
    for (uint64_t push = 0; push < 2; ++push) {
      worker->Step(OwnPart{push == 0 ? 0u : 1u, g}, kernels::Device::Cpu());
      for (const auto& a : worker->TakeOutput()) {
        const auto* send = std::get_if<CodedSend>(&a);
        ASSERT_NE(send, nullptr);
        ASSERT_FALSE(send->encoded.empty()) << "a compressed push goes as an encoded update";
        const auto [begin, end] = PsSlice(dim, servers, send->to);
        coding::Update u;
        ASSERT_TRUE(
            coding::DecodeUpdate(send->encoded, static_cast<uint32_t>(end - begin), u).ok());
        EXPECT_FALSE(u.dense);
        std::vector<float> dense(end - begin);
        coding::Densify(u, dense);
        for (size_t i = 0; i < dense.size(); ++i) reached[begin + i] += dense[i];
      }
      // The reply that lets the worker compute again (async form: one per server).
      for (int64_t k = 0; k < servers; ++k) {
        const auto [begin, end] = PsSlice(dim, servers, k);
        worker->Step(k, {CodedMessage::Kind::kModel, push + 1, static_cast<uint32_t>(k), dim},
                     std::vector<float>(end - begin, 0.0f));
      }
      worker->TakeOutput();
    }
    EXPECT_EQ(worker->stats().iterations, 2u);
    const std::vector<float> residual = worker->residual();
    ASSERT_EQ(residual.size(), dim);
    double unsent = 0;
    for (size_t i = 0; i < dim; ++i) {
      EXPECT_NEAR(reached[i] + residual[i], 2.0 * g[i], 1e-5) << "coordinate " << i;
      unsent += std::abs(residual[i]);
    }
    EXPECT_GT(unsent, 0.0);  // top-25 % left most of it behind
  }
}

// ---- Whole runs: SyncNode in ps mode on the fake network ----

using Cluster = murmur::testing::NodeCluster<SyncNode>;

Cluster MakeCluster(PsOptions ps, int workers, uint64_t seed, int64_t iterations = 6,
                    std::optional<coding::CompressorOptions> compress = std::nullopt) {
  const SyncPlan plan = *MakeSyncPlan(Mode::kPs, workers, 1, 0, 1, ps);
  Cluster c(static_cast<size_t>(plan.processes), testing::FastMembership(), seed,
            [plan, iterations, compress](size_t i, Cluster::Node&, TimePoint now) {
              SyncNodeOptions o;
              o.push_compress = compress;
              o.self = Cluster::Id(i);
              o.batch = 60;
              o.momentum = 0.9;
              o.iterations = iterations;
              o.eval_every = 2;
              o.settle = milliseconds(200);
              o.join_timeout = std::chrono::seconds(10);
              o.linger = milliseconds(100);
              auto node = SyncNode::Create(plan, o, std::vector<float>(kDim, 0.0f), now);
              EXPECT_TRUE(node.ok()) << node.status().ToString();
              return *std::move(node);
            });
  c.gradient = [](size_t, const ComputeGradient&) { return std::vector<float>(kDim, 1.0f); };
  return c;
}

bool AllAssembled(Cluster& c) {
  for (size_t i = 0; i < c.size(); ++i) {
    if (!c.machine(i).assembled()) return false;
  }
  return true;
}

// Every form ends its budget on every node, with one worker 4× slower than the rest; the
// servers applied the budget's gradients.
TEST(PsNodeTest, EveryFormEndsItsBudgetWithASlowWorker) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const PsOptions forms[] = {
        {.servers = 1},
        {.servers = 2, .backup = 1},
        {.servers = 2, .sync = PsSync::kAsync},
        {.servers = 1, .sync = PsSync::kSsp, .ssp_bound = 1},
        {.servers = 2, .sync = PsSync::kAsync, .momentum = PsMomentum::kDana},
        {.servers = 1, .sync = PsSync::kSsp, .ssp_bound = 1, .momentum = PsMomentum::kDana}};
    const PsOptions ps = forms[seed % 6];
    const int workers = 3;
    // Every other seed's workers push top-half updates (sparse frames the servers densify).
    std::optional<coding::CompressorOptions> compress;
    if (seed % 2 == 1) compress = *coding::ParseCompressorSpec("topk:0.5");
    Cluster c = MakeCluster(ps, workers, seed, 6, compress);
    const size_t slow = static_cast<size_t>(ps.servers) + seed % workers;
    c.node(slow).step_time = milliseconds(8);
    for (size_t i = 0; i < c.size(); ++i) c.Start(i, 1, kDim);
    ASSERT_TRUE(c.RunFor(std::chrono::seconds(30), [&] {
      for (size_t i = 0; i < c.size(); ++i) {
        if (!c.node(i).over) return false;
      }
      return true;
    })) << PsDescription(ps);
    const uint64_t per_iteration = ps.sync == PsSync::kFull ? 1 : workers;
    for (size_t i = 0; i < c.size(); ++i) {
      EXPECT_TRUE(c.node(i).over->ok()) << "node " << i << ": " << c.node(i).over->ToString();
      if (static_cast<int64_t>(i) < ps.servers) {
        EXPECT_EQ(c.machine(i).role(), "server");
        EXPECT_GE(c.machine(i).state().iteration, 6 * per_iteration);
      } else {
        EXPECT_EQ(c.machine(i).role(), "worker");
        EXPECT_EQ(c.node(i).finished, "peer");
      }
    }
    if (ps.backup > 0) {
      EXPECT_GT(c.machine(0).stats().children_ignored, 0u);
    }
    EXPECT_EQ(c.machine(0).state().rejected_messages, 0u);
  }
}

// A worker that dies is dropped once the membership declares it dead: the synchronous servers
// go on with the others to the end of the budget.
TEST(PsNodeTest, ADeadWorkerIsDroppedAndTheRunEnds) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Cluster c = MakeCluster({.servers = 1 + static_cast<int64_t>(seed % 2)}, 3, seed, 40);
    for (size_t i = 0; i < c.size(); ++i) c.Start(i, 1, kDim);
    ASSERT_TRUE(c.RunFor(std::chrono::seconds(10), [&] { return AllAssembled(c); }));
    const size_t dead = c.size() - 1 - seed % 3;
    c.Crash(dead);
    ASSERT_TRUE(c.RunFor(std::chrono::seconds(30), [&] { return c.node(0).over.has_value(); }));
    EXPECT_TRUE(c.node(0).over->ok()) << c.node(0).over->ToString();
    EXPECT_EQ(c.node(0).finished, "iterations");
    EXPECT_EQ(c.machine(0).state().iteration, 40u);
  }
}

// A server that dies is the run's single point of failure: every worker's run fails, saying so.
TEST(PsNodeTest, ADeadServerFailsTheRunWithTheReason) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const PsSync forms[] = {PsSync::kFull, PsSync::kAsync};
    Cluster c = MakeCluster({.servers = 2, .sync = forms[seed % 2]}, 3, seed, 100000);
    for (size_t i = 0; i < c.size(); ++i) c.Start(i, 1, kDim);
    ASSERT_TRUE(c.RunFor(std::chrono::seconds(10), [&] { return AllAssembled(c); }));
    c.Crash(seed % 2);
    ASSERT_TRUE(c.RunFor(std::chrono::seconds(30), [&] {
      for (size_t i = 2; i < c.size(); ++i) {
        if (!c.node(i).over) return false;
      }
      return true;
    }));
    for (size_t i = 2; i < c.size(); ++i) {
      const Status& over = *c.node(i).over;
      EXPECT_FALSE(over.ok()) << "worker " << i;
      EXPECT_NE(over.message().find("single point of failure"), std::string_view::npos)
          << over.ToString();
    }
  }
}

}  // namespace
}  // namespace murmur::gossip
