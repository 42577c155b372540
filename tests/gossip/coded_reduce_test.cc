#include "gossip/coded_reduce.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

#include "tests/testing/fake_network.h"

namespace murmur::gossip {
namespace {

using coding::GradientCode;
using coding::TreeAllocation;
using coding::TreeLayout;
using std::chrono::milliseconds;

constexpr uint32_t kDim = 6;

// One tree on the shared fake network (tests/testing/fake_network.h): messages are delivered in
// time order with seeded delays; the answers of "slow" ranks arrive long after everything else
// (so they are late unless needed).
// Every rank computes its own part at once: the weighted sum of per-sample float32 vectors.
class TreeSim {
 public:
  TreeSim(int n, int layers, int s, int64_t samples, uint64_t seed)
      : layout_(*TreeLayout::Create(n, layers)),
        code_(*GradientCode::Create({.n = n, .s = s})),
        alloc_(*coding::AllocateTree(layout_, code_, samples)),
        rng_(seed),
        net_(static_cast<size_t>(layout_.size()), seed ^ 0x7EE5ULL) {
    net_.faults().min_delay = milliseconds(1);
    net_.faults().max_delay = milliseconds(6);
    std::normal_distribution<float> normal;
    g_.resize(static_cast<size_t>(samples) * kDim);
    for (float& v : g_) v = normal(rng_);
    for (int64_t r = 0; r < layout_.size(); ++r) {
      nodes_.emplace_back(layout_, code_,
                          TreeAggregator::Options{.rank = r, .dimension = kDim,
                                                  .report_after = std::chrono::seconds(10)});
    }
  }

  const TreeLayout& layout() const { return layout_; }
  const GradientCode& code() const { return code_; }
  TreeAggregator& node(int64_t r) { return nodes_[static_cast<size_t>(r)]; }
  std::vector<bool>& slow() { return slow_; }
  std::vector<std::string>& reports() { return reports_; }

  // Runs iteration t with the given slow ranks until the root aggregates (or the queue empties:
  // then returns nullopt). Late answers of this iteration stay queued for the next one.
  std::optional<std::vector<float>> Iterate(uint64_t t, const std::vector<bool>& slow) {
    slow_ = slow;
    std::vector<float> model(kDim, 0.5f);
    node(0).StartIteration(t, model, now_);
    Collect(0);
    while (net_.DeliverNext(Receive())) {
      if (result_) return std::exchange(result_, std::nullopt);
    }
    return std::nullopt;
  }

  std::vector<double> Truth() const {
    std::vector<double> truth(kDim, 0.0);
    for (size_t i = 0; i < g_.size(); ++i) truth[i % kDim] += g_[i];
    return truth;
  }

  void AdvanceAndTick(Duration d) {
    now_ += d;
    for (int64_t r = 0; r < layout_.size(); ++r) {
      node(r).Tick(now_);
      Collect(r);
    }
  }
  TimePoint now() const { return now_; }
  void Start(uint64_t t) {
    node(0).StartIteration(t, std::vector<float>(kDim, 0.5f), now_);
    Collect(0);
  }
  bool Deliver() { return net_.DeliverNext(Receive()); }  // one queued message; false when none
  std::optional<std::vector<float>>& result() { return result_; }
  std::vector<std::string>& trace() { return trace_; }

 private:
  struct Message {
    CodedMessage header;
    std::vector<float> vector;
  };

  murmur::testing::FakeNetwork<Message>::Deliver Receive() {
    return [this](size_t to, size_t from, Message& m, TimePoint at) {
      now_ = std::max(now_, at);
      node(static_cast<int64_t>(to)).Step(static_cast<int64_t>(from), m.header, m.vector, now_);
      Collect(static_cast<int64_t>(to));
    };
  }

