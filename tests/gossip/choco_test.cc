#include "gossip/choco.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <variant>

#include "tests/testing/fake_network.h"

namespace murmur::gossip {
namespace {

using std::chrono::milliseconds;

// P CHOCO nodes over the shared fake network (tests/testing/fake_network.h) without delay: every
// output is delivered (or dropped by `drop`) before the round goes on.
struct Cluster {
  std::vector<NodeId> view;
  std::vector<std::unique_ptr<ChocoGossip>> nodes;
  std::vector<std::vector<float>> x;
  std::map<ChocoVerdict, int> verdicts;
  std::function<bool(const ChocoOutgoing&)> drop;  // true: lose this message
  TimePoint now{};
  murmur::testing::FakeNetwork<ChocoOutgoing> net;

  // `clip_fraction` 0: the paper's CHOCO, whose properties (a preserved average, exact gossip,
  // consensus to rounding) clipped mixing gives up for robustness.
  Cluster(size_t p, size_t d, const std::string& spec, double gamma, uint64_t seed,
          Topology topology = Topology::kRing, double clip_fraction = ChocoOptions{}.clip_fraction)
      : net(p, seed) {
    net.faults().min_delay = net.faults().max_delay = Duration(0);
    net.drop_if = [this](size_t, size_t, const ChocoOutgoing& out) { return drop && drop(out); };
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal;
    std::vector<float> initial(d, 0.0f);
    for (size_t i = 0; i < p; ++i) view.push_back(10 + i);
    for (size_t i = 0; i < p; ++i) {
      ChocoOptions o;
      o.self = view[i];
      o.incarnation = 1;
      o.dimension = static_cast<uint32_t>(d);
      o.compressor = *coding::ParseCompressorSpec(spec);
      o.gamma = gamma;
      o.sampling.topology = topology;
      o.clip_fraction = clip_fraction;
      nodes.push_back(*ChocoGossip::Create(o, initial, initial, /*from_initial=*/true));
      std::vector<float> xi(d);
      for (float& v : xi) v = normal(rng);
      x.push_back(std::move(xi));
    }
  }

  size_t IndexOf(NodeId id) const { return static_cast<size_t>(id - 10); }

  // Delivers until no node has output left (requests bring replies), on the shared fake network
  // with no delay: in the order sent.
  void Deliver(Incarnation incarnation = 1) {
    for (bool more = true; more;) {
      more = false;
      for (size_t i = 0; i < nodes.size(); ++i) {
        for (ChocoOutgoing& out : nodes[i]->TakeOutput()) {
          more = true;
          const size_t to = IndexOf(out.to);
          net.Send(i, to, std::move(out), now);
        }
      }
      net.DeliverAll([&](size_t to, size_t from, ChocoOutgoing& out, TimePoint) {
        ChocoIncoming in{view[from], incarnation, out.payload, {}};
        if (out.frame) in.frame = *out.frame;
        const auto r = nodes[to]->Step(in, now);
        ++verdicts[r.verdict];
      });
    }
  }

  void SyncRound(uint64_t round) {
    std::vector<ChocoRoundStats> stats(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) stats[i] = *nodes[i]->Publish(x[i], view, round);
    Deliver();
    for (size_t i = 0; i < nodes.size(); ++i) nodes[i]->Mix(x[i], view, round, nullptr, stats[i]);
    now += milliseconds(10);
  }

