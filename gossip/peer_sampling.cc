#include "gossip/peer_sampling.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <set>

#include "base/check.h"

namespace murmur::gossip {
namespace {

// Undirected adjacency over view indices for round t.
std::vector<std::set<size_t>> UndirectedGraph(const PeerSamplingOptions& options, size_t p,
                                              uint64_t round) {
  std::vector<std::set<size_t>> adj(p);
  auto connect = [&](size_t a, size_t b) {
    if (a == b) return;
    adj[a].insert(b);
    adj[b].insert(a);
  };
  if (options.topology == Topology::kRing) {
    for (size_t i = 0; i + 1 < p; ++i) connect(i, i + 1);
    if (p > 2) connect(p - 1, 0);
    return adj;
  }
  // kRandom: every node derives the same graph from (seed, round, p).
  std::seed_seq seq{static_cast<uint32_t>(options.seed), static_cast<uint32_t>(options.seed >> 32),
                    static_cast<uint32_t>(round), static_cast<uint32_t>(round >> 32),
                    static_cast<uint32_t>(p)};
  std::mt19937_64 rng(seq);
  // One peer each would be a matching: pairs that never mix with each other (config refuses 1).
  const size_t k = static_cast<size_t>(std::max(options.random_peers, 2));
  if (k + 1 >= p) {  // every other member
    for (size_t a = 0; a < p; ++a) {
      for (size_t b = a + 1; b < p; ++b) connect(a, b);
    }
    return adj;
  }
  // A circulant graph over a random relabelling of the view: position a is joined to a ± s for
  // each step s of a random set of floor(k / 2) distinct steps in [1, (p - 1) / 2], whose
  // edges are disjoint, so every node gets exactly 2 per step. The first step is coprime with p
  // (a Hamiltonian cycle: the graph is connected). For odd k a perfect matching adds one peer:
  // a ± p / 2 when p is even; when p is odd, alternate edges of one more coprime step's cycle,
  // which leave one node with k - 1 (p k odd: no k-regular graph exists).
  std::vector<size_t> order(p);
  for (size_t i = 0; i < p; ++i) order[i] = i;
  // Fisher–Yates with our own draw: std::shuffle's algorithm is implementation-defined, and
  // every node of the cluster must draw the same graph.
  for (size_t i = p; i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
  std::vector<size_t> coprime, other;
  for (size_t step = 1; 2 * step < p; ++step) {
    (std::gcd(step, p) == 1 ? coprime : other).push_back(step);
  }
  auto take = [&](std::vector<size_t>& from) {  // a random element, removed
    const size_t at = rng() % from.size();
    const size_t step = from[at];
    from.erase(from.begin() + static_cast<std::ptrdiff_t>(at));
    return step;
  };
  std::vector<size_t> steps = {take(coprime)};  // coprime holds 1 (p >= 3 here)
  const bool odd_matching = k % 2 == 1 && p % 2 == 1;
  // An odd p needs a coprime step for its matching: held back from the draw.
  const size_t matching_step = odd_matching && !coprime.empty() ? take(coprime) : 0;
  std::vector<size_t> rest = coprime;
  rest.insert(rest.end(), other.begin(), other.end());
  while (steps.size() < k / 2 && !rest.empty()) steps.push_back(take(rest));
  for (size_t step : steps) {
    for (size_t a = 0; a < p; ++a) connect(order[a], order[(a + step) % p]);
  }
  if (k % 2 == 1 && p % 2 == 0) {
    for (size_t a = 0; a < p / 2; ++a) connect(order[a], order[a + p / 2]);
  } else if (odd_matching && matching_step != 0) {
    for (size_t j = 0; j + 1 < p; j += 2) {
      connect(order[(j * matching_step) % p], order[((j + 1) * matching_step) % p]);
    }
  }
  return adj;
}

size_t IndexOf(const std::vector<NodeId>& view, NodeId id) {
  auto it = std::lower_bound(view.begin(), view.end(), id);
  MURMUR_CHECK(it != view.end() && *it == id) << "node " << id << " is not in the view";
  return static_cast<size_t>(it - view.begin());
}

}  // namespace

StatusOr<Topology> ParseTopology(std::string_view name) {
  if (name == "ring") return Topology::kRing;
  if (name == "exponential") return Topology::kExponential;
  if (name == "random") return Topology::kRandom;
  return InvalidArgumentError("unknown topology '" + std::string(name) +
                              "' (allowed: ring, exponential, random)");
}

const char* TopologyName(Topology t) {
  switch (t) {
    case Topology::kRing: return "ring";
    case Topology::kExponential: return "exponential";
    case Topology::kRandom: return "random";
  }
  return "?";
}

RoundPeers PeersFor(const PeerSamplingOptions& options, const std::vector<NodeId>& view,
                    NodeId self, uint64_t round) {
  const size_t p = view.size();
  const size_t i = IndexOf(view, self);
  RoundPeers out;
  if (p <= 1) return out;
  if (options.topology == Topology::kExponential) {
    size_t levels = 0;
    while ((size_t{1} << levels) < p) ++levels;  // ceil(log2 p) distinct offsets 1, 2, 4, ...
    const size_t offset = (size_t{1} << (round % levels)) % p;
    out.send_to = {view[(i + offset) % p]};
    out.receive_from = {{view[(i + p - offset) % p], 0.5}};
    out.self_weight = 0.5;
    return out;
  }
  const auto adj = UndirectedGraph(options, p, round);
  double sum = 0;
  for (size_t j : adj[i]) {
    const double w = 1.0 / (1.0 + static_cast<double>(std::max(adj[i].size(), adj[j].size())));
    out.send_to.push_back(view[j]);
    out.receive_from.push_back({view[j], w});
    sum += w;
  }
  out.self_weight = 1.0 - sum;
  return out;
}

std::vector<std::vector<double>> MixingMatrix(const PeerSamplingOptions& options,
                                              const std::vector<NodeId>& view, uint64_t round) {
  const size_t p = view.size();
  std::vector<std::vector<double>> w(p, std::vector<double>(p, 0.0));
  for (size_t i = 0; i < p; ++i) {
    const RoundPeers peers = PeersFor(options, view, view[i], round);
    w[i][i] += peers.self_weight;
    for (const Neighbor& n : peers.receive_from) w[i][IndexOf(view, n.id)] += n.weight;
  }
  return w;
}

int HopsAcross(const PeerSamplingOptions& options, size_t members) {
  if (members <= 1) return 0;
  if (options.topology == Topology::kRing) return static_cast<int>(members / 2);
  int hops = 0;
  while ((size_t{1} << hops) < members) ++hops;
  return hops;
}

}  // namespace murmur::gossip
