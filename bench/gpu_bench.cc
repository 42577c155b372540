// GPU figures of the GPU backend issue, in one run on one device (bench/README.md says how to run
// it on the lent GPU machine):
//   1. each codec kernel's achieved bandwidth (bytes it must read and write / time) as a
//      fraction of a device-to-device copy of the same 10^8 floats measured in the same run;
//   2. exact top-k at 1 % of 10^8 floats (the vector is written to --dump for
//      bench/torch_gpu.py, which times torch.topk on the same data);
//   3. the default MLP's training step (784-256-128-10, batch 64, SGD momentum) through
//      Trainer::Step on the GPU, for comparison with the same step in PyTorch.
// Medians of --repeats timed runs after a warm-up; each timed run ends with a device synchronize.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <random>
#include <vector>

#include "base/check.h"
#include "base/clock.h"
#include "kernels/compress_ops.h"
#include "kernels/device.h"
#include "kernels/memory.h"
#include "node/train/model.h"
#include "node/train/trainer.h"

using namespace murmur;
using kernels::Buffer;

namespace {

double MedianSeconds(const kernels::Device& device, int repeats, const std::function<void()>& f) {
  f();  // warm-up
  MURMUR_CHECK_OK(kernels::Synchronize(device));
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    f();
    MURMUR_CHECK_OK(kernels::Synchronize(device));
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"murmur GPU benchmark: codec bandwidth vs copy, top-k, MLP training step"};
  int64_t n = 100'000'000;
  int repeats = 7;
  int steps = 500;
  std::string dump;
  app.add_option("--size", n, "floats per vector");
  app.add_option("--repeats", repeats, "timed runs per figure (median)");
  app.add_option("--steps", steps, "training steps per timed run");
  app.add_option("--dump", dump, "write the top-k input here (raw fp32) for torch_gpu.py");
  CLI11_PARSE(app, argc, argv);

  auto resolved = kernels::ResolveDevice("cuda");
  if (!resolved.ok()) {
    std::fprintf(stderr, "gpu_bench: %s\n", std::string(resolved.status().message()).c_str());
    return 2;
  }
  const kernels::Device device = *resolved;
  std::printf("device %s, %lld floats, median of %d\n", device.ToString().c_str(),
              static_cast<long long>(n), repeats);

  std::vector<float> host(static_cast<size_t>(n));
  std::mt19937_64 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (auto& x : host) x = normal(rng);
  if (!dump.empty()) {
    std::ofstream(dump, std::ios::binary)
        .write(reinterpret_cast<const char*>(host.data()),
               static_cast<std::streamsize>(host.size() * sizeof(float)));
  }
  auto v = *Buffer<float>::FromHost(device, host);
  auto out = *Buffer<float>::Create(device, host.size());
  const size_t k = static_cast<size_t>(n / 100);
  auto idx = *Buffer<uint32_t>::Create(device, std::max<size_t>(k * 2, 1));
  auto val = *Buffer<float>::Create(device, std::max<size_t>(k * 2, 1));
  auto words = *Buffer<uint32_t>::Create(device, (host.size() + 31) / 32);
  auto levels = *Buffer<int8_t>::Create(device, host.size());
  auto half = *Buffer<uint16_t>::Create(device, host.size());
  const double bytes = 4.0 * static_cast<double>(n);

