#include "cli/swarm_draw.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <sstream>

namespace murmur::node {
namespace {

// One seed's draws, in order (the order is part of the scenario a seed names).
class Draw {
 public:
  explicit Draw(uint64_t seed) : rng_(seed * 0x9E3779B97F4A7C15ULL + 0x5A3D) {}
  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  double Real(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng_); }
  bool Chance(double p) { return Real(0, 1) < p; }
  template <typename T>
  const T& Pick(const std::vector<T>& from) {
    return from[static_cast<size_t>(Int(0, static_cast<int>(from.size()) - 1))];
  }
  // `k` distinct node ids of 1..n.
  std::vector<int> Nodes(int n, int k) {
    std::vector<int> all(static_cast<size_t>(n));
    std::iota(all.begin(), all.end(), 1);
    std::shuffle(all.begin(), all.end(), rng_);
    all.resize(static_cast<size_t>(std::min(n, k)));
    return all;
  }

 private:
  std::mt19937_64 rng_;
};

std::string Ms(double seconds) { return fmt::format("{}ms", static_cast<int>(seconds * 1000)); }

class Builder {
 public:
  Builder(uint64_t seed, SwarmScenario& s) : d_(seed), s_(s) {}
  Draw& draw() { return d_; }
  void Arg(std::string_view key, const std::string& value) {
    s_.args.push_back(fmt::format("--{}={}", key, value));
  }
  void Fault(const std::string& kind) {
    if (std::find(s_.faults.begin(), s_.faults.end(), kind) == s_.faults.end()) {
      s_.faults.push_back(kind);
    }
  }

  // The link and its per-message faults (every mode).
  void Network() {
    std::string link = d_.Pick<std::string>({"ideal", "1GbE", "10GbE", "wan:5ms,100Mbit"});
    if (d_.Chance(0.3)) {
      link += fmt::format(",loss={:.3f}", d_.Real(0.001, 0.03));
      Fault("loss");
    }
    if (d_.Chance(0.25)) {
      link += fmt::format(",duplicate={:.3f}", d_.Real(0.005, 0.05));
      Fault("duplicate");
    }
    if (d_.Chance(0.3)) {
      link += ",jitter=" + Ms(d_.Real(0.001, 0.02));
      Fault("reorder");
    }
    if (d_.Chance(0.2)) {
      link += fmt::format(",corrupt={:.4f}", d_.Real(0.0005, 0.01));
      Fault("corrupt");
    }
    Arg("network", link);
  }

  // Stragglers among `n` processes named node=K (gossip) or worker=W (synchronous modes).
  void Stragglers(int n, std::string_view name, bool gossip) {
    if (!d_.Chance(0.35)) return;
    std::vector<std::string> list;
    bool paused = false;
    for (int k : d_.Nodes(n, d_.Int(1, 2))) {
      std::vector<std::string> kinds = {fmt::format("slowdown={}", d_.Int(2, 5)),
                                        "delay=" + Ms(d_.Real(0.002, 0.02)),
                                        "send_delay=" + Ms(d_.Real(0.002, 0.05))};
      if (gossip && !paused) {  // one pause a run: two would wait for each other for good
        paused = true;
        const int from = d_.Int(5, 40);  // steps
        kinds.push_back(fmt::format("pause={}..{}", from, from + d_.Int(5, 60)));
        kinds.push_back(fmt::format("drop={:.2f}", d_.Real(0.05, 0.3)));
      }
      list.push_back(fmt::format("{}={},{}", name, k, d_.Pick(kinds)));
    }
    Arg("straggle", fmt::format("{}", fmt::join(list, ";")));
    Fault("straggler");
  }

  // A partition of some of `n` nodes, from `within` seconds; `heal` 1: always heals.
  void Partition(int n, double within, double heal) {
    if (n < 2 || !d_.Chance(0.3)) return;
    std::vector<int> side = d_.Nodes(n, d_.Int(1, std::max(1, n / 2)));
    std::string spec =
        fmt::format("nodes={},at={}", fmt::join(side, "/"), Ms(d_.Real(0.05, within)));
    if (d_.Chance(heal)) {
      spec += ",for=" + Ms(d_.Real(0.1, 1.5));
      Fault("partition");
    } else {
      Fault("partition-for-good");
    }
    Arg("partition", spec);
  }

