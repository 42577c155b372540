#include "gossip/peer_sampling.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

namespace murmur::gossip {
namespace {

std::vector<NodeId> RandomView(std::mt19937_64& rng, size_t p) {
  std::set<NodeId> ids;
  while (ids.size() < p) ids.insert(1 + rng() % 1000);
  return {ids.begin(), ids.end()};
}

void ExpectDoublyStochastic(const std::vector<std::vector<double>>& w, const std::string& what) {
  const size_t p = w.size();
  for (size_t i = 0; i < p; ++i) {
    double row = 0, col = 0;
    for (size_t j = 0; j < p; ++j) {
      EXPECT_GE(w[i][j], 0.0) << what;
      row += w[i][j];
      col += w[j][i];
    }
    EXPECT_NEAR(row, 1.0, 1e-12) << what << " row " << i;
    EXPECT_NEAR(col, 1.0, 1e-12) << what << " column " << i;
  }
}

TEST(PeerSamplingTest, EveryTopologyStaysDoublyStochasticAsMembershipChanges) {
  const uint64_t seed = 42;
  std::mt19937_64 rng(seed);
  for (Topology t : {Topology::kRing, Topology::kExponential, Topology::kRandom}) {
    for (int k : {1, 2, 3, 4}) {
      PeerSamplingOptions o{t, k, 7};
      for (size_t p : {1, 2, 3, 4, 5, 8, 12, 31, 64}) {
        // A view that changes every round, as membership does under churn.
        for (uint64_t round = 0; round < 6; ++round) {
          const auto view = RandomView(rng, p);
          const std::string what = std::string(TopologyName(t)) + " k=" + std::to_string(k) +
                                   " P=" + std::to_string(p) + " round " +
                                   std::to_string(round) + " seed " + std::to_string(seed);
          const auto w = MixingMatrix(o, view, round);
          ExpectDoublyStochastic(w, what);
          // send_to and receive_from agree across nodes: i sends to j iff j mixes i.
          for (NodeId self : view) {
            for (NodeId to : PeersFor(o, view, self, round).send_to) {
              const auto peers = PeersFor(o, view, to, round).receive_from;
              EXPECT_TRUE(std::any_of(peers.begin(), peers.end(),
                                      [&](const Neighbor& n) { return n.id == self; }))
                  << what;
            }
          }
        }
      }
    }
  }
}

TEST(PeerSamplingTest, RingIsSymmetricWithMetropolisHastingsThirds) {
  const std::vector<NodeId> view = {3, 9, 10, 20, 41};
  const auto peers = PeersFor({Topology::kRing, 0, 0}, view, 3, 0);
  ASSERT_EQ(peers.receive_from.size(), 2u);
  EXPECT_EQ(peers.receive_from[0].id, 9u);
  EXPECT_EQ(peers.receive_from[1].id, 41u);
  EXPECT_DOUBLE_EQ(peers.receive_from[0].weight, 1.0 / 3);
  EXPECT_DOUBLE_EQ(peers.self_weight, 1.0 / 3);
  const auto w = MixingMatrix({Topology::kRing, 0, 0}, view, 0);
  for (size_t i = 0; i < view.size(); ++i)
    for (size_t j = 0; j < view.size(); ++j) EXPECT_DOUBLE_EQ(w[i][j], w[j][i]);
  // One node alone keeps its value; two average.
  EXPECT_DOUBLE_EQ(PeersFor({Topology::kRing, 0, 0}, {5}, 5, 0).self_weight, 1.0);
  EXPECT_DOUBLE_EQ(PeersFor({Topology::kRing, 0, 0}, {5, 6}, 5, 0).self_weight, 0.5);
}

TEST(PeerSamplingTest, OnePeerExponentialGraphAveragesExactlyForPowersOfTwo) {
  for (size_t p : {8, 16, 32}) {
    std::vector<NodeId> view(p);
    for (size_t i = 0; i < p; ++i) view[i] = 100 + i;
    std::mt19937_64 rng(p);
    std::vector<double> x(p);
    double mean = 0;
    for (auto& v : x) mean += (v = std::normal_distribution<double>()(rng));
    mean /= static_cast<double>(p);
    size_t rounds = 0;
    while ((size_t{1} << rounds) < p) ++rounds;
    for (uint64_t t = 0; t < rounds; ++t) {
      const auto w = MixingMatrix({Topology::kExponential, 1, 0}, view, t);
      std::vector<double> next(p, 0.0);
      for (size_t i = 0; i < p; ++i)
        for (size_t j = 0; j < p; ++j) next[i] += w[i][j] * x[j];
      x = next;
    }
    for (double v : x) EXPECT_NEAR(v, mean, 1e-12) << "P = " << p;
    // One peer per round.
    EXPECT_EQ(PeersFor({Topology::kExponential, 1, 0}, view, 100, 3).send_to.size(), 1u);
  }
}

TEST(PeerSamplingTest, RandomGraphIsSharedAndRedrawnEachRound) {
  std::vector<NodeId> view(20);
  for (size_t i = 0; i < 20; ++i) view[i] = i + 1;
  PeerSamplingOptions o{Topology::kRandom, 4, 99};
  const auto a = PeersFor(o, view, 5, 10);
  EXPECT_EQ(PeersFor(o, view, 5, 10).send_to, a.send_to) << "not deterministic";
  EXPECT_LE(a.send_to.size(), 4u);
  EXPECT_GE(a.send_to.size(), 2u);
  bool changed = false;
  for (uint64_t r = 11; r < 15; ++r) changed |= PeersFor(o, view, 5, r).send_to != a.send_to;
  EXPECT_TRUE(changed);
  EXPECT_EQ(ParseTopology("mesh").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(*ParseTopology("random"), Topology::kRandom);
}

}  // namespace
}  // namespace murmur::gossip
