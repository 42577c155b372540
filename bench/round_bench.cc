// A CHOCO round's cost on the host, by part: Publish (sample, select, quantize,
// encode: the step bench's "compress"), Mix (the consensus step: "mix") and the receivers'
// Step for the updates (decode, check, add: "apply"), on a ring of the main job's shape (the
// default MLP's 235,146 values, top-1 % with fp16 values, a ring of 4). Between rounds every
// node's x moves (a stand-in for SGD) and a buffer larger than the last-level cache is swept
// before each part, so each starts with its vectors out of the caches as in a training node,
// where the step's own data pushes them out (--evict-mb 0: warm).
//
// Usage: murmur_round_bench [--dimension 235146] [--spec topk:0.01,values=fp16] [--rounds 200]
//                           [--evict-mb 64]
// Prints the median microseconds of each part.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "gossip/choco.h"

namespace {

using murmur::gossip::ChocoGossip;
using murmur::gossip::ChocoOptions;
using murmur::gossip::NodeId;

struct Ring {
  std::vector<NodeId> view;
  std::vector<std::unique_ptr<ChocoGossip>> nodes;
  std::vector<std::vector<float>> x;
  std::vector<double> publish, mix, apply;  // seconds, per node and round
};

// p nodes from one random model, or why ChocoGossip refused the options.
murmur::StatusOr<Ring> MakeRing(size_t p, size_t d,
                                const murmur::coding::CompressorOptions& compressor) {
  Ring ring;
  std::mt19937_64 rng(1);
  std::normal_distribution<float> normal(0.0f, 0.1f);
  std::vector<float> initial(d);
  for (float& v : initial) v = normal(rng);
  for (size_t i = 0; i < p; ++i) ring.view.push_back(10 + i);
  for (size_t i = 0; i < p; ++i) {
    ChocoOptions o;
    o.self = ring.view[i];
    o.incarnation = 1;
    o.dimension = static_cast<uint32_t>(d);
    o.compressor = compressor;
    MURMUR_ASSIGN_OR_RETURN(auto node, ChocoGossip::Create(o, initial, initial, true));
    ring.nodes.push_back(std::move(node));
    ring.x.push_back(initial);
  }
  return ring;
}

void Sweep(std::vector<float>& buffer) {
  for (size_t i = 0; i < buffer.size(); i += 16) buffer[i] += 1.0f;
}

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One round of every node of `ring`, each part timed alone after a sweep.
void RunRound(Ring& ring, uint64_t round, std::mt19937_64& rng, std::vector<float>& evict) {
  std::normal_distribution<float> normal(0.0f, 0.01f);
  std::vector<std::pair<size_t, murmur::gossip::ChocoOutgoing>> out;
  for (size_t i = 0; i < ring.nodes.size(); ++i) {
    for (float& v : ring.x[i]) v += normal(rng);
    Sweep(evict);
    auto t0 = std::chrono::steady_clock::now();
    auto stats = ring.nodes[i]->Publish(ring.x[i], ring.view, round);
    ring.publish.push_back(Since(t0));
    if (!stats.ok()) {
      std::fprintf(stderr, "round failed: %s\n", stats.status().ToString().c_str());
      std::exit(1);
    }
    Sweep(evict);
    t0 = std::chrono::steady_clock::now();
    ring.nodes[i]->Mix(ring.x[i], ring.view, round, nullptr, *stats);
    ring.mix.push_back(Since(t0));
    for (auto& o : ring.nodes[i]->TakeOutput()) out.emplace_back(i, std::move(o));
  }
  for (auto& [from, o] : out) {
    murmur::gossip::ChocoIncoming in{ring.view[from], 1, o.payload, {}};
    if (o.frame) in.frame = *o.frame;
    Sweep(evict);
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = ring.nodes[o.to - 10]->Step(in, murmur::TimePoint{});
    ring.apply.push_back(Since(t0));
    if (r.verdict != murmur::gossip::ChocoVerdict::kApplied) {
      std::fprintf(stderr, "update not applied: %s\n", r.status.ToString().c_str());
      std::exit(1);
    }
  }
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"A CHOCO round's cost on the host, by part"};
  size_t dimension = 235146;
  std::string spec = "topk:0.01,values=fp16";
  int rounds = 200;
  size_t evict_mb = 64;
  app.add_option("--dimension", dimension, "model values")->check(CLI::Range(1, 1 << 30));
  app.add_option("--spec", spec, "compressor spec");
  app.add_option("--rounds", rounds, "rounds")->check(CLI::Range(1, 100000));
  app.add_option("--evict-mb", evict_mb, "MB swept before each part (0: none)")
      ->check(CLI::Range(0, 4096));
  CLI11_PARSE(app, argc, argv);
  const auto compressor = murmur::coding::ParseCompressorSpec(spec);
  if (!compressor.ok()) {
    std::fprintf(stderr, "--spec '%s': %s\n", spec.c_str(), compressor.status().ToString().c_str());
    return 2;
  }
  auto made = MakeRing(4, dimension, *compressor);
  if (!made.ok()) {
    std::fprintf(stderr, "a CHOCO node with --dimension %zu --spec '%s': %s\n", dimension,
                 spec.c_str(), made.status().ToString().c_str());
    return 2;
  }
  Ring& ring = *made;
  std::vector<float> evict((evict_mb << 20) / sizeof(float), 0.0f);
  std::mt19937_64 rng(7);
  for (int r = 0; r < rounds; ++r) RunRound(ring, static_cast<uint64_t>(r), rng, evict);
  std::printf(
      "d %zu, %s, ring of 4, %d rounds, %zu MB swept before each part: median us "
      "publish %.1f, mix %.1f, apply (one update) %.1f\n",
      dimension, spec.c_str(), rounds, evict_mb, Median(ring.publish) * 1e6, Median(ring.mix) * 1e6,
      Median(ring.apply) * 1e6);
  return 0;
}
