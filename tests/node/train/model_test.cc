// Finite-difference gradient checks in double: every loss and layer kernel against central
// differences, then whole models (which chain dense layers, ReLU and each loss) parameter by
// parameter.
#include "node/train/model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "base/check.h"
#include "kernels/ops.h"

namespace murmur::node {
namespace {

using kernels::ConstMatrixView;
using kernels::Device;
using kernels::MatrixView;

constexpr uint64_t kSeed = 424242;
constexpr double kStep = 1e-6;

// Central difference of f at x along every coordinate, compared with `analytic`.
void ExpectGradientMatches(std::vector<double> x, const std::vector<double>& analytic,
                           const std::function<double(const std::vector<double>&)>& f,
                           const std::string& what) {
  ASSERT_EQ(x.size(), analytic.size());
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double saved = x[i];
    x[i] = saved + kStep;
    const double up = f(x);
    x[i] = saved - kStep;
    const double down = f(x);
    x[i] = saved;
    const double numeric = (up - down) / (2 * kStep);
    const double err = std::abs(numeric - analytic[i]) / std::max(1e-3, std::abs(numeric) + std::abs(analytic[i]));
    worst = std::max(worst, err);
    ASSERT_LT(err, 1e-5) << what << ": coordinate " << i << " numeric " << numeric
                         << " analytic " << analytic[i] << " (seed " << kSeed << ")";
  }
  ::testing::Test::RecordProperty(what, std::to_string(worst));
}

std::vector<double> Random(size_t n, std::mt19937_64& rng, double scale = 1.0) {
  std::normal_distribution<double> d(0, scale);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(LossGradientTest, SoftmaxCrossEntropy) {
  std::mt19937_64 rng(kSeed);
  const int64_t rows = 5, cols = 4;
  auto z = Random(rows * cols, rng, 2.0);
  std::vector<int32_t> labels = {0, 3, 1, 1, 2};
  auto loss = [&](const std::vector<double>& v) {
    std::vector<double> p(v.size());
    double l = 0;
    MURMUR_CHECK_OK(kernels::SoftmaxCrossEntropyForward<double>(
        Device::Cpu(), ConstMatrixView<double>(v.data(), rows, cols), labels,
        MatrixView<double>(p.data(), rows, cols), &l));
    return l;
  };
  std::vector<double> p(z.size()), g(z.size());
  double l = 0;
  ASSERT_TRUE(kernels::SoftmaxCrossEntropyForward<double>(Device::Cpu(),
      ConstMatrixView<double>(z.data(), rows, cols), labels, MatrixView<double>(p.data(), rows, cols), &l).ok());
  ASSERT_TRUE(kernels::SoftmaxCrossEntropyBackward<double>(Device::Cpu(),
      ConstMatrixView<double>(p.data(), rows, cols), labels, MatrixView<double>(g.data(), rows, cols)).ok());
  ExpectGradientMatches(z, g, loss, "softmax_ce");
}

TEST(LossGradientTest, SigmoidCrossEntropyAndSquaredError) {
  std::mt19937_64 rng(kSeed + 1);
  const int64_t rows = 6;
  auto z = Random(rows, rng, 3.0);
  std::vector<double> binary = {0, 1, 1, 0, 1, 0};
  auto real = Random(rows, rng);
  using Fwd = Status (*)(const Device&, ConstMatrixView<double>, std::span<const double>, double*);
  using Bwd = Status (*)(const Device&, ConstMatrixView<double>, std::span<const double>,
                         MatrixView<double>);
  struct Case { const char* name; Fwd fwd; Bwd bwd; const std::vector<double>* t; };
  for (const Case& c : {Case{"sigmoid_ce", &kernels::SigmoidCrossEntropyForward<double>,
                             &kernels::SigmoidCrossEntropyBackward<double>, &binary},
                        Case{"mse", &kernels::MeanSquaredErrorForward<double>,
                             &kernels::MeanSquaredErrorBackward<double>, &real}}) {
    auto loss = [&](const std::vector<double>& v) {
      double l = 0;
      MURMUR_CHECK_OK(c.fwd(Device::Cpu(), ConstMatrixView<double>(v.data(), rows, 1), *c.t, &l));
      return l;
    };
    std::vector<double> g(rows);
    ASSERT_TRUE(c.bwd(Device::Cpu(), ConstMatrixView<double>(z.data(), rows, 1), *c.t,
                      MatrixView<double>(g.data(), rows, 1)).ok());
    ExpectGradientMatches(z, g, loss, c.name);
  }
}

TEST(LayerGradientTest, ReluAndBias) {
  // f(x) = sum(w .* relu(x)) has df/dx = ReluBackward(relu(x), w); f(b) = sum(w .* (y + b))
  // has df/db = BiasGrad(w).
  std::mt19937_64 rng(kSeed + 2);
  const int64_t rows = 4, cols = 5;
  auto x = Random(rows * cols, rng), w = Random(rows * cols, rng);
  auto relu_sum = [&](const std::vector<double>& v) {
    std::vector<double> y(v.size());
    MURMUR_CHECK_OK(kernels::ReluForward<double>(Device::Cpu(), ConstMatrixView<double>(v.data(), rows, cols),
                                                 MatrixView<double>(y.data(), rows, cols)));
    double s = 0;
    for (size_t i = 0; i < y.size(); ++i) s += w[i] * y[i];
    return s;
  };
  std::vector<double> y(x.size()), dx(x.size());
  ASSERT_TRUE(kernels::ReluForward<double>(Device::Cpu(), ConstMatrixView<double>(x.data(), rows, cols),
                                           MatrixView<double>(y.data(), rows, cols)).ok());
  ASSERT_TRUE(kernels::ReluBackward<double>(Device::Cpu(), ConstMatrixView<double>(y.data(), rows, cols),
                                            ConstMatrixView<double>(w.data(), rows, cols),
                                            MatrixView<double>(dx.data(), rows, cols)).ok());
  ExpectGradientMatches(x, dx, relu_sum, "relu");

  auto b = Random(cols, rng);
  auto bias_sum = [&](const std::vector<double>& bv) {
    std::vector<double> out = x;
    MURMUR_CHECK_OK(kernels::BiasAdd<double>(Device::Cpu(), bv, MatrixView<double>(out.data(), rows, cols)));
    double s = 0;
    for (size_t i = 0; i < out.size(); ++i) s += w[i] * out[i];
    return s;
  };
  std::vector<double> db(cols);
  ASSERT_TRUE(kernels::BiasGrad<double>(Device::Cpu(), ConstMatrixView<double>(w.data(), rows, cols), db).ok());
  ExpectGradientMatches(b, db, bias_sum, "bias");
}

struct ModelCase {
  std::string name;
  ModelSpec spec;
  int64_t batch;
};

class ModelGradientTest : public ::testing::TestWithParam<ModelCase> {};

TEST_P(ModelGradientTest, BackwardMatchesFiniteDifferences) {
  const ModelCase& c = GetParam();
  auto model = Model<double>::Create(c.spec);
  ASSERT_TRUE(model.ok()) << model.status();
  std::mt19937_64 rng(kSeed + c.batch);
  std::vector<double> params(static_cast<size_t>(model->NumParams()));
  model->Initialize(params, kSeed);
  // Larger weights than the default init so every ReLU sees inputs well away from its kink.
  for (auto& p : params) p *= 3;
  auto x = Random(static_cast<size_t>(c.batch * model->NumInputs()), rng);
  std::vector<int32_t> labels(static_cast<size_t>(c.batch));
  std::vector<double> targets(static_cast<size_t>(c.batch));
  for (int64_t i = 0; i < c.batch; ++i) {
    labels[static_cast<size_t>(i)] = static_cast<int32_t>(rng() % static_cast<uint64_t>(model->NumOutputs()));
    targets[static_cast<size_t>(i)] = c.spec.loss == LossKind::kMeanSquaredError ? Random(1, rng)[0] : (rng() % 2);
  }
  Batch<double> batch{ConstMatrixView<double>(x.data(), c.batch, model->NumInputs()), labels, targets, {}};
  std::vector<double> grad(params.size(), std::nan(""));
  ASSERT_TRUE(model->LossAndGradient(params, batch, grad).ok());
  ExpectGradientMatches(params, grad, [&](const std::vector<double>& p) {
    return *model->LossAndGradient(p, batch, {});
  }, c.name);

  // Per-sample weights (gradient coding): one weighted pass equals sum_i w_i grad_i / B, each
  // grad_i from a batch of that sample alone (docs/algorithms.md §1.6 test 7).
  std::vector<double> weights = Random(static_cast<size_t>(c.batch), rng);
  weights[0] = 0;  // a zero weight drops the sample
  Batch<double> weighted = batch;
  weighted.weights = weights;
  std::vector<double> got(params.size());
  ASSERT_TRUE(model->LossAndGradient(params, weighted, got).ok());
  std::vector<double> want(params.size(), 0.0), one(params.size());
  for (int64_t i = 0; i < c.batch; ++i) {
    const auto k = static_cast<size_t>(i);
    Batch<double> single{ConstMatrixView<double>(x.data() + i * model->NumInputs(), 1, model->NumInputs()),
                         std::span<const int32_t>(labels).subspan(k, 1),
                         std::span<const double>(targets).subspan(k, 1), {}};
    ASSERT_TRUE(model->LossAndGradient(params, single, one).ok());
    for (size_t j = 0; j < want.size(); ++j) want[j] += weights[k] * one[j] / static_cast<double>(c.batch);
  }
  for (size_t j = 0; j < want.size(); ++j) {
    ASSERT_NEAR(got[j], want[j], 1e-12 * (1 + std::abs(want[j]))) << c.name << " parameter " << j;
  }
  weighted.weights = std::span<const double>(weights).first(static_cast<size_t>(c.batch) - 1);
  if (c.batch > 1) {
    EXPECT_FALSE(model->LossAndGradient(params, weighted, got).ok());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, ModelGradientTest,
    ::testing::Values(ModelCase{"mlp", ModelSpec{{5, 7, 4, 3}, LossKind::kSoftmaxCrossEntropy}, 6},
                      ModelCase{"mlp_batch1", ModelSpec{{3, 4, 2}, LossKind::kSoftmaxCrossEntropy}, 1},
                      ModelCase{"softmax_regression", ModelSpec{{4, 3}, LossKind::kSoftmaxCrossEntropy}, 5},
                      ModelCase{"linear", ModelSpec::LinearRegression(6), 7},
                      ModelCase{"logistic", ModelSpec::LogisticRegression(6), 7},
                      ModelCase{"deep_logistic", ModelSpec{{4, 5, 3, 1}, LossKind::kSigmoidCrossEntropy}, 9}),
    [](const auto& info) { return info.param.name; });

TEST(ModelTest, LayoutIsPyTorchLike) {
  auto model = Model<float>::Create(ModelSpec::Mlp(784, std::vector<int64_t>{256, 128}, 10));
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(model->NumParams(), 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10);
  EXPECT_EQ(model->WeightOffset(1), 784 * 256 + 256);
  EXPECT_EQ(model->BiasOffset(0), 784 * 256);
  std::vector<float> p(static_cast<size_t>(model->NumParams()));
  model->Initialize(p, 1);
  const float bound = 1.0f / std::sqrt(784.0f);
  for (int64_t i = 0; i < model->WeightOffset(1); ++i) ASSERT_LE(std::abs(p[static_cast<size_t>(i)]), bound);
}

TEST(ModelTest, RejectsBadSpecsAndShapes) {
  EXPECT_EQ(Model<float>::Create(ModelSpec{{5}, LossKind::kSoftmaxCrossEntropy}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Model<float>::Create(ModelSpec{{5, 3}, LossKind::kMeanSquaredError}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Model<float>::Create(ModelSpec{{5, 0, 3}, LossKind::kSoftmaxCrossEntropy}).status().code(),
            StatusCode::kInvalidArgument);
  auto model = Model<float>::Create(ModelSpec{{4, 2}, LossKind::kSoftmaxCrossEntropy});
  std::vector<float> params(static_cast<size_t>(model->NumParams())), x(6);
  auto out = model->Forward(params, ConstMatrixView<float>(x.data(), 2, 3));
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(model->Forward(std::span<const float>(params).first(3), ConstMatrixView<float>(x.data(), 1, 4))
                .status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace murmur::node
