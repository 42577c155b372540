// GossipSession on its own: the real driver loop (PeerNode over ZeroMQ on loopback, plaintext)
// around a model that is a plain vector the test steps itself. The budget, the cluster schedule's
// rate, the consensus finish, a stop, and a run whose seeds never answer.

#include "node/driver/gossip_session.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <string_view>
#include <thread>
#include <vector>

#include "coding/compressor.h"
#include "tests/testing/plain_choco_options.h"

namespace murmur::node {
namespace {

constexpr size_t kDim = 200;
constexpr int64_t kRows = 8;  // samples per step

// x ← x − 0.1 (x − target): the cluster's optimum is the mean of the members' targets.
class PullWork : public GossipWork {
 public:
  explicit PullWork(float target) : x_(kDim, 0.0f), target_(target) {}
  std::span<float> params() override { return x_; }
  const kernels::Device& device() const override { return device_; }
  void ResetOptimizerState() override { ++resets_; }
  std::optional<double> Evaluate(bool full) override {
    (full ? full_evaluations_ : subset_evaluations_)++;
    return 0.5;
  }
  double Step() {
    double loss = 0;
    for (float& v : x_) {
      loss += 0.5 * (v - target_) * (v - target_);
      v -= 0.1f * (v - target_);
    }
    return loss / static_cast<double>(kDim);
  }
  const std::vector<float>& x() const { return x_; }
  int full_evaluations_ = 0;
  int subset_evaluations_ = 0;
  int resets_ = 0;

