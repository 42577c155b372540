#pragma once
// A synchronous mode that really trains: every process a SyncNode and a
// node::PartialGradient on one device, in one process, on the fake network under a manual clock
// (node_cluster.h), with a small MLP on the first 4000 Fashion-MNIST rows. The decode makes every
// iteration one step of centralized SGD on the global batch (docs/algorithms.md §2.3), so the root's
// model is compared with CentralSgd: the same steps computed by one process. Used by
// murmur_node_test (the CPU device) and murmur_cuda_test (a GPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gossip/sync_node.h"
#include "kernels/compress_ops.h"
#include "kernels/memory.h"
#include "kernels/ops.h"
#include "node/train/fashion_mnist.h"
#include "node/train/model.h"
#include "node/train/partial_gradient.h"
#include "node/train/trainer.h"
#include "tests/testing/node_cluster.h"

namespace murmur::testing {

struct SyncTrainingSetup {
  static constexpr int64_t kRows = 4000, kBatch = 256, kIterations = 12;
  static constexpr uint64_t kSeed = 7;
  static constexpr double kLr = 0.1, kMomentum = 0.9;
  node::Dataset train, test;
  node::ModelSpec spec;
  explicit SyncTrainingSetup(const node::TrainTest& data)
      : train(data.train), test(data.test), spec(node::ModelSpec::Mlp(784, kHidden, 10)) {
    train.Truncate(kRows);
    test.Truncate(2000);
  }
  std::vector<float> InitialModel() const {
    auto m = node::Model<float>::Create(spec, kernels::Device::Cpu());
    std::vector<float> x0(static_cast<size_t>(m->NumParams()));
    m->Initialize(std::span<float>(x0), kSeed);
    return x0;
  }
  // Test accuracy of a host model.
  double Accuracy(const std::vector<float>& model) const {
    auto m = node::Model<float>::Create(spec, kernels::Device::Cpu());
    auto e = node::Evaluate<float>(*m, std::span<const float>(model), test);
    return e.ok() ? e->accuracy : -1;
  }

