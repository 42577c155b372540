#include "node/train/trainer.h"

#include <gtest/gtest.h>

#include <cmath>

#include "node/train/fashion_mnist.h"
#include "node/train/gradient_compression.h"
#include "node/train/sharding.h"
#include "node/train/synthetic.h"

namespace murmur::node {
namespace {

std::vector<int64_t> AllRows(const Dataset& d) {
  return *ShardRows(d.rows, 0, 1, ShardStrategy::kContiguous);
}

TEST(TrainerTest, DefaultMlpReaches85PercentOnFashionMnistIn3Epochs) {
  auto data = LoadFashionMnist();
  ASSERT_TRUE(data.ok()) << data.status();
  const int64_t hidden[] = {256, 128};
  auto model = Model<float>::Create(ModelSpec::Mlp(784, hidden, 10));
  ASSERT_TRUE(model.ok());
  TrainOptions options;  // batch 64, 3 epochs
  options.sgd = {0.01, 0.9, 0.0, false};
  options.seed = 1;
  ManualClock clock;
  Trainer trainer(*model, data->train, AllRows(data->train), &data->test, options, clock);
  trainer.InitializeParams();
  int epochs_seen = 0;
  int64_t last_step = 0;
  auto summary = trainer.Run([&](const TrainProgress& p) {
    EXPECT_EQ(p.step, last_step + 1);
    last_step = p.step;
    if (p.epoch_done) {
      ++epochs_seen;
      EXPECT_TRUE(p.test.has_value());
    }
  });
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(epochs_seen, 3);
  EXPECT_EQ(summary->steps, 3 * 938);
  EXPECT_EQ(summary->samples, 3 * 60000);
  std::printf("seed %llu: test accuracy %.4f\n", 1ull, summary->test.accuracy);
  EXPECT_GE(summary->test.accuracy, 0.85);
}

TEST(TrainerTest, TopOnePercentWithErrorFeedbackStillLearnsFashionMnist) {
  // The compression issue's usability check: the default MLP, one node, one epoch, each
  // gradient replaced by its top-1 % (with error feedback) before the optimizer step.
  auto data = LoadFashionMnist();
  ASSERT_TRUE(data.ok()) << data.status();
  const int64_t hidden[] = {256, 128};
  auto model = Model<float>::Create(ModelSpec::Mlp(784, hidden, 10));
  ASSERT_TRUE(model.ok());
  auto compression = GradientCompression::Create(*coding::ParseCompressorSpec("topk:0.01"),
                                                 static_cast<size_t>(model->NumParams()));
  ASSERT_TRUE(compression.ok()) << compression.status();
  TrainOptions options;
  options.epochs = 1;
  options.sgd = {0.01, 0.9, 0.0, false};
  options.seed = 1;
  options.gradient_hook = [&](std::span<float> g) { return compression->Apply(g); };
  ManualClock clock;
  Trainer trainer(*model, data->train, AllRows(data->train), &data->test, options, clock);
  trainer.InitializeParams();
  auto summary = trainer.Run([](const TrainProgress&) {});
  ASSERT_TRUE(summary.ok()) << summary.status();
  const CompressionReport report = compression->Report();
  std::printf("seed 1: top-1%% + error feedback, 1 epoch: test accuracy %.4f, %.0f bytes/step "
              "(dense %.0f)\n",
              summary->test.accuracy, report.bytes_per_step, report.dense_bytes_per_step);
  EXPECT_EQ(report.steps, 938);
  EXPECT_NEAR(report.mean_density, 0.01, 1e-4);
  EXPECT_LT(report.bytes_per_step, report.dense_bytes_per_step / 50);
  EXPECT_GE(summary->test.accuracy, 0.80);
}

TEST(TrainerTest, AFailingGradientHookLeavesTheParametersUnchanged) {
  SyntheticOptions o;
  o.train_samples = 256;
  o.test_samples = 10;
  o.features = 8;
  auto data = MakeGaussianMixture(o);
  ASSERT_TRUE(data.ok());
  auto model = Model<float>::Create(ModelSpec::LogisticRegression(8));
  TrainOptions options;
  options.gradient_hook = [](std::span<float>) { return InvalidArgumentError("hook says no"); };
  ManualClock clock;
  Trainer trainer(*model, data->train, AllRows(data->train), &data->test, options, clock);
  trainer.InitializeParams();
  const std::vector<float> before(trainer.params().begin(), trainer.params().end());
  auto step = trainer.Step();
  ASSERT_FALSE(step.ok());
  EXPECT_EQ(step.status().message(), "hook says no");
  EXPECT_EQ(std::vector<float>(trainer.params().begin(), trainer.params().end()), before);
}

TEST(TrainerTest, StepsTakeTheScheduledLearningRate) {
  SyntheticOptions o;
  o.train_samples = 256;
  o.test_samples = 10;
  o.features = 8;
  auto data = MakeGaussianMixture(o);
  ASSERT_TRUE(data.ok());
  auto model = Model<float>::Create(ModelSpec::LogisticRegression(8));
  TrainOptions options;  // batch 64: 4 steps an epoch
  options.sgd.learning_rate = 0.5;
  options.sgd.momentum = 0;
  options.lr_shape = *LrSchedule::Parse("step:0.5", 0);
  options.lr_reference_batch = 32;  // linear scaling: × 64 / 32
  auto schedule = ScheduleFor(options, 512, 256, 64);
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  options.lr_schedule = *schedule;
  ManualClock clock;
  Trainer trainer(*model, data->train, AllRows(data->train), &data->test, options, clock);
  trainer.InitializeParams();
  std::vector<double> rates;
  for (int k = 0; k < 8; ++k) {
    ASSERT_TRUE(trainer.Step().ok());
    rates.push_back(trainer.last_lr());
  }
  EXPECT_EQ(rates, (std::vector<double>{1, 1, 1, 1, 0.1, 0.1, 0.1, 0.1}));
  // A rate given to the step wins; 0 leaves the parameters where they were.
  const std::vector<float> before(trainer.params().begin(), trainer.params().end());
  ASSERT_TRUE(trainer.Step(0.0).ok());
  EXPECT_EQ(std::vector<float>(trainer.params().begin(), trainer.params().end()), before);
  ASSERT_TRUE(trainer.Step(0.5).ok());
  EXPECT_NE(std::vector<float>(trainer.params().begin(), trainer.params().end()), before);
}

TEST(TrainerTest, LogisticRegressionSeparatesTheMixture) {
  SyntheticOptions o;
  o.train_samples = 4000;
  o.test_samples = 1000;
  o.features = 20;
  o.separation = 4.0;  // Bayes accuracy Phi(2) ~ 97.7 %
  o.seed = 3;
  auto data = MakeGaussianMixture(o);
  ASSERT_TRUE(data.ok());
  auto model = Model<float>::Create(ModelSpec::LogisticRegression(20));
  TrainOptions options;
  options.epochs = 5;
  options.batch_size = 32;
  options.sgd = {0.1, 0.0, 0.0, false};
  ManualClock clock;
  Trainer trainer(*model, data->train, AllRows(data->train), &data->test, options, clock);
  trainer.InitializeParams();
  auto summary = trainer.Run(nullptr);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_GT(summary->test.accuracy, 0.95);
  EXPECT_LT(summary->test_per_epoch.back().loss, summary->test_per_epoch.front().loss + 1e-3);
}

TEST(TrainerTest, LinearRegressionFitsDownToTheNoise) {
  SyntheticOptions o;
  o.train_samples = 5000;
  o.features = 10;
  o.noise = 0.1;  // best achievable loss 0.5 * 0.1^2 = 0.005
  auto data = MakeLinearRegression(o);
  auto model = Model<float>::Create(ModelSpec::LinearRegression(10));
  TrainOptions options;
  options.epochs = 10;
  options.batch_size = 50;
  options.sgd = {0.05, 0.5, 0.0, false};
  ManualClock clock;
  Trainer trainer(*model, data->train, AllRows(data->train), &data->test, options, clock);
  trainer.InitializeParams();
  auto summary = trainer.Run(nullptr);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_LT(summary->test.loss, 0.0075);
  EXPECT_TRUE(std::isnan(summary->test.accuracy));  // regression has no accuracy
}

TEST(TrainerTest, ShardTrainsOnlyItsRowsAndSameSeedIsDeterministic) {
  SyntheticOptions o;
  o.train_samples = 1000;
  o.features = 5;
  auto data = MakeGaussianMixture(o);
  auto run = [&](int shard) {
    auto model = Model<float>::Create(ModelSpec::LogisticRegression(5));
    TrainOptions options;
    options.epochs = 2;
    options.batch_size = 64;
    ManualClock clock;
    Trainer trainer(*model, data->train, *ShardRows(1000, shard, 4, ShardStrategy::kStrided),
                    nullptr, options, clock);
    trainer.InitializeParams();
    auto summary = trainer.Run(nullptr);
    EXPECT_EQ(summary->samples, 2 * 250);
    EXPECT_EQ(summary->steps, 2 * 4);  // ceil(250 / 64)
    return std::vector<float>(trainer.params().begin(), trainer.params().end());
  };
  EXPECT_EQ(run(1), run(1));
  EXPECT_NE(run(1), run(2));
}

TEST(TrainerTest, DivergenceIsReportedAndTheBadStepIsNotApplied) {
  SyntheticOptions o;
  o.train_samples = 256;
  o.features = 4;
  auto data = MakeLinearRegression(o);
  for (float& x : data->train.features) x *= 1e18f;  // guarantees overflow
  auto model = Model<float>::Create(ModelSpec::LinearRegression(4));
  TrainOptions options;
  options.sgd = {10.0, 0.0, 0.0, false};
  ManualClock clock;
  Trainer trainer(*model, data->train, AllRows(data->train), nullptr, options, clock);
  trainer.InitializeParams();
  Status failure;
  std::vector<float> before;
  for (int i = 0; i < 20 && failure.ok(); ++i) {
    before.assign(trainer.params().begin(), trainer.params().end());
    failure = trainer.Step().status();
  }
  ASSERT_EQ(failure.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(failure.message().find("learning rate"), std::string_view::npos) << failure;
  EXPECT_EQ(before, std::vector<float>(trainer.params().begin(), trainer.params().end()));
}

}  // namespace
}  // namespace murmur::node

namespace murmur::node {
namespace {

// A clock that advances 1 ms on every read, so timings are exact and deterministic.
class TickingClock final : public Clock {
 public:
  TimePoint Now() const override {
    now_ += std::chrono::milliseconds(1);
    return now_;
  }
  void SleepFor(Duration d) override { now_ += d; }

