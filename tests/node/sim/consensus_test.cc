// CHOCO averaging alone in the simulator (node/sim/consensus.h): the real ChocoGossip
// machines, their real wire bytes, synchronous rounds.
#include "node/sim/consensus.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "node/sim/cpu.h"

namespace murmur::sim {
namespace {

ConsensusOptions Options(size_t nodes, gossip::Topology topology, const char* compress) {
  ConsensusOptions o;
  o.nodes = nodes;
  o.dimension = 200;
  o.choco.sampling.topology = topology;
  o.choco.compressor = *coding::ParseCompressorSpec(compress);
  o.link = *ParseLink("1GbE");
  o.max_rounds = 400;
  o.seed = 7;
  // The paper's averaging (these are its rates); clipped mixing slows averaging from random
  // models, which training does not start from.
  o.choco.clip_fraction = 0;
  std::printf("consensus: %zu nodes, %s, %s, seed %llu\n", nodes, gossip::TopologyName(topology),
              compress, static_cast<unsigned long long>(o.seed));
  return o;
}

TEST(ConsensusTest, ExponentialGraphAveragesExactlyInLog2NRounds) {
  for (size_t n : {2u, 4u, 8u, 16u, 32u}) {
    const auto r = RunConsensus(Options(n, gossip::Topology::kExponential, "none"));
    ASSERT_TRUE(r.ok()) << r.status();
    const int log2n = static_cast<int>(std::lround(std::log2(static_cast<double>(n))));
    EXPECT_EQ(r->rounds_to_tolerance, log2n) << n << " nodes";
    // Not before: one round less leaves a real disagreement.
    if (log2n > 1) {
      EXPECT_GT(r->rounds[log2n - 2].error, 0.05) << n << " nodes";
    }
    // One message per out-peer per round, each the dense update (no snapshot, nothing refused).
    EXPECT_EQ(r->messages, n * log2n * log2n) << n << " nodes";
    EXPECT_EQ(r->snapshots, 0u);
    EXPECT_EQ(r->rejected, 0u);
    // A round takes at least what one node's uplink needs for its messages.
    EXPECT_GT(r->rounds[0].virtual_s, 0.0);
  }
}

TEST(ConsensusTest, ANonPowerOfTwoAndTheRingAreNotExact) {
  const auto twelve = RunConsensus(Options(12, gossip::Topology::kExponential, "none"));
  ASSERT_TRUE(twelve.ok());
  EXPECT_GT(twelve->rounds[3].error, 1e-3);  // ceil(log2 12) = 4 rounds: close, not exact
  EXPECT_LT(twelve->rounds[3].error, 0.5);
  const auto ring = RunConsensus(Options(16, gossip::Topology::kRing, "none"));
  ASSERT_TRUE(ring.ok());
  EXPECT_GT(ring->rounds[3].error, 0.3);
  EXPECT_GT(ring->rounds_to_tolerance, 50);  // the ring's spectral gap is O(1/N²)
}

TEST(ConsensusTest, TopKErrorFallsAndTheRunIsDeterministic) {
  auto o = Options(8, gossip::Topology::kExponential, "topk:0.05");
  o.tolerance = 0;
  // DefaultGamma (0.25 at 5 %) is tuned for training and leaves pure averaging on a plateau near
  // 1e-2 (bench/results/2026-11-28-history.md); 0.1 converges geometrically.
  o.choco.gamma = 0.1;
  const auto a = RunConsensus(o);
  const auto b = RunConsensus(o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->trace_hash, b->trace_hash);
  EXPECT_EQ(a->rounds.back().error, b->rounds.back().error);
  EXPECT_DOUBLE_EQ(a->gamma, 0.1);
  // Geometric: at least a decade every 100 rounds until float rounding.
  EXPECT_LT(a->rounds.back().error, 1e-5);
  for (size_t k = 100; k < a->rounds.size() && a->rounds[k - 100].error > 1e-5; k += 100) {
    EXPECT_LT(a->rounds[k].error, a->rounds[k - 100].error / 10) << "round " << k;
  }
  o.seed = 8;
  const auto c = RunConsensus(o);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(c->trace_hash, a->trace_hash);
}

TEST(ConsensusTest, RefusesWhatCannotRun) {
  ConsensusOptions o;
  o.nodes = 1;
  EXPECT_FALSE(RunConsensus(o).ok());
  o.nodes = 4;
  o.max_rounds = 0;
  EXPECT_FALSE(RunConsensus(o).ok());
}

}  // namespace
}  // namespace murmur::sim

namespace murmur::sim {
namespace {

using std::chrono::milliseconds;

// Processor sharing (cpu.h): 4 computations of 1 s on 2 cores take 2 s together; one that joins
// later runs at the shared rate until the others leave.
TEST(SharedCpuTest, ComputationsShareTheCores) {
  SharedCpu cpu(2);
  const TimePoint t0{};
  for (size_t i = 0; i < 4; ++i) cpu.Add(i, milliseconds(1000), t0);
  ASSERT_TRUE(cpu.NextCompletion().has_value());
  EXPECT_EQ(*cpu.NextCompletion(), t0 + milliseconds(2000));
  EXPECT_TRUE(cpu.TakeDone(t0 + milliseconds(1999)).empty());
  EXPECT_EQ(cpu.TakeDone(t0 + milliseconds(2000)), (std::vector<size_t>{0, 1, 2, 3}));
  EXPECT_FALSE(cpu.NextCompletion().has_value());

  // One alone runs at full speed; a second and third join at 500 ms (rate 2/3 from then).
  cpu.Add(7, milliseconds(1000), t0);
  cpu.Add(8, milliseconds(1000), t0 + milliseconds(500));
  cpu.Add(9, milliseconds(1000), t0 + milliseconds(500));
  EXPECT_EQ(*cpu.NextCompletion(), t0 + milliseconds(1250));  // 500 ms left at 2/3
  const uint64_t v = cpu.version();
  cpu.Remove(9, t0 + milliseconds(800));  // a crash frees its share: 7 and 8 at full speed
  EXPECT_NE(cpu.version(), v);
  EXPECT_EQ(*cpu.NextCompletion(), t0 + milliseconds(1100));
  EXPECT_EQ(cpu.TakeDone(t0 + milliseconds(1100)), std::vector<size_t>{7});
  EXPECT_EQ(*cpu.NextCompletion(), t0 + milliseconds(1600));

  SharedCpu own(0);  // a machine per node: never slower
  for (size_t i = 0; i < 8; ++i) own.Add(i, milliseconds(10), t0);
  EXPECT_EQ(*own.NextCompletion(), t0 + milliseconds(10));
}

}  // namespace
}  // namespace murmur::sim