  std::vector<double> Mean() const {
    std::vector<double> m(x[0].size(), 0.0);
    for (const auto& xi : x) {
      for (size_t k = 0; k < m.size(); ++k) m[k] += xi[k] / static_cast<double>(x.size());
    }
    return m;
  }
  double ConsensusError() const {
    const auto m = Mean();
    double e = 0;
    for (const auto& xi : x) {
      for (size_t k = 0; k < m.size(); ++k) e += (xi[k] - m[k]) * (xi[k] - m[k]);
    }
    return e / static_cast<double>(x.size());
  }
  void ExpectCopiesConsistent(const std::string& when) {
    for (size_t i = 0; i < nodes.size(); ++i) {
      const auto mine = nodes[i]->public_copy();
      for (size_t j = 0; j < nodes.size(); ++j) {
        if (i == j) continue;
        const auto copy = nodes[j]->CopyOf(view[i]);
        if (copy.empty()) continue;
        ASSERT_EQ(nodes[j]->CopyVersion(view[i]), nodes[i]->version()) << when;
        ASSERT_EQ(std::memcmp(copy.data(), mine.data(), mine.size_bytes()), 0)
            << when << ": node " << j << "'s copy of node " << i << " differs";
      }
    }
  }
};

TEST(ChocoTest, PreservesTheAverageForAnyCompressor) {
  for (const char* spec : {"topk:0.1", "qsgd:16,rescale=on", "onebit:0.1", "none"}) {
    const uint64_t seed = 7;
    Cluster c(9, 100, spec, 0.2, seed, Topology::kRing, /*clip_fraction=*/0);
    const auto before = c.Mean();
    for (uint64_t r = 0; r < 1000; ++r) c.SyncRound(r);
    const auto after = c.Mean();
    for (size_t k = 0; k < before.size(); ++k) {
      ASSERT_NEAR(after[k], before[k], 1e-4) << spec << " seed " << seed << " entry " << k;
    }
  }
}

TEST(ChocoTest, TopKReachesConsensusOnARingOfNine) {
  // docs/algorithms.md §3.6 test 2 (in float32 the error stops at rounding, not at 1e-20).
  const uint64_t seed = 3;
  Cluster c(9, 100, "topk:0.1", 0.2, seed, Topology::kRing, /*clip_fraction=*/0);
  const double initial = c.ConsensusError();
  for (uint64_t r = 0; r < 3000; ++r) c.SyncRound(r);
  EXPECT_LT(c.ConsensusError(), initial * 1e-9) << "seed " << seed << ", initial " << initial;
  EXPECT_EQ(c.verdicts[ChocoVerdict::kGap], 0);
  EXPECT_EQ(c.verdicts[ChocoVerdict::kRejected], 0);
}

TEST(ChocoTest, IdentityCompressionWithGammaOneIsExactGossip) {
  const uint64_t seed = 11;
  Cluster c(6, 33, "none", 1.0, seed, Topology::kRing, /*clip_fraction=*/0);
  const auto w = MixingMatrix(PeerSamplingOptions{}, c.view, 0);
  for (uint64_t r = 0; r < 20; ++r) {
    std::vector<std::vector<double>> expected(c.x.size(), std::vector<double>(33, 0.0));
    for (size_t i = 0; i < c.x.size(); ++i) {
      for (size_t j = 0; j < c.x.size(); ++j) {
        for (size_t k = 0; k < 33; ++k) expected[i][k] += w[i][j] * c.x[j][k];
      }
    }
    c.SyncRound(r);
    for (size_t i = 0; i < c.x.size(); ++i) {
      for (size_t k = 0; k < 33; ++k) ASSERT_NEAR(c.x[i][k], expected[i][k], 1e-5) << "round " << r;
    }
  }
}

TEST(ChocoTest, EveryCopyOfAPublicCopyIsBitwiseEqualAfterEveryRound) {
  for (Topology t : {Topology::kRing, Topology::kExponential, Topology::kRandom}) {
    Cluster c(8, 257, "topk:0.05,values=fp16", 0.3, 5, t);
    for (uint64_t r = 0; r < 60; ++r) {
      c.SyncRound(r);
      c.ExpectCopiesConsistent(std::string(TopologyName(t)) + " round " + std::to_string(r));
    }
  }
}

TEST(ChocoTest, ALostUpdateIsReplayedAndTrackingResumes) {
  Cluster c(5, 64, "topk:0.1", 0.2, 9);
  for (uint64_t r = 0; r < 5; ++r) c.SyncRound(r);
  int dropped = 0;
  c.drop = [&](const ChocoOutgoing& out) {
    const bool lose = std::holds_alternative<UpdateHeader>(out.payload) && out.to == 12 && dropped < 2;
    dropped += lose;
    return lose;
  };
  c.SyncRound(5);
  c.SyncRound(6);  // node 12 now sees a gap from each neighbour and asks for what it missed
  EXPECT_EQ(dropped, 2);
  EXPECT_GE(c.verdicts[ChocoVerdict::kGap], 1);
  EXPECT_GE(c.verdicts[ChocoVerdict::kReplayServed], 1);
  EXPECT_EQ(c.verdicts[ChocoVerdict::kSnapshotServed], 0) << "the log held the lost updates";
  for (uint64_t r = 7; r < 20; ++r) c.SyncRound(r);
  c.ExpectCopiesConsistent("after the replay");
}

TEST(ChocoTest, AGapLongerThanTheReplayLogBringsADenseSnapshot) {
  // top-k 10 % of 64 values: 6 entries, 8 bytes each and a header, against a 256-byte dense model:
  // the log holds a few updates. Node 12 misses every update for 12 rounds.
  Cluster c(5, 64, "topk:0.1", 0.2, 9);
  for (uint64_t r = 0; r < 3; ++r) c.SyncRound(r);
  bool cut = true;
  c.drop = [&](const ChocoOutgoing& out) {
    return cut && std::holds_alternative<UpdateHeader>(out.payload) && out.to == 12;
  };
  for (uint64_t r = 3; r < 15; ++r) c.SyncRound(r);
  cut = false;
  c.verdicts.clear();
  c.SyncRound(15);
  EXPECT_GE(c.verdicts[ChocoVerdict::kGap], 1);
  EXPECT_EQ(c.verdicts[ChocoVerdict::kReplayServed], 0);
  EXPECT_GE(c.verdicts[ChocoVerdict::kSnapshotServed], 1);
  for (uint64_t r = 16; r < 20; ++r) c.SyncRound(r);
  c.ExpectCopiesConsistent("after the snapshot");
}

TEST(ChocoTest, AStreamJoinedLateFromTheInitialModelIsReplayedNotSnapshotted) {
  // Node 12 hears nothing of the first rounds (as a neighbour learned of late): the seeded
  // initial model is version 0 of every stream, so the updates after it are all it needs.
  Cluster c(5, 64, "topk:0.1", 0.2, 9);
  c.drop = [&](const ChocoOutgoing& out) {
    return out.to == 12 && c.now < TimePoint{} + std::chrono::milliseconds(20);
  };
  for (uint64_t r = 0; r < 4; ++r) c.SyncRound(r);
  EXPECT_GE(c.verdicts[ChocoVerdict::kReplayServed], 1);
  EXPECT_EQ(c.verdicts[ChocoVerdict::kSnapshotServed], 0);
  for (uint64_t r = 4; r < 10; ++r) c.SyncRound(r);
  c.ExpectCopiesConsistent("after the replay");
}

TEST(ChocoTest, AReplayIsRefusedForVersionsTheLogNoLongerHoldsOrNeverHad) {
  Cluster c(3, 64, "topk:0.1", 0.2, 9);
  for (uint64_t r = 0; r < 30; ++r) c.SyncRound(r);
  ChocoGossip& owner = *c.nodes[0];
  const uint64_t v = owner.version();
  for (uint64_t from : {uint64_t{0}, v, v + 1, ~uint64_t{0}}) {
    ChocoIncoming in{11, 1, SnapshotRequest{from, false, true}, {}};
    c.now += std::chrono::seconds(1);
    const auto r = owner.Step(in, c.now);
    const auto out = owner.TakeOutput();
    if (from == 0) {  // compacted away: a dense snapshot
      EXPECT_EQ(r.verdict, ChocoVerdict::kSnapshotServed);
      ASSERT_EQ(out.size(), 1u);
      EXPECT_TRUE(std::holds_alternative<SnapshotReply>(out[0].payload));
    } else {  // nothing after it, or a version it never had: a dense snapshot too
      EXPECT_EQ(r.verdict, ChocoVerdict::kSnapshotServed) << from;
    }
  }
  // One version back: exactly the last update, as it was sent.
  ChocoIncoming in{11, 1, SnapshotRequest{v - 1, false, true}, {}};
  c.now += std::chrono::seconds(1);
  EXPECT_EQ(owner.Step(in, c.now).verdict, ChocoVerdict::kReplayServed);
  const auto out = owner.TakeOutput();
  ASSERT_EQ(out.size(), 1u);
  const auto* h = std::get_if<UpdateHeader>(&out[0].payload);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->round, v);
  EXPECT_EQ(h->base_sequence, v - 1);
}

TEST(ChocoTest, SnapshotRequestsAreRetriedUntilOneArrives) {
  Cluster c(3, 16, "topk:0.25", 0.2, 1);
  c.SyncRound(0);
  bool lose_snapshots = true;
  c.drop = [&](const ChocoOutgoing& out) {
    if (out.to == 10 && std::holds_alternative<UpdateHeader>(out.payload) &&
        std::get<UpdateHeader>(out.payload).round == 2) {
      return true;  // open a gap at node 10
    }
    return lose_snapshots && std::holds_alternative<SnapshotReply>(out.payload);
  };
  for (uint64_t r = 1; r < 6; ++r) c.SyncRound(r);  // 50 ms: under the 2 s retry, no new request
  EXPECT_TRUE(c.nodes[0]->CopyOf(11).empty());
  EXPECT_GE(c.verdicts[ChocoVerdict::kAwaitingSnapshot], 1);
  lose_snapshots = false;
  c.now += std::chrono::seconds(3);
  c.SyncRound(6);  // asks again
  c.SyncRound(7);
  c.ExpectCopiesConsistent("after the retried snapshot");
  EXPECT_FALSE(c.nodes[0]->CopyOf(11).empty());
}

TEST(ChocoTest, ANewLifeOfAPeerRestartsItsStreamAndOldMessagesAreStale) {
  Cluster c(3, 16, "topk:0.25", 0.2, 1);
  for (uint64_t r = 0; r < 4; ++r) c.SyncRound(r);
  // Node 11 restarts with incarnation 2 and a model it adopted (not the initial one).
  ChocoOptions o;
  o.self = 11;
  o.incarnation = 2;
  o.dimension = 16;
  o.compressor = *coding::ParseCompressorSpec("topk:0.25");
  o.gamma = 0.2;
  std::vector<float> adopted = c.x[0];
  std::vector<float> zeros(16, 0.0f);
  c.nodes[1] = *ChocoGossip::Create(o, adopted, zeros, /*from_initial=*/false);
  c.x[1] = adopted;
  auto stats = *c.nodes[1]->Publish(c.x[1], c.view, 4);
  (void)stats;
  for (ChocoOutgoing& out : c.nodes[1]->TakeOutput()) {
    ChocoIncoming in{11, 2, out.payload, *out.frame};
    EXPECT_EQ(c.nodes[c.IndexOf(out.to)]->Step(in, c.now).verdict, ChocoVerdict::kGap);
  }
  // The requests reach node 11, whose snapshots install its new public copy.
  for (size_t i : {0, 2}) {
    for (ChocoOutgoing& req : c.nodes[i]->TakeOutput()) {
      ChocoIncoming in{c.view[i], 1, req.payload, {}};
      EXPECT_EQ(c.nodes[1]->Step(in, c.now).verdict, ChocoVerdict::kSnapshotServed);
    }
  }
  for (ChocoOutgoing& out : c.nodes[1]->TakeOutput()) {
    ChocoIncoming in{11, 2, out.payload, *out.frame};
    EXPECT_EQ(c.nodes[c.IndexOf(out.to)]->Step(in, c.now).verdict, ChocoVerdict::kApplied);
  }
  c.ExpectCopiesConsistent("after the restart");
  // A late message of the old life changes nothing.
  ChocoIncoming old{11, 1, UpdateHeader{99, 98, 16, false, true}, {}};
  EXPECT_EQ(c.nodes[0]->Step(old, c.now).verdict, ChocoVerdict::kStaleIncarnation);
}

// A refused message changes no copy: one under a sender's new incarnation (a snapshot nobody
// asked for, an update for another model's size) leaves the copy of its old life as it was, version
// and values; the new life's first message that passes starts the copy afresh.
TEST(ChocoTest, ARefusedMessageOfANewIncarnationLeavesTheTrackedCopy) {
  Cluster c(3, 16, "topk:0.25", 0.2, 3);
  for (uint64_t r = 0; r < 3; ++r) c.SyncRound(r);
  ChocoGossip& node = *c.nodes[0];
  const uint64_t version = node.CopyVersion(11);
  const std::vector<float> before(node.CopyOf(11).begin(), node.CopyOf(11).end());
  ASSERT_GT(version, 0u);
  ASSERT_FALSE(before.empty());
  std::vector<std::byte> dense;
  coding::EncodeDense(std::vector<float>(16, 0.5f), dense);
  ChocoIncoming unasked{11, 2, SnapshotReply{7, 16, false}, dense};
  EXPECT_EQ(node.Step(unasked, c.now).verdict, ChocoVerdict::kRejected);
  ChocoIncoming broken{11, 2, UpdateHeader{1, 0, 17, false, true}, dense};
  EXPECT_EQ(node.Step(broken, c.now).verdict, ChocoVerdict::kRejected);
  EXPECT_EQ(node.CopyVersion(11), version);
  const auto after = node.CopyOf(11);
  ASSERT_EQ(after.size(), before.size());
  EXPECT_EQ(std::memcmp(after.data(), before.data(), after.size_bytes()), 0);
  // The new life's update that passes its checks (one it cannot place: a gap) starts afresh.
  ChocoIncoming next{11, 2, UpdateHeader{5, 4, 16, false, true}, dense};
  EXPECT_EQ(node.Step(next, c.now).verdict, ChocoVerdict::kGap);
  EXPECT_EQ(node.CopyVersion(11), 0u);
  EXPECT_TRUE(node.CopyOf(11).empty());
}

// Before this node's first round (an outer optimizer's H steps, or local SGD's) no update norm
// is known: a stream's first update is bounded by half of ‖x̂_i‖ alone. A forged +10 on every
// parameter is refused; an honest-sized one is applied.
TEST(ChocoTest, AFirstUpdateBeforeAnyRoundIsBoundedByTheModelsNorm) {
  ChocoOptions o;
  o.self = 10;
  o.incarnation = 1;
  o.dimension = 16;
  o.compressor = *coding::ParseCompressorSpec("none");
  const std::vector<float> model(16, 1.0f);  // ‖x̂_i‖ = 4
  for (float value : {10.0f, 0.1f}) {
    auto g = *ChocoGossip::Create(o, model, model, /*from_initial=*/true);
    const std::vector<float> update(16, value);
    std::vector<std::byte> frame;
    coding::EncodeDense(update, frame);
    ChocoIncoming in{11, 1, UpdateHeader{1, 0, 16, true, true}, frame};
    const ChocoStepResult r = g->Step(in, TimePoint{});
    if (value > 1) {
      EXPECT_EQ(r.verdict, ChocoVerdict::kOutlier) << r.status.ToString();
      for (float v : g->CopyOf(11)) EXPECT_EQ(v, 1.0f);  // nothing applied
    } else {
      EXPECT_EQ(r.verdict, ChocoVerdict::kApplied) << r.status.ToString();
      EXPECT_FLOAT_EQ(g->CopyOf(11)[0], 1.1f);
    }
  }
}

TEST(ChocoTest, CorruptOrMismatchedUpdatesAreRejectedAndRecovered) {
  Cluster c(3, 16, "topk:0.25", 0.2, 2);
  c.SyncRound(0);
  auto stats = *c.nodes[1]->Publish(c.x[1], c.view, 1);
  (void)stats;
  auto out = c.nodes[1]->TakeOutput();
  ASSERT_FALSE(out.empty());
  std::vector<std::byte> corrupt = *out[0].frame;
  corrupt.back() ^= std::byte{0x40};
  ChocoIncoming in{11, 1, out[0].payload, corrupt};
  auto r = c.nodes[c.IndexOf(out[0].to)]->Step(in, c.now);
  EXPECT_EQ(r.verdict, ChocoVerdict::kRejected);
  EXPECT_EQ(r.failure, coding::DecodeFailure::kChecksumMismatch) << r.status.ToString();
  ChocoIncoming wrong{11, 1, UpdateHeader{2, 1, 17, false, true}, *out[0].frame};
  r = c.nodes[c.IndexOf(out[0].to)]->Step(wrong, c.now);
  EXPECT_EQ(r.verdict, ChocoVerdict::kRejected);
  EXPECT_NE(r.status.message().find("17"), std::string_view::npos) << r.status.ToString();
  // The hole is repaired by a snapshot within the next rounds.
  for (uint64_t r2 = 2; r2 < 6; ++r2) c.SyncRound(r2);
  c.ExpectCopiesConsistent("after the rejected update");
}

TEST(ChocoTest, DivergenceGuardHalvesGammaUntilConsensusResumes) {
  // docs/algorithms.md §3.6 test 6: gamma 1 with top-10 % on a ring of 9 diverges without the guard
  // and converges with it.
  const uint64_t seed = 4;
  {
    Cluster unguarded(9, 100, "topk:0.1", 1.0, seed, Topology::kRing, /*clip_fraction=*/0);
    for (auto& n : unguarded.nodes) {
      ChocoOptions o;
      o.self = unguarded.view[&n - &unguarded.nodes[0]];
      o.incarnation = 1;
      o.dimension = 100;
      o.compressor = *coding::ParseCompressorSpec("topk:0.1");
      o.gamma = 1.0;
      o.guard_checks = 1 << 30;
      o.clip_fraction = 0;
      std::vector<float> zeros(100, 0.0f);
      n = *ChocoGossip::Create(o, zeros, zeros, true);
    }
    const double initial = unguarded.ConsensusError();
    for (uint64_t r = 0; r < 300; ++r) unguarded.SyncRound(r);
    EXPECT_GT(unguarded.ConsensusError(), initial * 1e3) << "gamma 1 should diverge; seed " << seed;
  }
  Cluster c(9, 100, "topk:0.1", 1.0, seed, Topology::kRing, /*clip_fraction=*/0);
  const double initial = c.ConsensusError();
  for (uint64_t r = 0; r < 3000; ++r) c.SyncRound(r);
  EXPECT_LT(c.nodes[0]->gamma(), 1.0) << "seed " << seed;
  EXPECT_GE(c.nodes[0]->gamma_halvings(), 1u);
  EXPECT_LT(c.ConsensusError(), initial * 1e-6) << "gamma " << c.nodes[0]->gamma();
}

// A hostile member (id 13 of a ring of 4, neighbour of 10 and 12) sends, every round, an update
// of 0.4 ‖x̂‖ in one fixed direction: under the outlier bound (half the model's norm), so it is
// applied. Without clipped mixing it drags its neighbours along; with it each round's pull is
// at most the honest neighbour's distance, so the honest models stay near where they would be
// with the hostile member idle, and the clipped terms are counted.
struct DriftRun {
  double drift = 0;      // the honest nodes' mean along the hostile direction, over ‖x̄‖
  uint64_t clipped = 0;  // terms clipped on the honest nodes
};
DriftRun RunWithAHostileDrift(double clip_fraction, bool hostile, uint64_t seed) {
  const size_t d = 64;
  Cluster c(4, d, "none", 0.5, seed, Topology::kRing, clip_fraction);
  // Honest models near a common point, as in training: the mean plus 1 % noise.
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> centre(d);
  for (float& v : centre) v = normal(rng);
  for (auto& xi : c.x) {
    for (size_t k = 0; k < d; ++k) xi[k] = centre[k] + 0.01f * normal(rng);
  }
  std::vector<float> direction(d, 0.0f);
  for (size_t k = d - 8; k < d; ++k) direction[k] = 1.0f / std::sqrt(8.0f);  // "the last layer"
  double centre_norm = 0;
  for (float v : centre) centre_norm += double(v) * v;
  centre_norm = std::sqrt(centre_norm);
  // The hostile member's frames: every update it sends replaced by 0.4 ‖x̄‖ along `direction`.
  coding::Update push;
  push.op = coding::Operator::kNone;
  push.dimension = static_cast<uint32_t>(d);
  push.dense = true;
  push.format = coding::ValueFormat::RawFloat32();
  for (float v : direction) push.values.push_back(static_cast<float>(0.4 * centre_norm) * v);
  auto frame = std::make_shared<std::vector<std::byte>>();
  coding::EncodeUpdate(push, *frame);
  for (uint64_t r = 0; r < 200; ++r) {
    std::vector<ChocoRoundStats> stats(4);
    for (size_t i = 0; i < 4; ++i) stats[i] = *c.nodes[i]->Publish(c.x[i], c.view, r);
    if (hostile) {
      for (ChocoOutgoing& out : c.nodes[3]->TakeOutput()) {
        if (std::holds_alternative<UpdateHeader>(out.payload)) out.frame = frame;
        c.net.Send(3, c.IndexOf(out.to), std::move(out), c.now);
      }
    }
    c.Deliver();
    for (size_t i = 0; i < 3; ++i) c.nodes[i]->Mix(c.x[i], c.view, r, nullptr, stats[i]);
    // The hostile member itself does not move toward the others (it only pushes).
    c.now += milliseconds(10);
  }
  DriftRun run;
  for (size_t i = 0; i < 3; ++i) {
    double along = 0;
    for (size_t k = 0; k < d; ++k) along += double(c.x[i][k] - centre[k]) * direction[k];
    run.drift += along / 3 / centre_norm;
    run.clipped += c.nodes[i]->clipped_terms();
  }
  return run;
}

TEST(ChocoTest, ClippedMixingBoundsAHostileNeighboursPullByTheHonestOnesDistance) {
  for (uint64_t seed : {1, 2, 3}) {
    const DriftRun idle = RunWithAHostileDrift(0.5, /*hostile=*/false, seed);
    const DriftRun clipped = RunWithAHostileDrift(0.5, /*hostile=*/true, seed);
    const DriftRun plain = RunWithAHostileDrift(0, /*hostile=*/true, seed);
    std::printf(
        "seed %llu: drift along the hostile direction, relative: idle %.2e, clipped %.2e "
        "(%llu terms clipped), unclipped %.2e\n",
        static_cast<unsigned long long>(seed), idle.drift, clipped.drift,
        static_cast<unsigned long long>(clipped.clipped), plain.drift);
    EXPECT_GT(plain.drift, 1.0) << "seed " << seed << ": the attack moves an unclipped mix";
    EXPECT_LT(std::abs(clipped.drift - idle.drift), 0.01) << "seed " << seed;
    EXPECT_GT(clipped.clipped, 200u) << "seed " << seed;
    EXPECT_EQ(plain.clipped, 0u);
  }
}

// One round's consensus step with two copies at different distances r_1 < r_2 (random models):
// the farther one is clipped to r_1, so the step moves the model by at most γ (w_1 + w_2) r_1.
TEST(ChocoTest, ClippedMixingClipsOnlyTheFartherPeerToTheNearerOnesDistance) {
  Cluster c(3, 8, "none", 1.0, 6);
  c.SyncRound(0);
  std::vector<float> x = c.x[0];
  const uint64_t clipped_before = c.nodes[0]->clipped_terms();
  const auto pub = c.nodes[0]->public_copy();
  const auto near = c.nodes[0]->CopyOf(11);
  double r = 0;
  for (size_t k = 0; k < 8; ++k) r += double(near[k] - pub[k]) * (near[k] - pub[k]);
  r = std::sqrt(r);
  std::vector<float> before(x);
  ChocoRoundStats stats;
  c.nodes[0]->Mix(x, c.view, 1, nullptr, stats);
  EXPECT_EQ(stats.clipped, 1u);  // of two different distances, the farther one is clipped
  double moved = 0;
  for (size_t k = 0; k < 8; ++k) moved += double(x[k] - before[k]) * (x[k] - before[k]);
  const double radius = std::min(r, [&] {
    const auto far = c.nodes[0]->CopyOf(12);
    double f = 0;
    for (size_t k = 0; k < 8; ++k) f += double(far[k] - pub[k]) * (far[k] - pub[k]);
    return std::sqrt(f);
  }());
  const double w = 1.0 / 3;  // the ring of 3's weight per neighbour
  EXPECT_LE(std::sqrt(moved), 1.0 * 2 * w * radius * (1 + 1e-5));
  EXPECT_EQ(c.nodes[0]->clipped_terms(), clipped_before + 1);
}

TEST(ChocoTest, StalePeersWeighLessAndMissingCopiesKeepTheirWeight) {
  Cluster c(3, 8, "none", 1.0, 6);
  c.SyncRound(0);
  std::vector<float> x = c.x[0];
  ChocoRoundStats stats;
  c.nodes[0]->Mix(x, c.view, 1, [](NodeId) { return 0.0; }, stats);
  EXPECT_EQ(x, c.x[0]) << "fully damped peers must not move the model";
  EXPECT_EQ(stats.mixed, 2u);
  c.nodes[0]->Forget(11);
  ChocoRoundStats stats2;
  c.nodes[0]->Mix(x, c.view, 1, nullptr, stats2);
  EXPECT_EQ(stats2.missing, 1u);
}

TEST(ChocoTest, NeighbourAverageIsTheWeightedMeanOfReadyCopies) {
  Cluster c(3, 4, "none", 1.0, 8);
  std::vector<float> out(4, -1.0f);
  EXPECT_FALSE(c.nodes[0]->NeighbourAverage(c.view, out));
  EXPECT_EQ(out[0], -1.0f);
  c.SyncRound(0);
  ASSERT_TRUE(c.nodes[0]->NeighbourAverage(c.view, out));
  const auto a = c.nodes[1]->public_copy();
  const auto b = c.nodes[2]->public_copy();
  for (size_t k = 0; k < 4; ++k) EXPECT_NEAR(out[k], (a[k] + b[k]) / 2, 1e-6);
}

// A model with a NaN or infinity skips the round with the entry named and changes nothing: no
// version, no public copy change, no output; the next round goes on. Top-k reads x − x̂ without
// writing it (Compressor::CompressDifference); fp16 writes it first.
TEST(ChocoTest, ARoundOfANonFiniteModelIsRefusedByNameAndChangesNothing) {
  for (const char* spec : {"topk:0.01,values=fp16", "fp16"}) {
    SCOPED_TRACE(spec);
    Cluster c(3, 40000, spec, 0.5, 8);
    c.SyncRound(0);
    const std::vector<float> before(c.nodes[0]->public_copy().begin(),
                                    c.nodes[0]->public_copy().end());
    const uint64_t version = c.nodes[0]->version();
    for (float bad : {NAN, INFINITY, -INFINITY}) {
      for (size_t at : {size_t{0}, size_t{31337}, size_t{39999}}) {
        std::vector<float> x = c.x[0];
        x[at] = bad;
        const auto r = c.nodes[0]->Publish(x, c.view, 1);
        ASSERT_FALSE(r.ok()) << bad << " at " << at;
        EXPECT_EQ(r.status().message(),
                  "CHOCO round skipped: model entry " + std::to_string(at) + " is not finite");
        EXPECT_EQ(c.nodes[0]->version(), version);
        EXPECT_TRUE(std::ranges::equal(c.nodes[0]->public_copy(), before));
        EXPECT_TRUE(c.nodes[0]->TakeOutput().empty());
      }
    }
    c.SyncRound(1);  // and the node goes on
    EXPECT_EQ(c.nodes[0]->version(), version + 1);
  }
}

TEST(ChocoTest, OptionsAreChecked) {
  ChocoOptions o;
  o.self = 1;
  std::vector<float> v(4, 0.0f);
  EXPECT_FALSE(ChocoGossip::Create(o, v, v, true).ok());  // dimension 0
  o.dimension = 4;
  o.gamma = 1.5;
  EXPECT_FALSE(ChocoGossip::Create(o, v, v, true).ok());
  o.gamma = 0;
  std::vector<float> nan(4, std::nanf(""));
  EXPECT_FALSE(ChocoGossip::Create(o, nan, v, false).ok());
  auto g = *ChocoGossip::Create(o, v, v, true);
  EXPECT_DOUBLE_EQ(g->gamma(), DefaultGamma(o.compressor));
  std::vector<float> x = {1, 2, std::nanf(""), 4};
  const std::vector<NodeId> view = {1};
  EXPECT_FALSE(g->Round(x, view, 0, nullptr).ok());
  EXPECT_EQ(g->version(), 0u) << "a refused round must not advance the stream";
}

// SetDensityFactor (GossipNode's small-cluster schedule): twice the kept entries from the next
// round on, with the default γ of twice the fraction; a γ that was set stays, and the guard's
// halvings carry over; the copies stay bit for bit equal across the change.
TEST(ChocoTest, TheDensityFactorDoublesTheKeptEntriesAndTheDefaultGamma) {
  for (const double gamma : {0.0, 0.3}) {
    SCOPED_TRACE("gamma " + std::to_string(gamma));
    Cluster c(4, 1000, "topk:0.05", gamma, 5);
    const double default_gamma = 5 * 0.05;
    EXPECT_DOUBLE_EQ(c.nodes[0]->gamma(), gamma > 0 ? gamma : default_gamma);
    auto sent_entries = [&] {
      auto stats = c.nodes[0]->Publish(c.x[0], c.view, 0);
      EXPECT_TRUE(stats.ok());
      const size_t n = stats.ok() ? stats->sent_values : 0;
      c.Deliver();
      for (size_t i = 1; i < c.nodes.size(); ++i) {
        EXPECT_TRUE(c.nodes[i]->Publish(c.x[i], c.view, 0).ok());
      }
      c.Deliver();
      for (size_t i = 0; i < c.nodes.size(); ++i) {
        ChocoRoundStats none;
        c.nodes[i]->Mix(c.x[i], c.view, 0, nullptr, none);
      }
      return n;
    };
    EXPECT_EQ(sent_entries(), 50u);
    ASSERT_TRUE(c.nodes[0]->DensityScalable());
    for (auto& n : c.nodes) n->SetDensityFactor(2);
    EXPECT_EQ(c.nodes[0]->density_factor(), 2);
    EXPECT_DOUBLE_EQ(c.nodes[0]->gamma(), gamma > 0 ? gamma : 2 * default_gamma);
    EXPECT_EQ(sent_entries(), 100u);
    c.ExpectCopiesConsistent("after the change");
    for (auto& n : c.nodes) n->SetDensityFactor(1);
    EXPECT_DOUBLE_EQ(c.nodes[0]->gamma(), gamma > 0 ? gamma : default_gamma);
    EXPECT_EQ(sent_entries(), 50u);
    c.ExpectCopiesConsistent("back");
  }
  Cluster dense(2, 100, "qsgd:16", 0, 5);
  EXPECT_FALSE(dense.nodes[0]->DensityScalable()) << "only a kept fraction scales";
}

// ---- Soft synchronization ----

}  // namespace
}  // namespace murmur::gossip