 private:
  static constexpr int64_t kHidden[] = {32};
};

struct SyncTrainingRun {
  std::vector<float> model;   // the root's (ring: rank 0's) final model, on the host
  uint64_t iterations = 0;
  uint64_t children_ignored = 0;      // children answers the decodes of every rank did without
  uint64_t transfer_bytes = 0;        // host↔device, the whole run
  // What the run's messages and data allow: per message 2 × its frame (down at the sender, up at
  // the receiver), per computation its rows, weights and labels (and 64 bytes for its loss and
  // checks), per process the initial model up and a final model down.
  uint64_t transfer_bound = 0;
};

// One step of SyncNode's update (mean gradient, then SgdStep) per iteration, on the CPU, with one
// process computing all B positions.
inline std::vector<float> CentralSgd(const SyncTrainingSetup& setup, bool nesterov = false) {
  auto model = node::Model<float>::Create(setup.spec, kernels::Device::Cpu());
  node::PartialGradient partial(*model, setup.train, setup.kBatch, setup.kSeed);
  std::vector<coding::WeightedSample> all;
  for (int64_t p = 0; p < setup.kBatch; ++p) all.push_back({p, 1.0});
  std::vector<float> x = setup.InitialModel(), v(x.size(), 0.0f), g(x.size());
  const kernels::SgdOptions sgd{
      .learning_rate = setup.kLr, .momentum = setup.kMomentum, .nesterov = nesterov};
  for (int64_t t = 0; t < setup.kIterations; ++t) {
    auto sum = partial.Compute(static_cast<uint64_t>(t), all, x);
    EXPECT_TRUE(sum.ok()) << sum.status();
    std::fill(g.begin(), g.end(), 0.0f);
    EXPECT_TRUE(kernels::Axpy(kernels::Device::Cpu(), 1.0f / static_cast<float>(setup.kBatch), *sum,
                              std::span<float>(g)).ok());
    EXPECT_TRUE(kernels::SgdStep<float>(kernels::Device::Cpu(), sgd, g, v, x).ok());
  }
  return x;
}

// Runs `mode` (n children per parent, `layers`, `s` tolerated stragglers; ps: n workers and the
// servers of `ps`) on `device`. With `held`, that process is stopped (SIGSTOP) once the ranks
// are assembled. The model returned is rank 0's: the root's, ring rank 0's, ps server 0's (every
// server's final slice assembled there).
inline SyncTrainingRun RunSyncTraining(const SyncTrainingSetup& setup,
                                       const kernels::Device& device, gossip::Mode mode, int n,
                                       int layers, int s, std::optional<size_t> held = std::nullopt,
                                       bool nesterov = false, const gossip::PsOptions& ps = {}) {
  using Cluster = NodeCluster<gossip::SyncNode>;
  std::printf(
      "%s (n %d, L %d, s %d%s) on %s: %lld rows, batch %lld, %lld iterations, seed %llu%s\n",
      std::string(gossip::ModeName(mode)).c_str(), n, layers, s,
      mode == gossip::Mode::kPs
          ? (", " + std::to_string(ps.servers) + " servers, " + gossip::PsDescription(ps)).c_str()
          : "",
      device.ToString().c_str(), static_cast<long long>(setup.kRows),
      static_cast<long long>(setup.kBatch), static_cast<long long>(setup.kIterations),
      static_cast<unsigned long long>(setup.kSeed),
      held ? (", process " + std::to_string(*held) + " held").c_str() : "");
  SyncTrainingRun run;
  auto plan = gossip::MakeSyncPlan(mode, n, layers, s, 1, ps);
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (!plan.ok()) return run;
  const auto processes = static_cast<size_t>(plan->processes);
  const std::vector<float> x0 = setup.InitialModel();
  std::vector<std::unique_ptr<node::Model<float>>> models;
  std::vector<std::unique_ptr<node::PartialGradient>> partials;
  for (size_t i = 0; i < processes; ++i) {
    auto model = node::Model<float>::Create(setup.spec, device);
    EXPECT_TRUE(model.ok()) << model.status();
    if (!model.ok()) return run;
    models.push_back(std::make_unique<node::Model<float>>(*std::move(model)));
    partials.push_back(std::make_unique<node::PartialGradient>(*models.back(), setup.train,
                                                               setup.kBatch, setup.kSeed));
  }
  const uint64_t start_bytes = kernels::GetDeviceMemoryStats().transferred_bytes;
  run.transfer_bound = processes * 2 * x0.size() * sizeof(float);
  Cluster cluster(processes, FastMembership(), setup.kSeed, [&](size_t i, auto&, TimePoint now) {
    gossip::SyncNodeOptions o;
    o.self = Cluster::Id(i);
    o.batch = setup.kBatch;
    o.iterations = setup.kIterations;
    o.lr = setup.kLr;
    o.momentum = setup.kMomentum;
    o.nesterov = nesterov;
    o.eval_every = 0;
    o.linger = std::chrono::milliseconds(50);
    o.device = device;
    auto node = gossip::SyncNode::Create(*plan, o, x0, now);
    EXPECT_TRUE(node.ok()) << node.status();
    return node.ok() ? *std::move(node) : nullptr;
  });
  cluster.device_gradient = [&](size_t i, const gossip::ComputeGradient& request) {
    const auto& own = cluster.machine(i).own();
    run.transfer_bound += own.size() * (static_cast<size_t>(setup.train.cols) + 2) * sizeof(float) + 64;
    auto sum = partials[i]->Compute(request.iteration, own, request.model);
    EXPECT_TRUE(sum.ok()) << sum.status();
    return sum.ok() ? *sum : std::span<const float>();
  };
  cluster.on_output = [&](size_t, const gossip::NodeAction& action) {
    if (const auto* send = std::get_if<gossip::SendTo>(&action); send && send->frame) {
      run.transfer_bound += 2 * send->frame->size();
    }
  };
  for (size_t i = 0; i < processes; ++i) cluster.Start(i, 1, x0.size());
  if (held) {
    EXPECT_TRUE(cluster.RunFor(std::chrono::seconds(10), [&] { return cluster.machine(0).assembled(); }));
    cluster.Hold(*held, true);
  }
  EXPECT_TRUE(cluster.RunFor(std::chrono::seconds(120), [&] { return cluster.node(0).over.has_value(); }));
  EXPECT_TRUE(cluster.node(0).over.has_value() && cluster.node(0).over->ok());
  const std::span<const float> root = cluster.machine(0).model();
  run.model.assign(root.begin(), root.end());
  run.iterations = cluster.machine(0).state().iteration;
  for (size_t i = 0; i < processes; ++i) run.children_ignored += cluster.machine(i).stats().children_ignored;
  run.transfer_bytes = kernels::GetDeviceMemoryStats().transferred_bytes - start_bytes;
  std::printf("  %llu iterations, test accuracy %.4f, host<->device %llu bytes (bound %llu)\n",
              static_cast<unsigned long long>(run.iterations), setup.Accuracy(run.model),
              static_cast<unsigned long long>(run.transfer_bytes),
              static_cast<unsigned long long>(run.transfer_bound));
  return run;
}

// max_k |a_k − b_k| / max(1, max_k |b_k|).
inline double RelativeMaxDifference(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double diff = 0, scale = 1;
  for (size_t k = 0; k < a.size(); ++k) {
    diff = std::max(diff, std::abs(static_cast<double>(a[k]) - b[k]));
    scale = std::max(scale, std::abs(static_cast<double>(b[k])));
  }
  return diff / scale;
}

}  // namespace murmur::testing
