#pragma once
// CHOCO-Gossip consensus alone (Koloskova et al., ICML 2019, §3 "average consensus"):
// every node starts from its own random vector, nobody computes a step, and the real
// gossip::ChocoGossip machines average them in synchronous rounds — every node publishes
// (Publish: q_i = C(x_i − x̂_i)), every message is encoded by the real wire code
// (proto::EncodeEnvelope), carried by the network model and decoded at its receiver, then every
// node mixes (Mix). That is the paper's iteration exactly, so the error per round is the
// algorithm's, and the round's virtual time is what the links take to carry it.
//
// The consensus error after round t is sqrt(Σ_i ‖x_i − x̄‖²) / sqrt(Σ_i ‖x_i⁰ − x̄‖²), relative
// to the disagreement at the start (x̄ is the average at the start; a doubly stochastic W keeps it).
// On the one-peer exponential graph without compression (γ = 1) it is float rounding after
// log2 N rounds when N is a power of two (Ying et al., NeurIPS 2021, §3).
// Thread safety: none.

#include <cstdint>
#include <functional>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "coding/compressor.h"
#include "gossip/choco.h"
#include "gossip/peer_sampling.h"
#include "node/sim/network.h"

namespace murmur::sim {

struct ConsensusOptions {
  size_t nodes = 16;
  uint32_t dimension = 1000;  // values each node really holds
  double wire_scale = 1;      // tensor frames on the links × this (a larger model's bytes)
  // Every node's CHOCO options (the operator, γ, the topology); each node's id, incarnation and
  // dimension are set per node.
  gossip::ChocoOptions choco;
  LinkSpec link;
  int max_rounds = 1000;
  double tolerance = 1e-6;  // stop once the consensus error is under this
  uint64_t seed = 1;

  Status Validate() const;
};

struct ConsensusRound {
  int round = 0;         // 1-based: the error after this many rounds
  double error = 0;      // relative consensus error (see the header comment)
  double max_node = 0;   // max_i ‖x_i − x̄‖ / sqrt(mean_i ‖x_i⁰ − x̄‖²)
  double virtual_s = 0;  // when the round's last message was in
  uint64_t bytes = 0;    // on the links, all rounds so far
};

struct ConsensusResult {
  std::vector<ConsensusRound> rounds;
  int rounds_to_tolerance = -1;  // -1: not within max_rounds
  double virtual_s = 0;
  double wall_s = 0;
  uint64_t messages = 0, bytes = 0;
  uint64_t snapshots = 0;  // public-copy snapshots the streams needed (0 when nothing is lost)
  uint64_t rejected = 0;   // messages a receiver's decode or CHOCO refused
  uint64_t gamma_halvings = 0;
  double gamma = 0;         // as configured (or defaulted)
  uint64_t trace_hash = 0;  // over every message: round, ends, bytes
};

// kInvalidArgument for options that cannot run (Validate). `progress` gets every round.
StatusOr<ConsensusResult> RunConsensus(
    const ConsensusOptions& options,
    const std::function<void(const ConsensusRound&)>& progress = nullptr);

// The first round after which the error is at most `error` (-1: never).
int RoundsTo(const ConsensusResult& result, double error);

}  // namespace murmur::sim