namespace murmur::gossip {
namespace {

uint64_t Held(const ChocoGossip& node, std::string_view buffer) {
  MemoryUse m;
  node.AddMemory(m);
  return m.Of(buffer);
}

TEST(ChocoMemoryTest, BuffersAreCountedAndTheInitialModelGoesOnceNoStreamCanStartFromIt) {
  // int8 on a ring of 4, d = 1000: an update is ~1 KB, so the replay log (at most 4 KB, a dense
  // snapshot's bytes) has dropped version 1 after a handful of rounds.
  const size_t d = 1000;
  Cluster c(4, d, "int8", 0.5, 3);
  const uint64_t model = d * sizeof(float);
  EXPECT_EQ(Held(*c.nodes[0], "choco_public"), model);
  EXPECT_EQ(Held(*c.nodes[0], "initial_model"), model);
  EXPECT_EQ(Held(*c.nodes[0], "choco_copies"), 0u);
  c.SyncRound(0);
  EXPECT_EQ(Held(*c.nodes[0], "choco_copies"), 2 * model) << "a ring: two neighbours";
  EXPECT_EQ(Held(*c.nodes[0], "initial_model"), model) << "the log still reaches version 0";
  EXPECT_GT(Held(*c.nodes[0], "replay_log"), 0u);
  EXPECT_LE(Held(*c.nodes[0], "replay_log"), model);
  EXPECT_GE(Held(*c.nodes[0], "update"), model) << "q_i's values";
  for (uint64_t r = 1; r < 12; ++r) c.SyncRound(r);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(Held(*c.nodes[i], "initial_model"), 0u) << "node " << i;
    EXPECT_LE(Held(*c.nodes[i], "replay_log"), model);
  }
  c.ExpectCopiesConsistent("after the initial model went");
}

TEST(ChocoMemoryTest, AStreamJoinedOnceTheLogsLeftVersionZeroCostsASnapshotAndStaysExact) {
  // Node 13 hears nothing of the first 12 rounds: by then every log has dropped version 1, so its
  // copies come as snapshots, and they stay bit-exact.
  const size_t d = 1000;
  Cluster c(4, d, "int8", 0.5, 4);
  c.drop = [&](const ChocoOutgoing& out) {
    return out.to == 13 && c.now < TimePoint{} + milliseconds(120);
  };
  for (uint64_t r = 0; r < 12; ++r) c.SyncRound(r);
  c.drop = nullptr;
  for (uint64_t r = 12; r < 16; ++r) c.SyncRound(r);
  EXPECT_GE(c.verdicts[ChocoVerdict::kSnapshotServed], 1);
  c.ExpectCopiesConsistent("after the late streams");
}

TEST(ChocoMemoryTest, CloseKeepsThePublicCopyAndLogAndDropsLaterUpdates) {
  const size_t d = 500;
  Cluster c(3, d, "int8", 0.5, 5);
  for (uint64_t r = 0; r < 3; ++r) c.SyncRound(r);
  ChocoGossip& closed = *c.nodes[0];
  const std::vector<float> public_before(closed.public_copy().begin(), closed.public_copy().end());
  closed.Close();
  EXPECT_TRUE(closed.closed());
  EXPECT_EQ(Held(closed, "choco_copies"), 0u);
  EXPECT_EQ(Held(closed, "update"), 0u);
  EXPECT_EQ(Held(closed, "compressor"), 0u);
  EXPECT_EQ(Held(closed, "choco_public"), d * sizeof(float));
  EXPECT_GT(Held(closed, "replay_log"), 0u);
  // The others go on: their updates to the closed node are dropped as closed, and their
  // requests still answered.
  for (size_t i = 1; i < 3; ++i) ASSERT_TRUE(c.nodes[i]->Publish(c.x[i], c.view, 3).ok());
  c.Deliver();
  EXPECT_GE(c.verdicts[ChocoVerdict::kClosed], 2);
  const ChocoStepResult served =
      closed.Step({11, 1, SnapshotRequest{0, false, false}, {}}, c.now + std::chrono::seconds(5));
  EXPECT_EQ(served.verdict, ChocoVerdict::kSnapshotServed);
  EXPECT_EQ(std::vector<float>(closed.public_copy().begin(), closed.public_copy().end()),
            public_before);
  EXPECT_DEATH((void)closed.Publish(c.x[0], c.view, 4), "after Close");
}

}  // namespace
}  // namespace murmur::gossip