  void Collect(int64_t rank) {
    for (CodedAction& action : node(rank).TakeOutput()) {
      if (auto* send = std::get_if<CodedSend>(&action)) {
        const bool up = send->header.kind == CodedMessage::Kind::kPartialGradient;
        Duration extra{0};
        if (up && !slow_.empty() && slow_[static_cast<size_t>(rank)]) extra = std::chrono::seconds(100);
        trace_.push_back("send " + std::to_string(rank) + "->" + std::to_string(send->to));
        net_.Send(static_cast<size_t>(rank), static_cast<size_t>(send->to),
                  Message{send->header, std::move(send->vector)}, now_, extra);
      } else if (auto* compute = std::get_if<ComputeRequest>(&action)) {
        trace_.push_back("compute " + std::to_string(rank));
        std::vector<double> own(kDim, 0.0);
        for (const auto& p : alloc_.own[static_cast<size_t>(rank)]) {
          for (uint32_t i = 0; i < kDim; ++i) {
            own[i] += p.weight * static_cast<double>(g_[static_cast<size_t>(p.sample) * kDim + i]);
          }
        }
        std::vector<float> partial(own.begin(), own.end());
        node(rank).Step(OwnPart{compute->iteration, partial}, now_);
        Collect(rank);
      } else if (auto* done = std::get_if<Aggregated>(&action)) {
        result_.emplace(done->gradient.begin(), done->gradient.end());
      } else if (auto* report = std::get_if<CodedReport>(&action)) {
        reports_.push_back(report->text);
      }
    }
  }