  // Forward jumps of one or two of `n` processes' clocks (a VM resumed), up to a few probe
  // periods and beyond the stall bounds' shortest.
  void ClockJumps(int n) {
    if (!d_.Chance(0.2)) return;
    std::vector<std::string> list;
    for (int k : d_.Nodes(n, d_.Int(1, 2))) {
      list.push_back(
          fmt::format("node={},at={},by={}", k, Ms(d_.Real(0.05, 1.0)), Ms(d_.Real(0.05, 3.0))));
    }
    Arg("clock-jump", fmt::format("{}", fmt::join(list, ";")));
    Fault("clock-jump");
  }

  // One of `n` processes turns hostile (an insider with valid keys): a hostile copy of each of
  // its training messages, a step clock out of bounds or a NaN under a valid checksum.
  void Attack(int n) {
    if (!d_.Chance(0.25)) return;
    const std::string kind = d_.Pick<std::string>({"clock", "nonfinite"});
    Arg("attack", fmt::format("node={},at={},kind={}", d_.Int(1, n), Ms(d_.Real(0.0, 0.8)), kind));
    Fault("attack-" + kind);
  }

  // Crashes (with and without restarts) and late joins of gossip and membership nodes.
  void CrashesAndJoins(int n) {
    std::vector<int> order = d_.Nodes(n, n);
    size_t next = 0;
    std::vector<std::string> crashes;
    const int count = d_.Chance(0.45) ? d_.Int(1, std::max(1, n / 3)) : 0;
    for (int c = 0; c < count && next < order.size(); ++c) {
      std::string spec = fmt::format("node={},at={}", order[next++], Ms(d_.Real(0.05, 1.0)));
      if (d_.Chance(0.6)) {
        spec += ",down=" + Ms(d_.Real(0.05, 1.0));
        Fault("restart");
      } else {
        Fault("crash");
      }
      crashes.push_back(spec);
    }
    if (!crashes.empty()) Arg("crash", fmt::format("{}", fmt::join(crashes, ";")));
    if (next < order.size() && d_.Chance(0.25)) {
      Arg("join", fmt::format("node={},at={}", order[next], Ms(d_.Real(0.05, 0.8))));
      Fault("join");
    }
  }

