// `murmur sim --mode consensus`: CHOCO averaging alone (node/sim/consensus.h), with progress on
// stderr, a summary (text or JSON) on stdout, and the error per round as CSV.
#include "cli/sim_consensus.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/progress.h"
#include "cli/sim_report.h"
#include "gossip/peer_sampling.h"
#include "node/config/gossip_config.h"
#include "node/sim/consensus.h"

namespace murmur::node {
namespace {

// The decades the summary reports the rounds to (1e-1 ... 1e-6).
constexpr int kDecades = 6;

int Refuse(const std::string& why) {
  std::fprintf(stderr, "murmur sim: %s\n", why.c_str());
  return 2;
}

std::string Describe(const sim::ConsensusOptions& o, double gamma) {
  return fmt::format(
      "murmur sim: {} nodes, mode consensus, topology {}, compress {} (gamma {:g}, clip fraction "
      "{:g}), network {}, {} values computed ({:.0f} on the wire), seed {}",
      o.nodes, gossip::TopologyName(o.choco.sampling.topology),
      coding::CompressorSpec(o.choco.compressor), gamma, o.choco.clip_fraction, o.link.ToString(),
      o.dimension, o.dimension * o.wire_scale, o.seed);
}

nlohmann::json Json(const sim::ConsensusOptions& o, const sim::ConsensusResult& r) {
  nlohmann::json rounds = nlohmann::json::array();
  for (const sim::ConsensusRound& x : r.rounds) {
    rounds.push_back({{"round", x.round},
                      {"error", x.error},
                      {"max_node", x.max_node},
                      {"virtual_s", x.virtual_s},
                      {"bytes", x.bytes}});
  }
  nlohmann::json to = nlohmann::json::object();
  for (int k = 1; k <= kDecades; ++k)
    to[fmt::format("1e-{}", k)] = sim::RoundsTo(r, std::pow(10.0, -k));
  return {{"mode", "consensus"},
          {"nodes", o.nodes},
          {"topology", gossip::TopologyName(o.choco.sampling.topology)},
          {"compress", coding::CompressorSpec(o.choco.compressor)},
          {"gamma", r.gamma},
          {"gamma_halvings", r.gamma_halvings},
          {"network", o.link.ToString()},
          {"dimension", o.dimension},
          {"wire_dimension", std::llround(o.dimension * o.wire_scale)},
          {"tolerance", o.tolerance},
          {"rounds_to_tolerance", r.rounds_to_tolerance},
          {"rounds_to", to},
          {"final_error", r.rounds.empty() ? 1.0 : r.rounds.back().error},
          {"virtual_s", r.virtual_s},
          {"wall_s", r.wall_s},
          {"messages", r.messages},
          {"bytes", r.bytes},
          {"snapshots", r.snapshots},
          {"rejected", r.rejected},
          {"trace_hash", fmt::format("{:016x}", r.trace_hash)},
          {"rounds", rounds}};
}

std::string Text(const std::string& description, const sim::ConsensusOptions& o,
                 const sim::ConsensusResult& r) {
  std::string out = description + "\n";
  out += fmt::format("{:>7} {:>11} {:>11} {:>11} {:>12}\n", "round", "error", "worst node",
                     "virtual s", "MB on links");
  // The first rounds, then every round that crosses a decade, then the last.
  double next_decade = 1e-1;
  for (size_t k = 0; k < r.rounds.size(); ++k) {
    const sim::ConsensusRound& x = r.rounds[k];
    const bool crossed = x.error <= next_decade;
    while (x.error <= next_decade && next_decade > 0) next_decade /= 10;
    if (k < 12 || crossed || k + 1 == r.rounds.size()) {
      out += fmt::format("{:>7} {:>11.3e} {:>11.3e} {:>11.4f} {:>12.2f}\n", x.round, x.error,
                         x.max_node, x.virtual_s, static_cast<double>(x.bytes) / 1e6);
    }
  }
  out += "rounds to error";
  for (int k = 1; k <= kDecades; ++k) {
    const int n = sim::RoundsTo(r, std::pow(10.0, -k));
    out += fmt::format(" 1e-{}: {}", k, n < 0 ? std::string("-") : std::to_string(n));
  }
  out += "\n";
  const double rounds = static_cast<double>(std::max<size_t>(1, r.rounds.size()));
  if (r.rounds_to_tolerance > 0) {
    out += fmt::format("error {:g} after {} rounds ({:.4f} virtual s)\n", o.tolerance,
                       r.rounds_to_tolerance, r.virtual_s);
  } else {
    out +=
        fmt::format("error {:.3e} after {} rounds: not under {:g}\n",
                    r.rounds.empty() ? 1.0 : r.rounds.back().error, r.rounds.size(), o.tolerance);
  }
  out += fmt::format(
      "per node per round: {:.2f} messages, {:.1f} KB; gamma {:g} (halved {} times); snapshots "
      "{}; refused {}; wall {:.2f} s\n",
      static_cast<double>(r.messages) / rounds / static_cast<double>(o.nodes),
      static_cast<double>(r.bytes) / rounds / static_cast<double>(o.nodes) / 1e3, r.gamma,
      r.gamma_halvings, r.snapshots, r.rejected, r.wall_s);
  return out;
}

}  // namespace

int RunConsensusSim(const SimConfig& c) {
  if (!c.straggle.empty() || !c.crash.empty() || !c.join.empty() || c.cores > 0) {
    return Refuse(
        "straggle, crash, join and cores do not apply to mode consensus (synchronous rounds "
        "of averaging, timed by the links alone; use mode gossip for them)");
  }
  if (c.fidelity != SimFidelity::kProtocol) {
    return Refuse(
        "fidelity training: mode consensus averages vectors and trains nothing (fidelity "
        "protocol)");
  }
  if (c.gossip.train.device.wants_gpu()) {
    return Refuse("device " + c.gossip.train.device.ToString() +
                  ": mode consensus averages on the CPU");
  }
  if (c.nodes < 2) return Refuse("nodes: mode consensus needs at least 2");
  if (c.dimension > (int64_t{1} << 31)) return Refuse("dimension: at most 2^31 for consensus");
  auto gossip = GossipOptionsFrom(c.gossip);
  if (!gossip.ok()) return Refuse(std::string(gossip.status().message()));
  sim::ConsensusOptions o;
  o.nodes = static_cast<size_t>(c.nodes);
  o.dimension = static_cast<uint32_t>(c.dimension);
  const int64_t wire = WireDimension(c);
  o.wire_scale = static_cast<double>(wire) / static_cast<double>(c.dimension);
  o.choco = gossip->node.choco;
  o.choco.sampling.seed = static_cast<uint64_t>(c.gossip.train.seed);
  auto link = sim::ParseLink(c.network);
  if (!link.ok()) return Refuse(std::string(link.status().message()));
  o.link = *link;
  o.max_rounds = c.consensus_rounds;
  o.tolerance = c.consensus_tolerance;
  o.seed = static_cast<uint64_t>(c.gossip.train.seed);

  SimProgressPrinter printer(ResolveProgressMode(c.progress, stderr), stderr);
  const double gamma = o.choco.gamma > 0 ? o.choco.gamma : gossip::DefaultGamma(o.choco.compressor);
  std::fprintf(stderr, "%s\n", Describe(o, gamma).c_str());
  auto result = sim::RunConsensus(o, [&](const sim::ConsensusRound& r) {
    printer.Line([&] {
      return fmt::format("consensus round {} / {} | error {:.3e} | {:.4f} s virtual", r.round,
                         o.max_rounds, r.error, r.virtual_s);
    });
  });
  printer.Finish();
  if (!result.ok()) return Refuse(std::string(result.status().message()));
  if (!c.csv.empty()) {
    std::ofstream csv(c.csv);
    csv << "round,error,max_node,virtual_s,bytes\n";
    for (const sim::ConsensusRound& r : result->rounds) {
      csv << fmt::format("{},{:.9e},{:.9e},{:.9f},{}\n", r.round, r.error, r.max_node, r.virtual_s,
                         r.bytes);
    }
    if (!csv.good()) {
      std::fprintf(stderr, "murmur sim: cannot write %s\n", c.csv.c_str());
      return 1;
    }
  }
  if (c.json) {
    std::printf("%s\n", Json(o, *result).dump().c_str());
  } else {
    std::printf("%s", Text(Describe(o, result->gamma), o, *result).c_str());
  }
  return result->rejected == 0 ? 0 : 1;
}

}  // namespace murmur::node
