#include "coding/dgc.h"

#include <gtest/gtest.h>

#include <cmath>

#include "coding/compressor.h"
#include "tests/testing/test_vectors.h"

namespace murmur::coding {
namespace {

using testing::Distribution;
using testing::MakeVector;

Compressor MakeCompressor(std::string_view spec, size_t n) {
  return std::move(*Compressor::Create(*ParseCompressorSpec(spec), n));
}

TEST(DgcTest, SendingEverythingWithoutMaskingIsDenseMomentumSgd) {
  // docs/algorithms.md §4.7 test 2: ratio 1 reproduces momentum SGD's trajectory.
  const size_t n = 257;
  const float lr = 0.05f;
  const float m = 0.9f;
  DgcMomentum dgc = *DgcMomentum::Create({.momentum = m, .momentum_masking = false}, n);
  Compressor all = MakeCompressor("topk:1,ef=off", n);
  std::vector<float> w_dgc(n, 0.5f);
  std::vector<float> w_sgd(n, 0.5f);
  std::vector<float> u(n, 0.0f);
  Update update;
  for (int t = 0; t < 100; ++t) {
    const std::vector<float> g = MakeVector(Distribution::kNormal, n, 300 + t);
    ASSERT_TRUE(dgc.Accumulate(g).ok());
    ASSERT_TRUE(all.Compress(dgc.velocity(), update).ok());
    dgc.Commit(update);
    AddTo(update, -lr, std::span<float>(w_dgc));
    for (size_t i = 0; i < n; ++i) {
      u[i] = m * u[i] + g[i];
      w_sgd[i] -= lr * u[i];
    }
  }
  // Identical arithmetic up to fused multiply-adds, which the compiler may contract differently
  // in the two loops: 1e-5 relative over 100 steps.
  for (size_t i = 0; i < n; ++i) {
    EXPECT_NEAR(w_dgc[i], w_sgd[i], 1e-5 * std::max(1.0f, std::fabs(w_sgd[i]))) << i;
  }
}

TEST(DgcTest, MaskingZeroesMomentumAndVelocityWhereSent) {
  const size_t n = 1000;
  for (bool masking : {true, false}) {
    DgcMomentum dgc = *DgcMomentum::Create({.momentum = 0.9, .momentum_masking = masking}, n);
    Compressor top = MakeCompressor("topk:0.01,ef=off", n);
    Update update;
    for (int t = 0; t < 3; ++t) {
      ASSERT_TRUE(dgc.Accumulate(MakeVector(Distribution::kNormal, n, 50 + t)).ok());
      const std::vector<float> u_before(dgc.momentum().begin(), dgc.momentum().end());
      ASSERT_TRUE(top.Compress(dgc.velocity(), update).ok());
      dgc.Commit(update);
      ASSERT_EQ(update.count(), 10u);
      for (uint32_t i : update.indices) {
        EXPECT_EQ(dgc.velocity()[i], 0.0f);
        if (masking) {
          EXPECT_EQ(dgc.momentum()[i], 0.0f);
        } else {
          EXPECT_EQ(dgc.momentum()[i], u_before[i]);
        }
      }
    }
  }
}

TEST(DgcTest, WithoutMomentumVelocityIsTheErrorFeedbackResidual) {
  // §4.7 test 1: sum of sent + v == sum of gradients.
  const size_t n = 500;
  DgcMomentum dgc = *DgcMomentum::Create({.momentum = 0.0}, n);
  Compressor dgc_select = MakeCompressor("dgc:0.02,ef=off", n);
  std::vector<double> sent(n, 0.0);
  std::vector<double> total(n, 0.0);
  Update update;
  for (int t = 0; t < 100; ++t) {
    const std::vector<float> g = MakeVector(Distribution::kNormal, n, 900 + t);
    for (size_t i = 0; i < n; ++i) total[i] += g[i];
    ASSERT_TRUE(dgc.Accumulate(g).ok());
    ASSERT_TRUE(dgc_select.Compress(dgc.velocity(), update).ok());
    dgc.Commit(update);
    AddTo(update, 1.0, std::span<double>(sent));
  }
  for (size_t i = 0; i < n; ++i) {
    EXPECT_NEAR(sent[i] + dgc.velocity()[i], total[i], 1e-4) << i;
  }
}

TEST(DgcTest, LocalClippingScalesByOneOverSqrtWorkers) {
  const size_t n = 100;
  DgcMomentum dgc = *DgcMomentum::Create({.momentum = 0.0, .clip_norm = 1.0, .workers = 4}, n);
  std::vector<float> g(n, 1.0f);  // norm 10
  ASSERT_TRUE(dgc.Accumulate(g).ok());
  EXPECT_NEAR(dgc.last_gradient_norm(), 10.0, 1e-9);
  double norm = 0;
  for (float v : dgc.velocity()) norm += double{v} * v;
  EXPECT_NEAR(std::sqrt(norm), 0.5, 1e-6);  // 1 / sqrt(4)
}

TEST(DgcTest, RejectsBadGradientsAndOptions) {
  DgcMomentum dgc = *DgcMomentum::Create({}, 10);
  std::vector<float> g(10, 1.0f);
  g[3] = INFINITY;
  const Status s = dgc.Accumulate(g);
  EXPECT_NE(s.message().find("gradient[3] is inf"), std::string_view::npos) << s;
  for (float v : dgc.velocity()) EXPECT_EQ(v, 0.0f);
  EXPECT_FALSE(dgc.Accumulate(std::vector<float>(9, 1.0f)).ok());
  EXPECT_FALSE(DgcMomentum::Create({.momentum = 1.0}, 10).ok());
  EXPECT_FALSE(DgcMomentum::Create({.workers = 0}, 10).ok());
}

TEST(DensityScheduleTest, ExponentialWarmUpMatchesThePaperRamp) {
  // docs/algorithms.md §4.4: 25 % -> 6.25 % -> 1.56 % -> 0.4 % -> 0.1 % (the code's formula gives
  // 0.001^(1/5) = 25.1 %, 6.31 %, 1.58 %, 0.398 %, then 0.1 %).
  const DensitySchedule s = *DensitySchedule::Exponential(0.001, 4);
  const double want[] = {0.2512, 0.0631, 0.01585, 0.003981, 0.001, 0.001, 0.001};
  for (int e = 0; e < 7; ++e) EXPECT_NEAR(s.DensityAt(e), want[e], want[e] * 1e-3) << e;
  EXPECT_EQ(s.DensityAt(-1), s.DensityAt(0));
  const DensitySchedule none = *DensitySchedule::Exponential(0.01, 0);
  EXPECT_DOUBLE_EQ(none.DensityAt(0), 0.01);
  const DensitySchedule list = *DensitySchedule::FromList({0.25, 0.0625, 0.015625, 0.004, 0.001});
  EXPECT_DOUBLE_EQ(list.DensityAt(1), 0.0625);
  EXPECT_DOUBLE_EQ(list.DensityAt(10), 0.001);
  EXPECT_FALSE(DensitySchedule::FromList({}).ok());
  EXPECT_FALSE(DensitySchedule::FromList({0.5, 0.0}).ok());
  EXPECT_FALSE(DensitySchedule::Exponential(2.0, 4).ok());
}

TEST(DensityScheduleTest, DrivesTheCompressorsRatio) {
  const size_t n = 10000;
  const DensitySchedule s = *DensitySchedule::Exponential(0.001, 4);
  Compressor c = MakeCompressor("topk:0.001", n);
  Update update;
  const std::vector<float> v = MakeVector(Distribution::kNormal, n, 1);
  for (int epoch = 0; epoch < 6; ++epoch) {
    c.SetRatio(s.DensityAt(epoch));
    ASSERT_TRUE(c.Compress(v, update).ok());
    EXPECT_EQ(update.count(),
              static_cast<size_t>(std::ceil(s.DensityAt(epoch) * static_cast<double>(n))))
        << epoch;
  }
}

}  // namespace
}  // namespace murmur::coding