 private:
  mutable TimePoint now_{};
};

TEST(TrainerTest, ThroughputExcludesEvaluationTime) {
  SyntheticOptions o;
  o.train_samples = 640;
  o.features = 3;
  auto data = MakeGaussianMixture(o);
  auto model = Model<float>::Create(ModelSpec::LogisticRegression(3));
  TrainOptions options;
  options.epochs = 2;
  TickingClock clock;
  Trainer trainer(*model, data->train, AllRows(data->train), &data->test, options, clock);
  trainer.InitializeParams();
  auto s = trainer.Run(nullptr);
  ASSERT_TRUE(s.ok());
  // Each evaluation is bracketed by two consecutive clock reads (1 ms apart), once per epoch.
  EXPECT_NEAR(s->eval_seconds, 0.002, 1e-9);
  EXPECT_NEAR(s->samples_per_second, 1280 / (s->wall_seconds - 0.002), 1e-6);
}

}  // namespace
}  // namespace murmur::node

namespace murmur::node {
namespace {

TEST(EvaluateTest, FloatAndDoubleAgreeAcrossUnevenBatches) {
  SyntheticOptions o;
  o.train_samples = 10;
  o.test_samples = 1003;  // not a multiple of the evaluation batch
  o.features = 6;
  auto data = MakeGaussianMixture(o);
  const int64_t hidden[] = {5};
  ModelSpec spec = ModelSpec::Mlp(6, hidden, 1);
  spec.loss = LossKind::kSigmoidCrossEntropy;
  auto f = Model<float>::Create(spec);
  auto d = Model<double>::Create(spec);
  std::vector<double> pd(static_cast<size_t>(d->NumParams()));
  d->Initialize(pd, 9);
  std::vector<float> pf(pd.begin(), pd.end());
  auto ef = Evaluate<float>(*f, pf, data->test, 100);
  auto ed = Evaluate<double>(*d, pd, data->test, 100);
  ASSERT_TRUE(ef.ok() && ed.ok());
  EXPECT_EQ(ef->samples, 1003);
  EXPECT_NEAR(ef->loss, ed->loss, 1e-5);
  EXPECT_NEAR(ef->accuracy, ed->accuracy, 1.0 / 1003);
  EXPECT_GT(ef->accuracy, 0.0);
  EXPECT_EQ(Evaluate<float>(*f, pf, data->test, 0).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace murmur::node

namespace murmur::node {
namespace {

TEST(TrainerTest, RestoredStateContinuesBitForBitAcrossEpochBoundaries) {
  // A checkpoint mid-epoch and at an epoch boundary: the restored trainer's next steps (which
  // reshuffle at the boundary) match the original's exactly. Seed 5.
  SyntheticOptions so;
  so.train_samples = 200;
  so.features = 6;
  so.seed = 5;
  auto data = MakeGaussianMixture(so);
  ASSERT_TRUE(data.ok());
  auto model = Model<float>::Create(ModelSpec::LogisticRegression(6));
  ASSERT_TRUE(model.ok());
  TrainOptions options;
  options.batch_size = 32;  // 7 steps per epoch, the last of 8 rows
  options.sgd = {0.1, 0.9, 0.0, false};
  options.seed = 5;
  ManualClock clock;
  for (int saved_after : {3, 7, 10}) {
    Trainer a(*model, data->train, AllRows(data->train), nullptr, options, clock);
    a.InitializeParams();
    for (int i = 0; i < saved_after; ++i) ASSERT_TRUE(a.Step().ok());
    auto state = a.SaveState();
    ASSERT_TRUE(state.ok());
    Trainer b(*model, data->train, AllRows(data->train), nullptr, options, clock);
    ASSERT_TRUE(b.RestoreState(*state).ok());
    for (int i = 0; i < 9; ++i) {
      ASSERT_TRUE(a.Step().ok());
      ASSERT_TRUE(b.Step().ok());
      ASSERT_EQ(a.last_batch_rows(), b.last_batch_rows());
    }
    auto pa = a.ParamsOnHost(), pb = b.ParamsOnHost();
    EXPECT_EQ(*pa, *pb) << "saved after " << saved_after << " steps";
  }
}

TEST(TrainerTest, RestoreRefusesAStateThatDoesNotFitAndChangesNothing) {
  SyntheticOptions so;
  so.train_samples = 100;
  so.features = 4;
  auto data = MakeGaussianMixture(so);
  ASSERT_TRUE(data.ok());
  auto model = Model<float>::Create(ModelSpec::LogisticRegression(4));
  ASSERT_TRUE(model.ok());
  ManualClock clock;
  Trainer t(*model, data->train, AllRows(data->train), nullptr, TrainOptions{}, clock);
  t.InitializeParams();
  const auto before = *t.ParamsOnHost();
  const TrainerState good = *t.SaveState();
  auto bad = [&](auto edit) {
    TrainerState s = good;
    edit(s);
    return t.RestoreState(s).code();
  };
  EXPECT_EQ(bad([](TrainerState& s) { s.params.pop_back(); }), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad([](TrainerState& s) { s.velocity.push_back(0); }), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad([](TrainerState& s) { s.order[0] = s.order[1]; }), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad([](TrainerState& s) { s.cursor = 100; }), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad([](TrainerState& s) { s.cursor = -1; }), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad([](TrainerState& s) { s.rng = "not a generator"; }), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad([](TrainerState& s) { s.params.assign(s.params.size(), 7.0f); s.order.pop_back(); }),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(*t.ParamsOnHost(), before);
  EXPECT_TRUE(t.RestoreState(good).ok());
}

}  // namespace
}  // namespace murmur::node