  const double copy = MedianSeconds(device, repeats, [&] {
    MURMUR_CHECK_OK(kernels::CopyBytes(device, out.data(), device, v.data(), host.size() * 4));
  });
  const double copy_bw = 2 * bytes / copy;
  std::printf("\n%-34s %10s %10s %12s\n", "kernel", "ms", "GB/s", "of copy");
  std::printf("%-34s %10.3f %10.1f %12s\n", "device-to-device copy (read+write)", copy * 1e3,
              copy_bw / 1e9, "1.00");
  int64_t count = 0;
  // tau = 2.576 keeps ~1 % of a standard normal.
  struct Row {
    const char* name;
    double moved;  // bytes a kernel must read and write
    std::function<void()> run;
  };
  std::vector<Row> rows = {
      {"threshold select |v|>=2.576 (CUB)", bytes + 8.0 * n / 100,
       [&] { MURMUR_CHECK_OK(kernels::SelectAtLeast(device, v.span(), 2.576f, idx.span(), val.span(), &count)); }},
      {"exact top-k 1% (radix select)", bytes + 8.0 * n / 100,
       [&] { MURMUR_CHECK_OK(kernels::TopK(device, v.span(), static_cast<int64_t>(k), idx.span().first(k), val.span().first(k), &count)); }},
      {"1-bit sign packing", bytes + bytes / 32,
       [&] { MURMUR_CHECK_OK(kernels::PackSigns(device, v.span(), words.span())); }},
      {"QSGD levels (int8, 127)", bytes + bytes / 4,
       [&] { MURMUR_CHECK_OK(kernels::StochasticLevels<int8_t>(device, v.span(), 25.0, 127, 7, levels.span())); }},
      {"fp16 conversion", bytes + bytes / 2,
       [&] { MURMUR_CHECK_OK(kernels::FloatToHalf(device, v.span(), half.span())); }},
      {"scatter-add of 1% (decode)", 3 * 8.0 * n / 100,
       [&] { MURMUR_CHECK_OK(kernels::ScatterAdd(device, idx.span().first(k), val.span().first(k), 1.0f, out.span())); }},
      {"error feedback r += g (axpy)", 3 * bytes,
       [&] { MURMUR_CHECK_OK(kernels::Axpy(device, 1.0f, v.span(), out.span())); }},
  };
  double worst = 1e9;
  for (const Row& row : rows) {
    const double t = MedianSeconds(device, repeats, row.run);
    const double ratio = row.moved / t / copy_bw;
    worst = std::min(worst, ratio);
    std::printf("%-34s %10.3f %10.1f %12.2f\n", row.name, t * 1e3, row.moved / t / 1e9, ratio);
  }
  const double topk = MedianSeconds(device, repeats, [&] {
    MURMUR_CHECK_OK(kernels::TopK(device, v.span(), static_cast<int64_t>(k), idx.span().first(k),
                                  val.span().first(k), &count));
  });
  std::printf("\ncodec kernels: worst %.2f of copy bandwidth (goal >= 0.50: %s)\n", worst,
              worst >= 0.5 ? "met" : "MISSED");
  std::printf("topk_ms %.3f (k = %zu of %lld; compare torch_gpu.py's torch.topk)\n", topk * 1e3,
              k, static_cast<long long>(n));

  // 3. The training step on random data of Fashion-MNIST's shape.
  node::Dataset data;
  data.rows = 60000;
  data.cols = 784;
  data.num_classes = 10;
  data.features.resize(static_cast<size_t>(data.rows * data.cols));
  for (auto& x : data.features) x = normal(rng);
  data.labels.resize(static_cast<size_t>(data.rows));
  for (auto& l : data.labels) l = static_cast<int32_t>(rng() % 10);
  const int64_t hidden[] = {256, 128};
  auto model = *node::Model<float>::Create(node::ModelSpec::Mlp(784, hidden, 10), device);
  node::TrainOptions options;
  options.batch_size = 64;
  options.sgd.learning_rate = 0.01;
  options.sgd.momentum = 0.9;
  RealClock clock;
  std::vector<int64_t> all(static_cast<size_t>(data.rows));
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  auto trainer = *node::Trainer::Create(model, data, all, nullptr, options, clock);
  trainer->InitializeParams();
  const double step = MedianSeconds(device, repeats, [&] {
    for (int s = 0; s < steps; ++s) MURMUR_CHECK_OK(trainer->Step().status());
  }) / steps;
  std::printf("step_us %.1f (MLP 784-256-128-10, batch 64, SGD momentum; compare torch_gpu.py)\n",
              step * 1e6);
  return 0;
}
