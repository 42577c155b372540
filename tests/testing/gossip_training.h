#pragma once
// Four gossip nodes that really train: each a GossipNode and a node::Trainer on one
// device, in one process, on the fake network under a manual clock (node_cluster.h), with the
// MLP on the first 8000 Fashion-MNIST rows for one epoch, top-1 % fp16 CHOCO on a ring and the
// consensus finish. Everything is seeded, so two runs on the CPU are the same computation; a GPU
// run differs by its fp32 rounding. Used by murmur_node_test (the device path on the CPU against
// the host path) and murmur_cuda_test (a GPU against the CPU).
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "coding/compressor.h"
#include "gossip/gossip_node.h"
#include "kernels/memory.h"
#include "node/train/fashion_mnist.h"
#include "node/train/model.h"
#include "node/train/sharding.h"
#include "node/train/trainer.h"
#include "tests/testing/node_cluster.h"
#include "tests/testing/plain_choco_options.h"

namespace murmur::testing {

struct TrainingRun {
  std::vector<std::vector<float>> models;  // each node's final model, on the host
  std::vector<double> accuracy;            // each node's final test accuracy (first 2000 rows)
  std::vector<std::string> finish;         // each node's finish outcome
  int64_t steps = 0;                       // local steps of all nodes
  // Host↔device bytes from the first step to the first Finished (training only), and what that
  // window allows, in three parts:
  //  - the steps: each step's loss and its batch's row positions, and each node's row order
  //    twice (an epoch and the next one's start);
  //  - the evaluations: each uploads the test rows it scores (Evaluate copies each batch over);
  //  - the node machines: per frame sent (updates, model snapshots), 2 × its size at the sender
  //    (the download) and 2 × at the receiver (the upload), loosely; and per node two models (its
  //    public copy made from its model at the start, a joiner's adopted model).
  uint64_t transfer_bytes = 0;
  uint64_t transfer_bound = 0;
  struct Part {
    uint64_t bytes = 0, bound = 0;
  };
  Part compute, evaluate, node;
};

inline TrainingRun RunGossipTraining(const node::TrainTest& data, const kernels::Device& device,
                                     bool device_compressor) {
  constexpr size_t kNodes = 4;
  constexpr int64_t kRows = 8000, kBatch = 64;
  constexpr uint64_t kSeed = 31;
  std::printf("gossip training on %s (device compressor %d): %zu nodes, %lld rows, batch %lld, "
              "seed %llu\n", device.ToString().c_str(), device_compressor, kNodes,
              static_cast<long long>(kRows), static_cast<long long>(kBatch),
              static_cast<unsigned long long>(kSeed));
  node::Dataset train = data.train;
  train.Truncate(kRows);
  node::Dataset test = data.test;
  test.Truncate(2000);
  const int64_t hidden[] = {64};
  std::vector<std::unique_ptr<node::Model<float>>> models;
  std::vector<std::unique_ptr<node::Trainer>> trainers;
  ManualClock clock;
  TrainingRun run;
  for (size_t i = 0; i < kNodes; ++i) {
    auto model = node::Model<float>::Create(node::ModelSpec::Mlp(784, hidden, 10), device);
    EXPECT_TRUE(model.ok()) << model.status();
    if (!model.ok()) return run;
    models.push_back(std::make_unique<node::Model<float>>(*std::move(model)));
    node::TrainOptions options;
    options.batch_size = kBatch;
    options.sgd.learning_rate = 0.05;
    options.sgd.momentum = 0.9;
    options.seed = kSeed + i;
    auto rows = node::ShardRows(train.rows, static_cast<int>(i), kNodes, node::ShardStrategy::kContiguous);
    auto trainer = node::Trainer::Create(*models[i], train, *rows, &test, options, clock);
    EXPECT_TRUE(trainer.ok()) << trainer.status();
    if (!trainer.ok()) return run;
    trainers.push_back(*std::move(trainer));
  }
  std::vector<float> x0(static_cast<size_t>(models[0]->NumParams()));
  models[0]->Initialize(std::span<float>(x0), kSeed);
  NodeCluster<gossip::GossipNode> cluster(
      kNodes, FastMembership(), kSeed, [&](size_t i, auto&, TimePoint now) {
        EXPECT_TRUE(trainers[i]->SetParams(x0).ok());
        gossip::GossipNodeOptions o = PlainChocoNodeOptions();
        o.self = NodeCluster<gossip::GossipNode>::Id(i);
        o.incarnation = 1;
        o.choco.compressor = *coding::ParseCompressorSpec("topk:0.01,values=fp16");
        o.expect_members = kNodes;
        o.shard_rows = trainers[i]->shard_rows();
        o.budget_samples = kRows;
        o.finish_wait = std::chrono::seconds(2);
        o.linger = std::chrono::milliseconds(50);
        o.choco.device = device;
        o.choco.device_compressor = device_compressor;
        auto node = gossip::GossipNode::Create(o, trainers[i]->params(), x0, true, now);
        EXPECT_TRUE(node.ok()) << node.status();
        return node.ok() ? *std::move(node) : nullptr;
      });
  auto transferred = [] { return kernels::GetDeviceMemoryStats().transferred_bytes; };
  bool training = false, trained = false;
  cluster.compute = [&](size_t i, std::optional<double> lr) {
    const uint64_t before = transferred();
    auto loss = trainers[i]->Step(lr);
    if (training) run.compute.bytes += transferred() - before;
    ++run.steps;
    return std::pair<double, int64_t>(loss.ok() ? *loss : NAN, trainers[i]->last_batch_rows());
  };
  cluster.accuracy = [&](size_t i) {
    const uint64_t before = transferred();
    auto e = node::Evaluate<float>(*models[i], trainers[i]->params(), test);
    if (training) {
      run.evaluate.bytes += transferred() - before;
      run.evaluate.bound += static_cast<uint64_t>(test.rows) * (test.cols + 1) * 4 + 64;
    }
    return e.ok() ? e->accuracy : -1.0;
  };
  uint64_t start_bytes = 0;
  cluster.on_output = [&](size_t, const gossip::NodeAction& action) {
    if (std::holds_alternative<gossip::ComputeStep>(action) && !training && !trained) {
      training = true;
      start_bytes = transferred();
    } else if (std::holds_alternative<gossip::Finished>(action) && training) {
      training = false;
      trained = true;
      run.transfer_bytes = transferred() - start_bytes;
      run.compute.bound = static_cast<uint64_t>(run.steps) * (8 + 8 * kBatch) +
                          8 * static_cast<uint64_t>(kRows) * 2;
      run.node.bytes = run.transfer_bytes - run.compute.bytes - run.evaluate.bytes;
      run.node.bound += kNodes * 2 * x0.size() * sizeof(float);
      run.transfer_bound = run.compute.bound + run.evaluate.bound + run.node.bound;
    } else if (const auto* send = std::get_if<gossip::SendTo>(&action); send && training) {
      if (send->frame) run.node.bound += 2 * send->frame->size() * 2;
    }
  };
  for (size_t i = 0; i < kNodes; ++i) cluster.Start(i, 1, x0.size());
  cluster.RunFor(std::chrono::seconds(600), [&] {
    for (size_t i = 0; i < kNodes; ++i) {
      if (cluster.running(i)) return false;
    }
    return true;
  });
  for (size_t i = 0; i < kNodes; ++i) {
    auto host = trainers[i]->ParamsOnHost();
    run.models.push_back(host.ok() ? *host : std::vector<float>());
    run.accuracy.push_back(cluster.machine(i).state().accuracy);
    run.finish.push_back(cluster.machine(i).state().finish);
    EXPECT_TRUE(cluster.node(i).over.has_value() && cluster.node(i).over->ok()) << "node " << i;
  }
  std::printf("  %lld steps, accuracy %.4f %.4f %.4f %.4f, finish %s, host<->device %llu bytes "
              "(bound %llu)\n", static_cast<long long>(run.steps), run.accuracy[0], run.accuracy[1],
              run.accuracy[2], run.accuracy[3], run.finish[0].c_str(),
              static_cast<unsigned long long>(run.transfer_bytes),
              static_cast<unsigned long long>(run.transfer_bound));
  for (const auto& [name, part] :
       {std::pair{"steps", run.compute}, std::pair{"evaluations", run.evaluate},
        std::pair{"node machines", run.node}}) {
    std::printf("    %-13s %10llu bytes (bound %llu)\n", name,
                static_cast<unsigned long long>(part.bytes),
                static_cast<unsigned long long>(part.bound));
  }
  return run;
}

}  // namespace murmur::testing
