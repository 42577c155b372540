#pragma once
// CHOCO on a device against CHOCO on the host: P nodes on the shared fake network run
// `rounds` rounds of local steps and gossip, with a gap in one node's streams in the middle (it
// asks for and installs snapshots), and record after every round a hash of every model, public
// copy and copy, and at the end the vectors themselves. Two runs are the same computation exactly
// when their records are equal. Used by murmur_gossip_test (the device path on the CPU) and
// murmur_cuda_test (on a GPU).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gossip/choco.h"
#include "kernels/compress_ops.h"
#include "kernels/memory.h"
#include "tests/testing/fake_network.h"

namespace murmur::gossip::equivalence {

struct Record {
  std::vector<uint64_t> round_hashes;          // after every round
  std::vector<std::vector<float>> models;      // at the end, on the host
  std::vector<std::vector<float>> public_copies;
  std::vector<std::vector<float>> copies;      // node j's copy of node j+1's public copy
  std::map<ChocoVerdict, int> verdicts;
  std::vector<double> consensus;               // node 0's relative consensus distance per round
};

inline void HashInto(uint64_t& h, const std::vector<float>& v) {
  for (float f : v) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof(bits));
    h = (h ^ bits) * 1099511628211ULL;
  }
}

// Seeds and sizes are fixed and printed by the caller.
inline Record Run(const std::string& spec, const kernels::Device& device, bool device_compressor,
                  size_t p = 5, size_t d = 4099, int rounds = 200, uint64_t seed = 2111) {
  Record rec;
  murmur::testing::FakeNetwork<ChocoOutgoing> net(p, seed);
  net.faults().min_delay = net.faults().max_delay = Duration(0);
  // Two gaps at node 2: three rounds of updates lost (repaired by replays), then every message to
  // it for 112 rounds, longer than any operator's replay log holds (repaired by dense snapshots).
  bool gap = false, cut = false;
  net.drop_if = [&](size_t, size_t to, const ChocoOutgoing& out) {
    return to == 2 && (cut || (gap && std::holds_alternative<UpdateHeader>(out.payload)));
  };
  std::vector<NodeId> view;
  for (size_t i = 0; i < p; ++i) view.push_back(static_cast<NodeId>(20 + i));
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> initial(d);
  for (float& v : initial) v = normal(rng);
  std::vector<std::unique_ptr<ChocoGossip>> nodes;
  std::vector<kernels::Buffer<float>> x;
  for (size_t i = 0; i < p; ++i) {
    ChocoOptions o;
    o.self = view[i];
    o.incarnation = 1;
    o.dimension = static_cast<uint32_t>(d);
    o.compressor = *coding::ParseCompressorSpec(spec);
    o.sampling.topology = Topology::kExponential;
    o.device = device;
    o.device_compressor = device_compressor;
    auto node = ChocoGossip::Create(o, initial, initial, /*from_initial=*/true);
    EXPECT_TRUE(node.ok()) << node.status();
    if (!node.ok()) return rec;
    nodes.push_back(std::move(*node));
    x.push_back(*kernels::Buffer<float>::FromHost(device, initial));
  }
  auto down = [&](std::span<const float> v) {
    std::vector<float> host(v.size());
    EXPECT_TRUE(kernels::CopyBytes(kernels::Device::Cpu(), host.data(), device, v.data(),
                                   v.size_bytes()).ok());
    return host;
  };
  TimePoint now{};
  std::vector<float> step(d);
  auto noise = kernels::Buffer<float>::Create(device, d);
  for (int r = 0; r < rounds; ++r) {
    gap = r >= 80 && r < 83;
    cut = r >= 84 && r < 196;
    std::vector<ChocoRoundStats> stats(p);
    for (size_t i = 0; i < p; ++i) {
      // A local "SGD step": a fixed pull towards zero plus seeded noise, the same on every device.
      for (size_t k = 0; k < d; ++k) step[k] = 0.05f * normal(rng);
      EXPECT_TRUE(noise->CopyFromHost(step).ok());
      EXPECT_TRUE(kernels::Axpy(device, -1.0f, noise->span(), x[i].span()).ok());
      auto s = nodes[i]->Publish(x[i].span(), view, static_cast<uint64_t>(r));
      EXPECT_TRUE(s.ok()) << s.status();
      stats[i] = *s;
    }
    for (bool more = true; more;) {
      more = false;
      for (size_t i = 0; i < p; ++i) {
        for (ChocoOutgoing& out : nodes[i]->TakeOutput()) {
          more = true;
          net.Send(i, out.to - 20, std::move(out), now);
        }
      }
      net.DeliverAll([&](size_t to, size_t from, ChocoOutgoing& out, TimePoint) {
        ChocoIncoming in{view[from], 1, out.payload, {}};
        if (out.frame) in.frame = *out.frame;
        ++rec.verdicts[nodes[to]->Step(in, now).verdict];
      });
    }
    for (size_t i = 0; i < p; ++i) nodes[i]->Mix(x[i].span(), view, r, nullptr, stats[i]);
    rec.consensus.push_back(stats[0].consensus_distance);
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < p; ++i) {
      HashInto(h, down(x[i].span()));
      HashInto(h, down(nodes[i]->public_copy()));
      for (size_t j = 0; j < p; ++j) {
        if (j != i && !nodes[i]->CopyOf(view[j]).empty()) HashInto(h, down(nodes[i]->CopyOf(view[j])));
      }
    }
    rec.round_hashes.push_back(h);
    now += std::chrono::milliseconds(10);
  }
  for (size_t i = 0; i < p; ++i) {
    rec.models.push_back(down(x[i].span()));
    rec.public_copies.push_back(down(nodes[i]->public_copy()));
    rec.copies.push_back(down(nodes[i]->CopyOf(view[(i + 1) % p])));
  }
  return rec;
}

// The first round whose hashes differ, for the failure message (-1: none).
inline int FirstDifference(const Record& a, const Record& b) {
  for (size_t r = 0; r < std::min(a.round_hashes.size(), b.round_hashes.size()); ++r) {
    if (a.round_hashes[r] != b.round_hashes[r]) return static_cast<int>(r);
  }
  return a.round_hashes.size() == b.round_hashes.size() ? -1 : static_cast<int>(a.round_hashes.size());
}

inline void ExpectSame(const Record& host, const Record& device) {
  EXPECT_EQ(FirstDifference(host, device), -1) << "the runs part at this round";
  EXPECT_EQ(host.models, device.models);
  EXPECT_EQ(host.public_copies, device.public_copies);
  EXPECT_EQ(host.copies, device.copies);
  EXPECT_EQ(host.verdicts, device.verdicts);
  // The gaps happened and were repaired, by replays and by snapshots, in both.
  for (ChocoVerdict v : {ChocoVerdict::kGap, ChocoVerdict::kReplayServed, ChocoVerdict::kSnapshotServed}) {
    EXPECT_GE(host.verdicts.count(v) ? host.verdicts.at(v) : 0, 1) << ChocoVerdictName(v);
  }
}

}  // namespace murmur::gossip::equivalence
