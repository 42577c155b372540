#pragma once
// Who a node exchanges with in a gossip round, and with what mixing weights
// (docs/algorithms.md §7.3). Every function here is a pure function of (live view, round, seed), so
// all nodes that share a membership view compute the same graph, and the mixing matrix W_t they
// jointly apply is doubly stochastic: rows sum to 1 (each node's update is a weighted average)
// and columns sum to 1 (the network average is preserved). When views disagree briefly during
// churn, W_t is only approximately so; the next view epoch restores it.
//
// Topologies:
//   ring         undirected; neighbours are the predecessor and successor in the sorted view.
//   exponential  the one-peer forward exponential graph of Stochastic Gradient Push (Assran et
//                al., ICML 2019): in round t every node sends to i + 2^(t mod ceil(log2 P)) and
//                keeps half. W_t = (I + shift)/2. With P a power of two, log2 P rounds average
//                exactly (Ying et al. 2021).
//   random       undirected; exactly k peers each (k >= 2): every other member when k >= P - 1,
//                else a circulant graph (k/2 random distinct steps, the first coprime with P,
//                so the graph is connected, plus a perfect matching for odd k) over a random
//                relabelling of the view, redrawn each round from a shared seed. When P and k
//                are both odd no k-regular graph exists and one node gets k - 1.
// Undirected topologies use Metropolis–Hastings weights w_ij = 1 / (1 + max(d_i, d_j)),
// w_ii = 1 - sum_j w_ij (symmetric, hence doubly stochastic).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "gossip/envelope.h"

namespace murmur::gossip {

enum class Topology : uint8_t { kRing, kExponential, kRandom };
StatusOr<Topology> ParseTopology(std::string_view name);  // "ring" | "exponential" | "random"
const char* TopologyName(Topology t);

struct PeerSamplingOptions {
  Topology topology = Topology::kRing;
  int random_peers = 2;  // k for kRandom (values below 2 count as 2)
  uint64_t seed = 0;     // shared by the cluster (derived from the cluster id)
};

struct Neighbor {
  NodeId id;
  double weight;  // w_ij: the weight this node gives to j's value
};

struct RoundPeers {
  std::vector<NodeId> send_to;        // nodes that mix this node's value in round t
  std::vector<Neighbor> receive_from;  // nodes whose values this node mixes, with weights
  double self_weight = 1.0;           // w_ii
};

// `view` is sorted, duplicate-free and contains `self` (Membership::LiveView()).
// REQUIRES: self is in view.
RoundPeers PeersFor(const PeerSamplingOptions& options, const std::vector<NodeId>& view,
                    NodeId self, uint64_t round);

// Hops a step clock may need to cross the mixing graph of `members` nodes, a bound on its
// diameter: a ring's n/2; the exponential graph's and the random graph's ceil(log2 n).
int HopsAcross(const PeerSamplingOptions& options, size_t members);

// W_t over `view` (row i: what node view[i] mixes), for tests and analysis.
std::vector<std::vector<double>> MixingMatrix(const PeerSamplingOptions& options,
                                              const std::vector<NodeId>& view, uint64_t round);

}  // namespace murmur::gossip