 private:
  std::vector<float> x_;
  float target_;
  kernels::Device device_ = kernels::Device::Cpu();
};

// A budget of `budget` samples: one epoch of that many.
GossipPeerOptions Options(std::vector<std::string> seeds, int members, int64_t budget) {
  GossipPeerOptions o;
  o.node = murmur::testing::PlainChocoNodeOptions();
  o.peer.cluster_id = "session-test";
  o.peer.seeds = std::move(seeds);
  o.peer.membership.probe_interval = std::chrono::milliseconds(100);
  o.peer.membership.probe_timeout = std::chrono::milliseconds(60);
  o.peer.membership.suspicion_multiplier = 20;  // a starved test process is not declared dead
  o.node.choco.compressor = *coding::ParseCompressorSpec("topk:0.1");
  o.expect_members = members;
  o.node.join_wait = std::chrono::seconds(3);  // members > 1; without, the session starts at once
  o.node.finish_wait = std::chrono::seconds(5);
  o.node.eval_every = 10;
  o.shard_samples = 100;
  o.epochs = 1;
  o.epoch_samples = budget;
  o.same_init = true;
  o.join_timeout = Duration{0};
  o.report_interval = std::chrono::milliseconds(10);
  return o;
}

struct RunResult {
  StatusOr<GossipProgress> end = InternalError("not run");
  std::vector<std::optional<double>> rates;  // session.lr() at each step
  int progress_calls = 0;
};

// The caller's loop of gossip_session.h.
RunResult Drive(GossipSession& session, PullWork& work) {
  RunResult r;
  while (session.Next()) {
    r.rates.push_back(session.lr());
    const double loss = work.Step();
    session.Computed(static_cast<float>(loss), kRows, std::chrono::microseconds(200));
  }
  r.end = session.End();
  return r;
}

TEST(GossipSessionTest, TwoSessionsSpendTheClusterBudgetAndEndOnOneModel) {
  constexpr int64_t kBudget = 2 * 8 * 60;  // 60 steps each
  PullWork wa(1.0f), wb(3.0f);
  RunResult ra, rb;
  GossipSession a(
      Options({}, 2, kBudget), wa, nullptr, [&](const GossipProgress&) { ++ra.progress_calls; },
      nullptr);
  ASSERT_TRUE(a.Start().ok());
  GossipSession b(
      Options({a.endpoint()}, 2, kBudget), wb, nullptr,
      [&](const GossipProgress&) { ++rb.progress_calls; }, nullptr);
  ASSERT_TRUE(b.Start().ok());
  std::thread tb([&] {
    RunResult r = Drive(b, wb);
    rb.end = std::move(r.end);
    rb.rates = std::move(r.rates);
  });
  RunResult r = Drive(a, wa);
  ra.end = std::move(r.end);
  ra.rates = std::move(r.rates);
  tb.join();
  ASSERT_TRUE(ra.end.ok()) << ra.end.status();
  ASSERT_TRUE(rb.end.ok()) << rb.end.status();
  // The budget is the cluster's: each stops once its estimate of the cluster's samples (its own
  // and the other's claims, which lag) reaches it, so together they trained at least the budget
  // and each at most the budget.
  EXPECT_GE(ra.end->samples + rb.end->samples, kBudget);
  EXPECT_LE(ra.end->samples, kBudget);
  EXPECT_LE(rb.end->samples, kBudget);
  EXPECT_EQ(ra.end->budget_samples, kBudget);
  EXPECT_TRUE(ra.end->finished);
  EXPECT_GT(ra.end->bytes_sent, 0u);
  EXPECT_GT(ra.progress_calls, 0);
  EXPECT_GT(rb.progress_calls, 0);
  // No schedule given: the caller keeps its own rate.
  for (const auto& rate : ra.rates) EXPECT_FALSE(rate.has_value());
  // The consensus finish: one model, the midpoint of the two final models, so it moved each by
  // the same distance. (Not "between the two targets": a member starved of CPU on a loaded
  // machine ends near the zero start, and CHOCO's lagging public copies can carry a model past
  // its target for a while, so neither final model need lie between them.)
  EXPECT_EQ(ra.end->finish, "averaged");
  EXPECT_EQ(rb.end->finish, "averaged");
  EXPECT_EQ(wa.x(), wb.x());
  EXPECT_GT(wa.x()[0], 0.0f) << "the models moved from their zero start";
  EXPECT_NEAR(ra.end->finish_moved, rb.end->finish_moved, 2e-3 * (1 + ra.end->finish_moved))
      << "the average is the midpoint (to fp16 rounding)";
  // Periodic evaluations on the subset, the final one on the whole set.
  EXPECT_GT(wa.subset_evaluations_, 0);
  EXPECT_GT(wa.full_evaluations_, 0);
  a.Leave();
  b.Leave();
}

TEST(GossipSessionTest, TheClusterScheduleGivesEveryStepItsRate) {
  constexpr int64_t kBudget = 8 * 50;
  LrScheduleOptions cosine;
  cosine.kind = LrScheduleKind::kCosine;
  cosine.base_lr = 0.2;
  cosine.total_samples = kBudget;
  const LrSchedule schedule = *LrSchedule::Create(cosine);
  PullWork w(1.0f);
  GossipPeerOptions o = Options({}, 0, kBudget);
  // The cluster's schedule from its shape and base rate over the run's budget.
  o.schedule_rate = true;
  o.train.lr_shape.kind = LrScheduleKind::kCosine;
  o.train.sgd.learning_rate = 0.2;
  GossipSession s(o, w, nullptr, nullptr, nullptr);
  ASSERT_TRUE(s.Start().ok());
  RunResult r = Drive(s, w);
  ASSERT_TRUE(r.end.ok()) << r.end.status();
  ASSERT_EQ(r.rates.size(), static_cast<size_t>(kBudget / kRows));
  for (size_t i = 0; i < r.rates.size(); ++i) {
    ASSERT_TRUE(r.rates[i].has_value()) << "step " << i;
    // A lone member: the cluster's samples before step i are its own.
    EXPECT_DOUBLE_EQ(*r.rates[i], schedule.At(static_cast<int64_t>(i) * kRows)) << "step " << i;
  }
  EXPECT_LE(r.end->finish_contributors, 1u);  // nobody to average with
  s.Leave();
}

TEST(GossipSessionTest, AStopEndsTheRunWithTheOwnModel) {
  PullWork w(2.0f);
  std::atomic<bool> stop{false};
  GossipSession s(Options({}, 0, 8 * 1000), w, nullptr, nullptr, [&] { return stop.load(); });
  ASSERT_TRUE(s.Start().ok());
  int steps = 0;
  while (s.Next()) {
    s.Computed(static_cast<float>(w.Step()), kRows, std::chrono::microseconds(100));
    if (++steps == 5) stop = true;
  }
  auto end = s.End();
  ASSERT_TRUE(end.ok()) << end.status();
  // The stop is seen at the next Next, after the step the machine had already asked for.
  EXPECT_EQ(end->local_steps, 6);
  EXPECT_EQ(end->end_reason, "stopped");
  EXPECT_NE(end->finish, "averaged");
  const float expected = 2.0f * (1.0f - std::pow(0.9f, 6.0f));  // six pulls from 0 toward 2
  EXPECT_NEAR(w.x()[0], expected, 1e-5f);
  s.Leave();
}

TEST(GossipSessionTest, SeedsThatNeverAnswerEndTheRunAsUnavailable) {
  PullWork w(1.0f);
  // A loopback port nobody listens on: another session's, after it left.
  std::string gone;
  {
    PullWork other(0.0f);
    GossipSession s(Options({}, 0, 8), other, nullptr, nullptr, nullptr);
    ASSERT_TRUE(s.Start().ok());
    gone = s.endpoint();
    s.Leave();
  }
  GossipPeerOptions o = Options({gone}, 2, 8 * 100);
  o.join_timeout = std::chrono::milliseconds(300);
  GossipSession s(o, w, nullptr, nullptr, nullptr);
  ASSERT_TRUE(s.Start().ok());
  int steps = 0;
  while (s.Next()) {
    s.Computed(static_cast<float>(w.Step()), kRows, std::chrono::microseconds(100));
    ++steps;
  }
  auto end = s.End();
  ASSERT_FALSE(end.ok());
  EXPECT_EQ(end.status().code(), StatusCode::kUnavailable) << end.status();
  EXPECT_EQ(steps, 0);  // it never trained: it waited for the members it expects
  s.Leave();
}

TEST(GossipPeerOptionsTest, EveryRuleOnceAndWhatTheSessionDerives) {
  GossipPeerOptions o;
  o.epochs = 2;
  EXPECT_NE(o.Validate().message().find("epochs needs epoch_samples"), std::string_view::npos);
  o.epoch_samples = 1000;
  EXPECT_TRUE(o.Validate().ok()) << o.Validate();
  o.expect_members = 4;
  EXPECT_EQ(o.ShardRows(), 250);  // the epoch split over the members
  o.shard_samples = 300;
  EXPECT_EQ(o.ShardRows(), 300);  // unless given
  EXPECT_EQ(o.BudgetSamples(), 2000);
  EXPECT_FALSE(o.Schedule()->has_value());  // the caller's own rate
  o.schedule_rate = true;
  o.train.sgd.learning_rate = 0.1;
  o.train.lr_reference_batch = 64;  // the linear scaling rule: x global batch / 64
  auto schedule = o.Schedule();
  ASSERT_TRUE(schedule.ok() && schedule->has_value()) << schedule.status();
  EXPECT_DOUBLE_EQ((*schedule)->At(0), 0.1 * static_cast<double>(o.train.batch_size * 4) / 64);
  o.expect_members = 0;
  EXPECT_NE(o.Validate().message().find("needs expect_members"), std::string_view::npos);
  o.train.lr_reference_batch = 0;
  o.epochs = 0;
  EXPECT_EQ(o.Validate().message(), o.CheckBudget().message());  // no budget at all
  EXPECT_EQ(o.BudgetSamples(), 0);
}

}  // namespace
}  // namespace murmur::node