  TreeLayout layout_;
  GradientCode code_;
  TreeAllocation alloc_;
  std::mt19937_64 rng_;
  std::vector<float> g_;
  std::vector<TreeAggregator> nodes_;
  std::vector<bool> slow_;
  murmur::testing::FakeNetwork<Message> net_;
  TimePoint now_{};
  std::optional<std::vector<float>> result_;
  std::vector<std::string> reports_;
  std::vector<std::string> trace_;
};

double RelativeError(const std::vector<float>& got, const std::vector<double>& truth) {
  double err = 0;
  double norm = 0;
  for (size_t i = 0; i < truth.size(); ++i) {
    err += (got[i] - truth[i]) * (got[i] - truth[i]);
    norm += truth[i] * truth[i];
  }
  return std::sqrt(err / std::max(norm, 1e-300));
}

// Every subset of [0, n) with exactly k members, as child-index masks.
std::vector<uint64_t> Subsets(int n, int k) {
  std::vector<uint64_t> out;
  for (uint64_t m = 0; m < (uint64_t{1} << n); ++m) {
    if (std::popcount(m) == k) out.push_back(m);
  }
  return out;
}

TEST(CodedReduceTest, RootRecoversTheFullGradientForEveryStragglerPattern) {
  // Every tree shape with n <= 6, L <= 3, s < n. A pattern picks, for every parent, which s of
  // its children are slow (their answers arrive 100 s late): exhaustive when there are at most
  // 2000 patterns, else 2000 random ones. float32 messages, 1e-4 relative error.
  const uint64_t seed = 20261122;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  int shapes = 0;
  uint64_t patterns_run = 0;
  double worst = 0;
  for (int n = 1; n <= 6; ++n) {
    for (int layers = 1; layers <= 3; ++layers) {
      for (int s = 0; s < n; ++s) {
        const double load = coding::CodedLoad(n, layers, s, 1);
        const auto samples = static_cast<int64_t>(std::ceil(3 / load));  // ~3 per worker
        TreeSim sim(n, layers, s, samples, seed + static_cast<uint64_t>(shapes));
        ++shapes;
        const TreeLayout& layout = sim.layout();
        std::vector<int64_t> parents;
        for (int64_t r = 0; r < layout.size(); ++r) {
          if (!layout.IsLeaf(r)) parents.push_back(r);
        }
        const std::vector<uint64_t> choices = Subsets(n, s);  // the slow children of one parent
        double total = 1;
        for (size_t p = 0; p < parents.size() && total <= 1e9; ++p) total *= static_cast<double>(choices.size());
        const bool exhaustive = total <= 2000;
        const uint64_t count = exhaustive ? static_cast<uint64_t>(total) : 2000;
        const std::vector<double> truth = sim.Truth();
        for (uint64_t k = 0; k < count; ++k) {
          std::vector<bool> slow(static_cast<size_t>(layout.size()), false);
          uint64_t digits = k;
          for (int64_t parent : parents) {
            const size_t pick = exhaustive ? digits % choices.size() : rng() % choices.size();
            digits /= choices.size();
            for (int c = 0; c < n; ++c) {
              if (choices[pick] >> c & 1) slow[static_cast<size_t>(layout.FirstChild(parent) + c)] = true;
            }
          }
          auto result = sim.Iterate(k, slow);
          ASSERT_TRUE(result.has_value()) << "n=" << n << " L=" << layers << " s=" << s
                                          << " pattern " << k << ": the root never aggregated";
          const double err = RelativeError(*result, truth);
          worst = std::max(worst, err);
          ASSERT_LT(err, 1e-4) << sim.code().ToString() << " L=" << layers << " pattern " << k;
          ++patterns_run;
        }
        // Nobody ever waited for a slow child: they were all late (when s > 0 and it had any).
        uint64_t waited = 0;
        for (int64_t parent : parents) waited += sim.node(parent).stats().undecodable_waits;
        EXPECT_EQ(waited, 0u);
      }
    }
  }
  std::printf("%d shapes, %llu straggler patterns, worst relative error %.3g\n", shapes,
              static_cast<unsigned long long>(patterns_run), worst);
  EXPECT_EQ(shapes, 63);
}

TEST(CodedReduceTest, ModelIsForwardedBeforeComputing) {
  // docs/algorithms.md §2.8 test 6.
  TreeSim sim(3, 2, 1, 60, 1);
  ASSERT_TRUE(sim.Iterate(0, {}).has_value());
  const auto& trace = sim.trace();
  for (int64_t r = 1; r <= 3; ++r) {  // the non-leaf workers
    const auto compute = std::find(trace.begin(), trace.end(), "compute " + std::to_string(r));
    ASSERT_NE(compute, trace.end());
    for (int k = 0; k < 3; ++k) {
      const auto send = std::find(trace.begin(), trace.end(),
                                  "send " + std::to_string(r) + "->" + std::to_string(3 * r + 1 + k));
      EXPECT_LT(send - trace.begin(), compute - trace.begin()) << "rank " << r;
    }
  }
}

TEST(CodedReduceTest, LateAnswersAreDroppedAndCounted) {
  TreeSim sim(3, 2, 1, 60, 2);
  std::vector<bool> slow(13, false);
  slow[4] = slow[7] = slow[10] = slow[3] = true;  // one per parent
  for (uint64_t t = 0; t < 5; ++t) ASSERT_TRUE(sim.Iterate(t, slow).has_value());
  while (sim.Deliver()) {
  }
  // The slow ranks' answers of iterations 0..4 all arrived after their parents moved on.
  EXPECT_EQ(sim.node(0).stats().late_dropped + sim.node(1).stats().late_dropped +
                sim.node(2).stats().late_dropped + sim.node(3).stats().late_dropped,
            5u * 4u);
  EXPECT_EQ(sim.node(0).stats().decodes, 5u);
  EXPECT_EQ(sim.node(0).stats().children_waited, 10u);
  EXPECT_EQ(sim.node(0).stats().children_ignored, 5u);
}

TEST(CodedReduceTest, MissingMoreThanSChildrenKeepsWaitingAndReports) {
  // §2.8 test 5: never a wrong answer; the parent waits, says so, and completes when one more
  // child answers.
  TreeSim sim(3, 1, 1, 30, 3);
  std::vector<bool> slow(4, false);
  slow[1] = slow[2] = true;  // two of three silent: more than s = 1
  sim.slow() = slow;
  // With every message eventually delivered, the root finishes once a slow child arrives.
  auto result = sim.Iterate(0, slow);
  ASSERT_TRUE(result.has_value());
  EXPECT_LT(RelativeError(*result, sim.Truth()), 1e-5);

  TreeSim held(3, 1, 1, 30, 3);
  held.slow() = slow;
  held.Start(0);
  // Deliver only the fast messages: three models down and rank 3's answer.
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(held.Deliver());
  held.AdvanceAndTick(std::chrono::seconds(11));
  ASSERT_FALSE(held.result().has_value());
  ASSERT_EQ(held.reports().size(), 1u);
  EXPECT_NE(held.reports()[0].find("1 of 3 children answered"), std::string::npos) << held.reports()[0];
  EXPECT_NE(held.reports()[0].find("missing ranks 1,2"), std::string::npos) << held.reports()[0];
  EXPECT_EQ(held.node(0).stats().undecodable_waits, 1u);
  held.AdvanceAndTick(std::chrono::seconds(11));
  EXPECT_EQ(held.reports().size(), 1u);  // once per iteration
}

TEST(CodedReduceTest, MalformedAndMisaddressedMessagesAreRejected) {
  auto layout = *TreeLayout::Create(3, 2);
  auto code = *GradientCode::Create({.n = 3, .s = 1});
  TreeAggregator parent(layout, code, {.rank = 1, .dimension = 4});
  std::vector<float> v(4, 1.0f);
  const TimePoint now{};
  parent.Step(0, {.kind = CodedMessage::Kind::kModel, .iteration = 3, .tree_position = 0, .dimension = 4}, v, now);
  ASSERT_EQ(parent.current_iteration(), 3u);
  parent.TakeOutput();
  // A partial from a rank that is not its child, a wrong length, a sender/position mismatch, a
  // model from a non-parent, a future iteration.
  parent.Step(7, {.kind = CodedMessage::Kind::kPartialGradient, .iteration = 3, .tree_position = 7, .dimension = 4}, v, now);
  parent.Step(4, {.kind = CodedMessage::Kind::kPartialGradient, .iteration = 3, .tree_position = 4, .dimension = 4},
              std::vector<float>(3, 1.0f), now);
  parent.Step(4, {.kind = CodedMessage::Kind::kPartialGradient, .iteration = 3, .tree_position = 5, .dimension = 4}, v, now);
  parent.Step(2, {.kind = CodedMessage::Kind::kModel, .iteration = 4, .tree_position = 2, .dimension = 4}, v, now);
  parent.Step(4, {.kind = CodedMessage::Kind::kPartialGradient, .iteration = 9, .tree_position = 4, .dimension = 4}, v, now);
  EXPECT_EQ(parent.stats().rejected, 5u);
  EXPECT_EQ(parent.current_iteration(), 3u);
  // An old model is late, a duplicate answer is counted once.
  parent.Step(0, {.kind = CodedMessage::Kind::kModel, .iteration = 2, .tree_position = 0, .dimension = 4}, v, now);
  EXPECT_EQ(parent.stats().late_dropped, 1u);
  parent.Step(4, {.kind = CodedMessage::Kind::kPartialGradient, .iteration = 3, .tree_position = 4, .dimension = 4}, v, now);
  parent.Step(4, {.kind = CodedMessage::Kind::kPartialGradient, .iteration = 3, .tree_position = 4, .dimension = 4}, v, now);
  EXPECT_EQ(parent.stats().duplicates, 1u);
  // Own work for an older iteration is stale.
  parent.Step(OwnPart{2, v}, now);
  EXPECT_EQ(parent.stats().stale_own, 1u);
  EXPECT_TRUE(parent.TakeOutput().empty());
}

// Ring all-reduce over a fake network that delivers in a random order per link-respecting
// interleaving (each rank's messages in order, ranks interleaved at random).
struct RingSim {
  RingSim(int64_t size, uint32_t dim, uint64_t seed) : rng(seed) {
    for (int64_t r = 0; r < size; ++r) nodes.emplace_back(RingAllReduce::Options{r, size, dim});
    inbox.resize(static_cast<size_t>(size));
    results.resize(static_cast<size_t>(size));
  }
  void Collect(int64_t r) {
    for (CodedAction& a : nodes[static_cast<size_t>(r)].TakeOutput()) {
      if (auto* send = std::get_if<CodedSend>(&a)) {
        inbox[static_cast<size_t>(send->to)].push_back({r, send->header, std::move(send->vector)});
      } else if (auto* done = std::get_if<Aggregated>(&a)) {
        results[static_cast<size_t>(r)].assign(done->gradient.begin(), done->gradient.end());
      }
    }
  }
  // Delivers messages at random until nothing is left.
  void Run() {
    for (;;) {
      std::vector<size_t> ready;
      for (size_t r = 0; r < inbox.size(); ++r) {
        if (!inbox[r].empty()) ready.push_back(r);
      }
      if (ready.empty()) return;
      const size_t r = ready[rng() % ready.size()];
      // Out of order within an inbox too: the buffer must cope with early steps.
      const size_t i = rng() % inbox[r].size();
      Msg m = std::move(inbox[r][i]);
      inbox[r].erase(inbox[r].begin() + static_cast<std::ptrdiff_t>(i));
      nodes[r].Step(m.from, m.header, m.vector);
      Collect(static_cast<int64_t>(r));
    }
  }
  struct Msg {
    int64_t from;
    CodedMessage header;
    std::vector<float> vector;
  };
  std::mt19937_64 rng;
  std::vector<RingAllReduce> nodes;
  std::vector<std::vector<Msg>> inbox;
  std::vector<std::vector<float>> results;
};

TEST(RingAllReduceTest, EveryRankGetsTheSameExactSum) {
  const uint64_t seed = 77;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  for (int64_t size : {1, 2, 3, 5, 12}) {
    for (uint32_t dim : {0u, 1u, 7u, 1000u}) {
      RingSim sim(size, dim, seed + static_cast<uint64_t>(size * 131 + dim));
      std::normal_distribution<float> normal;
      for (uint64_t t = 1; t <= 3; ++t) {
        std::vector<double> truth(dim, 0.0);
        for (int64_t r = 0; r < size; ++r) {
          std::vector<float> local(dim);
          for (float& v : local) v = normal(sim.rng);
          for (uint32_t i = 0; i < dim; ++i) truth[i] += local[i];
          sim.nodes[static_cast<size_t>(r)].Step(OwnPart{t, local});
          sim.Collect(r);
        }
        sim.Run();
        for (int64_t r = 0; r < size; ++r) {
          const auto& got = sim.results[static_cast<size_t>(r)];
          ASSERT_EQ(got.size(), dim) << "size " << size << " rank " << r;
          EXPECT_EQ(got, sim.results[0]) << "ranks disagree bitwise";
          if (dim > 0) {
            EXPECT_LT(RelativeError(got, truth), 1e-5);
          }
          EXPECT_FALSE(sim.nodes[static_cast<size_t>(r)].busy());
        }
      }
    }
  }
}

TEST(RingAllReduceTest, RejectsWrongSenderAndLength) {
  RingAllReduce ring({.rank = 1, .size = 4, .dimension = 8});
  std::vector<float> local(8, 1.0f);
  ring.Step(OwnPart{1, local});
  ring.TakeOutput();
  const std::vector<float> chunk(2, 1.0f);
  ring.Step(3, {.kind = CodedMessage::Kind::kPartialGradient, .iteration = 1, .tree_position = 0, .dimension = 8}, chunk);
  ring.Step(0, {.kind = CodedMessage::Kind::kPartialGradient, .iteration = 1, .tree_position = 0, .dimension = 8},
            std::vector<float>(3, 1.0f));
  ring.Step(0, {.kind = CodedMessage::Kind::kPartialGradient, .iteration = 1, .tree_position = 6, .dimension = 8}, chunk);
  ring.Step(0, {.kind = CodedMessage::Kind::kModel, .iteration = 1, .tree_position = 0, .dimension = 8}, chunk);
  EXPECT_EQ(ring.stats().rejected, 4u);
  ring.Step(0, {.kind = CodedMessage::Kind::kPartialGradient, .iteration = 0, .tree_position = 0, .dimension = 8}, chunk);
  EXPECT_EQ(ring.stats().late_dropped, 1u);
  ring.Step(0, {.kind = CodedMessage::Kind::kPartialGradient, .iteration = 1, .tree_position = 0, .dimension = 8}, chunk);
  auto actions = ring.TakeOutput();
  ASSERT_EQ(actions.size(), 1u);  // step 1 goes on to rank 2
  EXPECT_EQ(std::get<CodedSend>(actions[0]).to, 2);
  EXPECT_EQ(std::get<CodedSend>(actions[0]).header.tree_position, 1u);
}

}  // namespace
}  // namespace murmur::gossip
