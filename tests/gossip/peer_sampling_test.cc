#include "gossip/peer_sampling.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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
  EXPECT_EQ(a.send_to.size(), 4u);
  bool changed = false;
  for (uint64_t r = 11; r < 15; ++r) changed |= PeersFor(o, view, 5, r).send_to != a.send_to;
  EXPECT_TRUE(changed);
  EXPECT_EQ(ParseTopology("mesh").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(*ParseTopology("random"), Topology::kRandom);
}

TEST(PeerSamplingTest, RandomGraphGivesExactlyKPeersAndIsConnected) {
  // k >= P - 1: every other member (one dense round is then an exact average). Otherwise k
  // peers each; when P and k are both odd no k-regular graph exists and one node has k - 1.
  // The union of random cycles this replaced could draw the same cycle twice: with seeds 0 and 1
  // "3 peers" on 4 nodes was the ring.
  for (uint64_t seed : {0u, 1u, 2u, 77u}) {
    for (size_t p : {2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16, 31, 64}) {
      std::vector<NodeId> view(p);
      for (size_t i = 0; i < p; ++i) view[i] = 10 + 3 * i;
      for (int k : {2, 3, 4, 5, 7, 8, 63}) {
        for (uint64_t round : {0u, 5u}) {
          const PeerSamplingOptions o{Topology::kRandom, k, seed};
          const size_t want = std::min<size_t>(static_cast<size_t>(k), p - 1);
          const bool odd = want % 2 == 1 && p % 2 == 1 && want < p - 1;
          const std::string what = "P=" + std::to_string(p) + " k=" + std::to_string(k) + " seed " +
                                   std::to_string(seed) + " round " + std::to_string(round);
          size_t short_nodes = 0;
          std::vector<std::vector<size_t>> adj(p);
          for (size_t i = 0; i < p; ++i) {
            const RoundPeers peers = PeersFor(o, view, view[i], round);
            EXPECT_EQ(peers.send_to.size(), peers.receive_from.size()) << what;
            if (peers.send_to.size() + 1 == want && odd) {
              ++short_nodes;
            } else {
              EXPECT_EQ(peers.send_to.size(), want) << what << " node " << i;
            }
            for (NodeId j : peers.send_to) {
              adj[i].push_back(
                  static_cast<size_t>(std::find(view.begin(), view.end(), j) - view.begin()));
            }
          }
          EXPECT_EQ(short_nodes, odd ? 1u : 0u) << what;
          std::vector<bool> seen(p, false);  // connected: a search from node 0 reaches all
          std::vector<size_t> stack = {0};
          seen[0] = true;
          while (!stack.empty()) {
            const size_t a = stack.back();
            stack.pop_back();
            for (size_t b : adj[a]) {
              if (!seen[b]) stack.push_back(b), seen[b] = true;
            }
          }
          EXPECT_EQ(std::count(seen.begin(), seen.end(), true), static_cast<long>(p)) << what;
          ExpectDoublyStochastic(MixingMatrix(o, view, round), what);
        }
      }
    }
  }
}

TEST(PeerSamplingTest, HopsAcrossBoundTheMixingGraphsDiameter) {
  for (size_t n : {1, 2, 3, 8, 9, 64, 1000}) {
    const int ring = HopsAcross({.topology = Topology::kRing}, n);
    const int exponential = HopsAcross({.topology = Topology::kExponential}, n);
    EXPECT_EQ(ring, static_cast<int>(n / 2)) << n;
    EXPECT_EQ(exponential, n <= 1 ? 0 : static_cast<int>(std::ceil(std::log2(static_cast<double>(n))))) << n;
    EXPECT_EQ(HopsAcross({.topology = Topology::kRandom}, n), exponential) << n;
  }
}

}  // namespace
}  // namespace murmur::gossip