 private:
  Draw d_;
  SwarmScenario& s_;
};

void Common(Builder& b, uint64_t seed, bool training) {
  Draw& d = b.draw();
  b.Arg("seed", std::to_string(seed));
  b.Arg("probe-interval-ms", "100");
  b.Arg("probe-timeout-ms", "40");
  b.Arg("progress", "none");
  b.Arg("invariants", "true");
  if (!training) {
    b.Arg("duration", "8");
    return;
  }
  b.Arg("duration", "120");
  b.Arg("task", "linear");
  b.Arg("samples", std::to_string(d.Int(4, 16) * 1000));
  b.Arg("dimension", std::to_string(d.Pick<int>({8, 16, 32, 64})));
  b.Arg("model-dimension", std::to_string(d.Pick<int>({1000, 20000, 235146})));
  b.Arg("sample-cost", fmt::format("{}us", d.Int(50, 400)));
}

void Gossip(Builder& b, bool outer) {
  Draw& d = b.draw();
  const int n = d.Int(2, 8);
  b.Arg("nodes", std::to_string(n));
  b.Arg("epochs", fmt::format("{:.2f}", d.Real(0.3, 1.5)));
  b.Arg("topology", d.Pick<std::string>({"ring", "exponential", "random"}));
  b.Arg("compress", d.Pick<std::string>({"auto", "topk:0.05", "int8", "none", "qsgd:16"}));
  b.Arg("outer", outer ? d.Pick<std::string>(
                             {"nesterov:every=8", "nesterov:every=16,overlap=2", "sgd:every=4"})
                       : "none");
  b.Arg("max-lead", std::to_string(d.Pick<int>({-1, 4, 8, 32})));
  b.Arg("finish-wait-s", d.Pick<std::string>({"0", "2", "5"}));
  if (d.Chance(0.2)) b.Arg("init", "per-node");
  b.Network();
  b.CrashesAndJoins(n);
  b.Partition(n, 1.0, 1.0);
  b.Stragglers(n, "node", true);
  b.ClockJumps(n);
  b.Attack(n);
}

void Membership(Builder& b) {
  Draw& d = b.draw();
  const int n = d.Int(3, 16);
  b.Arg("nodes", std::to_string(n));
  b.Network();
  b.CrashesAndJoins(n);
  b.Partition(n, 2.0, 1.0);
  b.ClockJumps(n);
}

void Synchronous(Builder& b, const std::string& mode) {
  Draw& d = b.draw();
  int workers = 0;
  if (mode == "ring" || mode == "ps") {
    workers = d.Int(2, 5);
    b.Arg("n", std::to_string(workers));
    b.Arg("L", "1");
    if (mode == "ps") b.Arg("ps-sync", d.Pick<std::string>({"full", "async", "ssp:2"}));
  } else {
    const int n = d.Int(2, 3), layers = mode == "gc" ? 1 : d.Int(1, 2);
    workers = layers == 1 ? n : n + n * n;
    b.Arg("n", std::to_string(n));
    b.Arg("L", std::to_string(layers));
    if (mode != "tree") b.Arg("s", std::to_string(d.Int(0, 1)));
  }
  b.Arg("iterations", std::to_string(d.Int(10, 40)));
  // Each lost message costs a stall bound (then its rank ends and the others go on): short
  // bounds, so that a chain of them ends within the duration.
  b.Arg("stall-timeout-s", d.Pick<std::string>({"2", "5", "10"}));
  b.Arg("global-batch", std::to_string(d.Pick<int>({256, 1024})));
  b.Network();
  // Processes: a ring's N; ps's servers (one) and N workers; a tree's root and its workers.
  b.Partition(mode == "ring" ? workers : workers + 1, 1.0, 0.5);
  b.Stragglers(workers, "worker", false);
  b.ClockJumps(mode == "ring" ? workers : workers + 1);
  b.Attack(mode == "ring" ? workers : workers + 1);
}

}  // namespace

const std::vector<std::string>& SwarmFaultKinds() {
  static const std::vector<std::string> kKinds = {
      "crash",           "restart", "join",    "partition", "partition-for-good", "loss",
      "duplicate",       "reorder", "corrupt", "straggler", "clock-jump",         "attack-clock",
      "attack-nonfinite"};
  return kKinds;
}

const std::vector<std::string>& SwarmModes() {
  static const std::vector<std::string> kModes = {"gossip", "gossip+outer", "membership", "ring",
                                                  "ps",     "coded-tree",   "tree",       "gc"};
  return kModes;
}

SwarmScenario DrawScenario(uint64_t seed) {
  SwarmScenario s;
  s.seed = seed;
  Builder b(seed, s);
  // Weights: gossip, the most state, most often.
  static const std::vector<std::string> kWeighted = {
      "gossip",     "gossip", "gossip+outer", "gossip+outer", "gossip+outer",
      "membership", "ring",   "ps",           "coded-tree",   "tree",
      "gc"};
  s.mode = b.draw().Pick(kWeighted);
  b.Arg("mode", s.mode == "gossip+outer" ? "gossip" : s.mode);
  Common(b, seed, s.mode != "membership");
  if (s.mode == "gossip" || s.mode == "gossip+outer") {
    Gossip(b, s.mode == "gossip+outer");
  } else if (s.mode == "membership") {
    Membership(b);
  } else {
    Synchronous(b, s.mode);
  }
  return s;
}

std::string ReplayCommand(const std::vector<std::string>& args) {
  std::string out = "murmur sim";
  for (const std::string& a : args) {
    const bool plain = a.find_first_of(";&|<>()$`\\\"' *?") == std::string::npos;
    out += plain ? " " + a : " '" + a + "'";
  }
  return out;
}

std::vector<std::string> ParseReplayLine(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line.substr(0, line.find('#')));
  for (std::string token; in >> token;) {
    if (token.size() >= 2 && token.front() == '\'' && token.back() == '\'') {
      token = token.substr(1, token.size() - 2);
    }
    out.push_back(token);
  }
  if (out.size() >= 2 && out[0] == "murmur" && out[1] == "sim")
    out.erase(out.begin(), out.begin() + 2);
  return out;
}

}  // namespace murmur::node
