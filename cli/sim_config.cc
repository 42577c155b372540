#include "cli/sim_config.h"

#include <algorithm>
#include <vector>

#include "base/spec.h"

namespace murmur::node {
namespace {

constexpr char kDurationSpec[] = "a duration with its unit: us, ms or s";

StatusOr<std::optional<Duration>> ParseEvalCost(std::string_view text) {
  if (text == "auto") return std::optional<Duration>();
  MURMUR_ASSIGN_OR_RETURN(Duration d, ParseDuration(text));
  return std::optional<Duration>(d);
}

}  // namespace

const ConfigSchema<SimConfig>& SimSchema() {
  static const ConfigSchema<SimConfig>* schema = [] {
    using C = SimConfig;
    std::vector<std::pair<std::string, SimMode>> modes = {
        {"membership", {gossip::Mode::kMembership, false}}, {"consensus", {.consensus = true}}};
    for (std::string_view m : gossip::ModeNames()) {
      if (m != "membership") modes.push_back({std::string(m), {*gossip::ParseMode(m), false}});
    }
    auto* s = new ConfigSchema<SimConfig>();
    s->Enum("mode", &C::mode, "gossip", std::move(modes),
            "membership: only SWIM membership (who sees whom, failure detection); consensus: "
            "CHOCO averaging alone in synchronous rounds (every node from its own random "
            "vector, no local steps; the error per round); gossip: "
            "CHOCO-SGD training; coded-tree, tree, gc, ring: the synchronous modes (N + 1 "
            "processes with a root); ps: K parameter servers and N workers")
        .Integer("nodes", &C::nodes, 16, 1, 100000,
                 "simulated processes (membership, gossip); in a synchronous mode or ps, given, "
                 "its N workers in one layer (as n = N, L = 1), else the shape n, L gives")
        .Real("duration", &C::duration, "600", 0.001, 1e7,
              "virtual seconds at most; a training run ends earlier when every node's run is over")
        .Text("network", &C::network, "1GbE",
              "every node's link: ideal, loopback, 100GbE, 25GbE, 10GbE, 1GbE or wan:LATENCY, "
              "then optional latency=D, bandwidth=B (bit, Kbit, Mbit, Gbit), loss=P, e.g. "
              "'wan:50ms,100Mbit' or '1GbE,loss=0.01'; faults per message: duplicate=P (a second "
              "copy up to the jitter later), jitter=D (a delay up to D, so messages overtake "
              "each other), corrupt=P (one byte flipped)")
        .Enum("fidelity", &C::fidelity, "protocol",
              {{"protocol", SimFidelity::kProtocol}, {"training", SimFidelity::kTraining}},
              "protocol: every node computes a hashed least-squares task of `dimension` values "
              "(1000s of nodes); training: every node runs the real Trainer on the task's data "
              "(the MLP on Fashion-MNIST by default; tens of nodes)")
        .Integer<int64_t>("dimension", &C::dimension, 1000, 1, 100000000,
                          "protocol fidelity: values each simulated model really has")
        .Integer<int64_t>(
            "model_dimension", &C::model_dimension, 0, 0, 10000000000,
            "protocol fidelity: the model dimension the links carry (tensor frames are "
            "stretched by model_dimension / dimension); 0: the MLP of --hidden on "
            "Fashion-MNIST (235146 values by default)")
        .Integer("consensus_rounds", &C::consensus_rounds, 1000, 1, 10000000,
                 "consensus: rounds at most")
        .Real("consensus_tolerance", &C::consensus_tolerance, "1e-6", 0, 1,
              "consensus: stop once the relative consensus error is at most this")
        .Parsed("sample_cost", &C::sample_cost, "10us", kDurationSpec,
                "compute time per sample of a step or partial gradient (this machine's MLP: about "
                "10us); a straggler's injection applies on top",
                &ParseDuration)
        .Parsed("step_cost", &C::step_cost, "0us", kDurationSpec,
                "CPU time a step costs beyond its samples (the real node's mixing, compression and "
                "applying arrivals; `murmur local --json` reports them per node as mix_s, "
                "compress_s, apply_s); not scaled by a straggler's slowdown",
                &ParseDuration)
        .Parsed("eval_cost", &C::eval_cost, "auto", "auto, or " + std::string(kDurationSpec),
                "CPU time per test row of an evaluation, spent on the node's training thread "
                "before its next step (as the real node evaluates between steps); auto: a third of "
                "sample_cost (a forward pass; a training sample costs a forward and a backward "
                "pass of twice its work)",
                &ParseEvalCost)
        .Parsed("start_cost", &C::start_cost, "0s", kDurationSpec,
                "time from a process's launch to its first tick (exec, loading the data, opening "
                "its sockets: `murmur local` reports it as first_step_s); every start pays it, "
                "late joins and restarts included",
                &ParseDuration)
        .Integer("cores", &C::cores, 0, 0, 1000000,
                 "cores the simulated nodes share (a computation slows while more nodes compute "
                 "than there are cores, and an injected delay frees its core, as for `murmur "
                 "local` on one machine); 0: a machine per node")
        .StraggleList(&C::straggle, "; a simulated node's compute and sends are slowed")
        .CrashList(&C::crash, "; a simulated crash stops the node's machines")
        .Text("join", &C::join, "",
              "late joins: node=K,at=S starts node K S into the run instead of at 0; several "
              "separated by ';'")
        .Text("partition", &C::partition, "",
              "partitions: nodes=K1/K2/...,at=S[,for=D] cuts those nodes off from the others S "
              "into the run, for D (none: for good); several separated by ';'")
        .Text("clock_jump", &C::clock_jump, "",
              "clock jumps: node=K,at=S,by=D moves node K's clock D forward S into the run (a "
              "VM resumed: every timer it passes is due at once); several separated by ';'")
        .Text("attack", &C::attack, "",
              "insiders gone hostile: node=K,at=S,kind=clock|nonfinite makes node K, from S on, "
              "send a hostile copy of each training message first (its envelope claiming a step "
              "clock of 1e9 or 2^64-1, or its tensor holding a NaN under a valid checksum), which "
              "its receivers must refuse; several separated by ';'")
        .Bool("invariants", &C::invariants, false,
              "check the invariants every run must keep (a refused message changes no model or "
              "tracked copy, every refusal is counted by reason, "
              "step clocks never go back, models stay finite, the run ends, members that "
              "adopted one average hold one model, the budget's bound); any broken: listed, "
              "exit 1")
        .Probes(&C::probe_interval_ms, 500,
                "SWIM protocol period of every node (murmur node's default; murmur local uses "
                "200)",
                &C::probe_timeout_ms, 200, "direct-ack wait of every node")
        .Integer("tick_ms", &C::tick_ms, 5, 1, 1000,
                 "how often each node's machines tick (the real drivers poll every few ms)")
        .Integer("view_interval_ms", &C::view_interval_ms, 20, 1, 10000,
                 "how often a node machine gets the membership view (the real drivers: 20)")
        .Integer("sample_ms", &C::sample_ms, 100, 1, 3600000,
                 "virtual time between rows of the time series (and progress updates)")
        .Text("csv", &C::csv, "",
              "write the time series here: t_s, node, step, samples, loss, accuracy, bytes_sent, "
              "live_view, up (membership: the first 64 nodes); empty: none")
        .SummaryJson(&C::json)
        .Progress(&C::progress,
                  "progress on stderr: redrawn (tty), a line every 2 s (plain), or none")
        .LogLevel("log_level", &C::log_level, "error",
                  "log verbosity of the simulated nodes (stderr)")
        .Embed(GossipSchema(), &C::gossip, {"straggle"})
        .Embed(CodedSchema(), &C::coded, {});
    return s;
  }();
  return *schema;
}

std::vector<UnreadKeys> SimUnreadKeys(const SimConfig& c) {
  std::vector<UnreadKeys> out;
  if (!c.mode.consensus && c.mode.mode == gossip::Mode::kMembership) {
    static const std::vector<std::string> kRead = {"mode",
                                                   "nodes",
                                                   "duration",
                                                   "network",
                                                   "crash",
                                                   "join",
                                                   "partition",
                                                   "clock_jump",
                                                   "invariants",
                                                   "probe_interval_ms",
                                                   "probe_timeout_ms",
                                                   "tick_ms",
                                                   "view_interval_ms",
                                                   "sample_ms",
                                                   "csv",
                                                   "json",
                                                   "progress",
                                                   "log_level",
                                                   "seed",
                                                   "start_cost"};
    UnreadKeys unread{{},
                      "--mode membership does not use it (only SWIM membership: nothing is "
                      "computed or trained)"};
    for (const auto& key : SimSchema().keys()) {
      if (std::find(kRead.begin(), kRead.end(), key.name) == kRead.end()) {
        unread.keys.push_back(key.name);
      }
    }
    out.push_back(std::move(unread));
    return out;
  }
  if (c.mode.consensus) {
    out.push_back({{"sample_cost", "step_cost", "eval_cost", "start_cost", "cores"},
                   "--mode consensus runs synchronous rounds with no time in them"});
    out.push_back({{"partition", "clock_jump", "attack", "invariants"},
                   "--mode consensus runs CHOCO's rounds alone, with no faults and no node runs"});
  } else {
    out.push_back(
        {{"consensus_rounds", "consensus_tolerance"},
         "a key of --mode consensus; --mode " + std::string(c.mode.Name()) + " does not use it"});
    if (c.fidelity == SimFidelity::kTraining) {
      out.push_back({{"dimension", "model_dimension"},
                     "a key of protocol fidelity; training fidelity computes the real model"});
    }
  }
  return out;
}

int64_t WireDimension(const SimConfig& c) {
  if (c.model_dimension > 0) return c.model_dimension;
  int64_t in = 784, total = 0;
  for (int64_t h : c.gossip.train.hidden) {
    total += (in + 1) * h;
    in = h;
  }
  return total + (in + 1) * 10;
}

}  // namespace murmur::node
