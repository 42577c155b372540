// Training throughput of the default MLP (784-256-128-10, batch 64, SGD with momentum) on one
// thread, through the real Trainer::Step path (batch gather, forward, backward, optimizer).
// Prints samples/s per repeat and the median; --json prints one object for scripts.
// bench/train_bench.sh runs it next to the same model in PyTorch and prints the ratio.

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "base/clock.h"
#include "node/train/dataset.h"
#include "node/train/model.h"
#include "node/train/sharding.h"
#include "node/train/trainer.h"

using namespace murmur;

int main(int argc, char** argv) {
  CLI::App app("murmur training-step throughput (one thread)");
  int64_t steps = 400, batch = 64;
  int repeats = 5;
  bool json = false;
  app.add_option("--steps", steps, "optimizer steps per repeat")->check(CLI::PositiveNumber);
  app.add_option("--repeats", repeats, "timed repeats (median is reported)")->check(CLI::PositiveNumber);
  app.add_option("--batch", batch, "mini-batch size")->check(CLI::PositiveNumber);
  app.add_flag("--json", json, "one JSON object on stdout");
  CLI11_PARSE(app, argc, argv);

  // Random data shaped like Fashion-MNIST; throughput does not depend on the values.
  const uint64_t seed = 1;
  node::Dataset data;
  data.rows = 60000;
  data.cols = 784;
  data.num_classes = 10;
  data.features.resize(static_cast<size_t>(data.rows * data.cols));
  data.labels.resize(static_cast<size_t>(data.rows));
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  for (auto& v : data.features) v = normal(rng);
  for (auto& l : data.labels) l = static_cast<int32_t>(rng() % 10);

  const int64_t hidden[] = {256, 128};
  auto model = node::Model<float>::Create(node::ModelSpec::Mlp(784, hidden, 10));
  node::TrainOptions options;
  options.batch_size = batch;
  options.sgd = {0.01, 0.9, 0.0, false};
  options.seed = seed;
  RealClock clock;
  node::Trainer trainer(*model, data, *node::ShardRows(data.rows, 0, 1, node::ShardStrategy::kContiguous),
                        nullptr, options, clock);
  trainer.InitializeParams();
  for (int i = 0; i < 50; ++i) (void)trainer.Step();  // warm-up: caches, page faults

  std::vector<double> rates;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int64_t s = 0; s < steps; ++s) {
      auto loss = trainer.Step();
      if (!loss.ok()) {
        std::fprintf(stderr, "step failed: %s\n", loss.status().ToString().c_str());
        return 1;
      }
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rates.push_back(static_cast<double>(steps * batch) / seconds);
    if (!json) std::fprintf(stderr, "repeat %d: %.0f samples/s\n", r + 1, rates.back());
  }
  std::sort(rates.begin(), rates.end());
  const double median = rates[rates.size() / 2];
  if (json) {
    std::printf("{\"impl\":\"murmur\",\"batch\":%lld,\"threads\":1,\"samples_per_second\":%.1f,"
                "\"min\":%.1f,\"max\":%.1f}\n",
                static_cast<long long>(batch), median, rates.front(), rates.back());
  } else {
    std::printf("murmur MLP 784-256-128-10, batch %lld, 1 thread: %.0f samples/s (median of %d; "
                "min %.0f, max %.0f)\n",
                static_cast<long long>(batch), median, repeats, rates.front(), rates.back());
  }
  return 0;
}
