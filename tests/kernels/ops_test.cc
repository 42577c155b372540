// Every CPU kernel against the naive reference, on fresh seeded random inputs over edge sizes
// (0, 1, odd, non-multiples of any SIMD width or block). Outputs are poisoned with NaN first, so
// an element the kernel forgot to write fails the comparison.
#include "kernels/ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

#include "base/config.h"
#include "kernels/device.h"
#include "kernels/reference/reference_ops.h"

namespace murmur::kernels {
namespace {

constexpr uint64_t kSeed = 20261122;
const Device kCpu = Device::Cpu();

template <typename T>
std::vector<T> Random(size_t n, std::mt19937_64& rng, double scale = 1.0) {
  std::normal_distribution<double> d(0.0, scale);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(d(rng));
  return v;
}

template <typename T>
std::vector<T> Poisoned(size_t n) {
  return std::vector<T>(n, std::numeric_limits<T>::quiet_NaN());
}

template <typename T>
double Tolerance() {
  return std::is_same_v<T, float> ? 2e-5 : 1e-12;
}

// |got - want| <= tol * max(1, |want|) everywhere, NaN included as a failure.
template <typename T>
::testing::AssertionResult Near(const std::vector<T>& got, const std::vector<T>& want,
                                double tol) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "size differs";
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    if (!(std::abs(g - w) <= tol * std::max(1.0, std::abs(w)))) {
      return ::testing::AssertionFailure() << "element " << i << ": got " << g << ", want " << w
                                           << " (seed " << kSeed << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

using Shape = std::tuple<int64_t, int64_t, int64_t>;  // m, k, n

template <typename T>
void CheckGemm(int64_t m, int64_t k, int64_t n, Transpose ta, Transpose tb, T beta) {
  std::mt19937_64 rng(kSeed + m * 1000003 + k * 1009 + n);
  const int64_t ar = ta == Transpose::kNo ? m : k, ac = ta == Transpose::kNo ? k : m;
  const int64_t br = tb == Transpose::kNo ? k : n, bc = tb == Transpose::kNo ? n : k;
  auto a = Random<T>(ar * ac, rng), b = Random<T>(br * bc, rng);
  std::vector<T> c = beta == T(0) ? Poisoned<T>(m * n) : Random<T>(m * n, rng);
  std::vector<T> want = c;
  const T alpha = T(0.75);
  ASSERT_TRUE(Gemm<T>(kCpu, ta, tb, alpha, ConstMatrixView<T>(a.data(), ar, ac),
                      ConstMatrixView<T>(b.data(), br, bc), beta, MatrixView<T>(c.data(), m, n))
                  .ok());
  if (beta == T(0)) want.assign(want.size(), T(0));
  reference::Gemm<T>(ta, tb, alpha, ConstMatrixView<T>(a.data(), ar, ac),
                     ConstMatrixView<T>(b.data(), br, bc), beta,
                     MatrixView<T>(want.data(), m, n));
  EXPECT_TRUE(Near(c, want, Tolerance<T>() * std::sqrt(static_cast<double>(k + 1))))
      << "m=" << m << " k=" << k << " n=" << n << " ta=" << (ta == Transpose::kYes)
      << " tb=" << (tb == Transpose::kYes) << " beta=" << beta;
}

class GemmTest : public ::testing::TestWithParam<Shape> {};

TEST_P(GemmTest, MatchesReferenceForEveryTransposeAndBeta) {
  const auto [m, k, n] = GetParam();
  for (auto ta : {Transpose::kNo, Transpose::kYes}) {
    for (auto tb : {Transpose::kNo, Transpose::kYes}) {
      CheckGemm<float>(m, k, n, ta, tb, 0.0f);
      CheckGemm<float>(m, k, n, ta, tb, 0.5f);
      CheckGemm<double>(m, k, n, ta, tb, 0.0);
      CheckGemm<double>(m, k, n, ta, tb, 1.0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EdgeSizes, GemmTest,
                         ::testing::Values(Shape{1, 1, 1}, Shape{0, 5, 3}, Shape{4, 0, 3},
                                           Shape{3, 5, 0}, Shape{1, 7, 1}, Shape{7, 1, 9},
                                           Shape{17, 33, 5}, Shape{64, 784, 10},
                                           Shape{65, 129, 127}, Shape{3, 257, 31}));

TEST(GemmTest, RespectsStrides) {
  // A 3x4 block inside a 3x6 buffer; the padding must be neither read nor written.
  std::mt19937_64 rng(kSeed);
  auto a = Random<float>(3 * 6, rng), b = Random<float>(4 * 2, rng);
  std::vector<float> c(3 * 5, 42.0f);
  ConstMatrixView<float> av(a.data(), 3, 4, 6);
  MatrixView<float> cv(c.data(), 3, 2, 5);
  ASSERT_TRUE(Gemm<float>(kCpu, Transpose::kNo, Transpose::kNo, 1.0f, av,
                          ConstMatrixView<float>(b.data(), 4, 2), 0.0f, cv)
                  .ok());
  std::vector<float> want(3 * 5, 42.0f);
  reference::Gemm<float>(Transpose::kNo, Transpose::kNo, 1.0f, av,
                         ConstMatrixView<float>(b.data(), 4, 2), 0.0f,
                         MatrixView<float>(want.data(), 3, 2, 5));
  EXPECT_TRUE(Near(c, want, 1e-5));
}

TEST(GemmTest, RejectsMismatchedShapesWithoutWriting) {
  std::vector<float> a(6, 1), b(6, 1), c(4, 7);
  Status s = Gemm<float>(kCpu, Transpose::kNo, Transpose::kNo, 1.0f,
                         ConstMatrixView<float>(a.data(), 2, 3),
                         ConstMatrixView<float>(b.data(), 2, 3), 0.0f,
                         MatrixView<float>(c.data(), 2, 2));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("[2 x 3]"), std::string_view::npos) << s;
  EXPECT_EQ(c, std::vector<float>(4, 7));
}

using RowsCols = std::tuple<int64_t, int64_t>;
class ElementwiseTest : public ::testing::TestWithParam<RowsCols> {};

TEST_P(ElementwiseTest, BiasReluAndGradsMatchReference) {
  const auto [rows, cols] = GetParam();
  std::mt19937_64 rng(kSeed + rows * 31 + cols);
  auto x = Random<float>(rows * cols, rng), bias = Random<float>(cols, rng);
  auto dy = Random<float>(rows * cols, rng);

  auto y = x, y_ref = x;
  ASSERT_TRUE(BiasAdd<float>(kCpu, bias, MatrixView<float>(y.data(), rows, cols)).ok());
  reference::BiasAdd<float>(bias, MatrixView<float>(y_ref.data(), rows, cols));
  EXPECT_TRUE(Near(y, y_ref, 1e-6));

  auto db = Poisoned<float>(cols), db_ref = Poisoned<float>(cols);
  ASSERT_TRUE(BiasGrad<float>(kCpu, ConstMatrixView<float>(dy.data(), rows, cols), db).ok());
  reference::BiasGrad<float>(ConstMatrixView<float>(dy.data(), rows, cols), db_ref);
  EXPECT_TRUE(Near(db, db_ref, 1e-5 * std::sqrt(rows + 1.0)));

  auto r = Poisoned<float>(rows * cols), r_ref = Poisoned<float>(rows * cols);
  ASSERT_TRUE(ReluForward<float>(kCpu, ConstMatrixView<float>(x.data(), rows, cols),
                                 MatrixView<float>(r.data(), rows, cols))
                  .ok());
  reference::ReluForward<float>(ConstMatrixView<float>(x.data(), rows, cols),
                                MatrixView<float>(r_ref.data(), rows, cols));
  EXPECT_TRUE(Near(r, r_ref, 0));

  auto dx = Poisoned<float>(rows * cols), dx_ref = Poisoned<float>(rows * cols);
  ASSERT_TRUE(ReluBackward<float>(kCpu, ConstMatrixView<float>(r.data(), rows, cols),
                                  ConstMatrixView<float>(dy.data(), rows, cols),
                                  MatrixView<float>(dx.data(), rows, cols))
                  .ok());
  reference::ReluBackward<float>(ConstMatrixView<float>(r.data(), rows, cols),
                                 ConstMatrixView<float>(dy.data(), rows, cols),
                                 MatrixView<float>(dx_ref.data(), rows, cols));
  EXPECT_TRUE(Near(dx, dx_ref, 0));
}

TEST_P(ElementwiseTest, SoftmaxCrossEntropyMatchesReference) {
  const auto [rows, cols] = GetParam();
  if (cols < 1) GTEST_SKIP() << "no classes";
  std::mt19937_64 rng(kSeed + rows * 7 + cols);
  auto logits = Random<float>(rows * cols, rng, 4.0);
  std::uniform_int_distribution<int32_t> label(0, static_cast<int32_t>(cols - 1));
  std::vector<int32_t> labels(rows);
  for (auto& l : labels) l = label(rng);
  ConstMatrixView<float> lv(logits.data(), rows, cols);

  auto probs = Poisoned<float>(rows * cols), probs_ref = Poisoned<float>(rows * cols);
  float loss = NAN, loss_ref = NAN;
  ASSERT_TRUE(SoftmaxCrossEntropyForward<float>(kCpu, lv, labels,
                                                MatrixView<float>(probs.data(), rows, cols), &loss)
                  .ok());
  reference::SoftmaxCrossEntropyForward<float>(lv, labels,
                                               MatrixView<float>(probs_ref.data(), rows, cols),
                                               &loss_ref);
  EXPECT_NEAR(loss, loss_ref, 1e-5 * std::max(1.0f, std::abs(loss_ref)));
  EXPECT_TRUE(Near(probs, probs_ref, 1e-5));

  auto d = Poisoned<float>(rows * cols), d_ref = Poisoned<float>(rows * cols);
  ASSERT_TRUE(SoftmaxCrossEntropyBackward<float>(
                  kCpu, ConstMatrixView<float>(probs.data(), rows, cols), labels,
                  MatrixView<float>(d.data(), rows, cols))
                  .ok());
  reference::SoftmaxCrossEntropyBackward<float>(ConstMatrixView<float>(probs.data(), rows, cols),
                                                labels, MatrixView<float>(d_ref.data(), rows, cols));
  EXPECT_TRUE(Near(d, d_ref, 1e-6));
}

INSTANTIATE_TEST_SUITE_P(EdgeSizes, ElementwiseTest,
                         ::testing::Values(RowsCols{0, 3}, RowsCols{1, 1}, RowsCols{1, 10},
                                           RowsCols{7, 3}, RowsCols{64, 10}, RowsCols{33, 17},
                                           RowsCols{5, 129}, RowsCols{1000, 1}));

class OneColumnLossTest : public ::testing::TestWithParam<int64_t> {};

TEST_P(OneColumnLossTest, SigmoidAndSquaredErrorMatchReference) {
  const int64_t rows = GetParam();
  std::mt19937_64 rng(kSeed + rows);
  auto z = Random<double>(rows, rng, 5.0);
  std::vector<double> binary(rows), real = Random<double>(rows, rng);
  std::bernoulli_distribution coin(0.5);
  for (auto& t : binary) t = coin(rng) ? 1.0 : 0.0;
  ConstMatrixView<double> zv(z.data(), rows, 1);

  double loss = NAN, loss_ref = NAN;
  ASSERT_TRUE(SigmoidCrossEntropyForward<double>(kCpu, zv, binary, &loss).ok());
  reference::SigmoidCrossEntropyForward<double>(zv, binary, &loss_ref);
  EXPECT_NEAR(loss, loss_ref, 1e-12);
  auto d = Poisoned<double>(rows), d_ref = Poisoned<double>(rows);
  ASSERT_TRUE(SigmoidCrossEntropyBackward<double>(kCpu, zv, binary,
                                                  MatrixView<double>(d.data(), rows, 1))
                  .ok());
  reference::SigmoidCrossEntropyBackward<double>(zv, binary, MatrixView<double>(d_ref.data(), rows, 1));
  EXPECT_TRUE(Near(d, d_ref, 1e-12));

  ASSERT_TRUE(MeanSquaredErrorForward<double>(kCpu, zv, real, &loss).ok());
  reference::MeanSquaredErrorForward<double>(zv, real, &loss_ref);
  EXPECT_NEAR(loss, loss_ref, 1e-12);
  d = Poisoned<double>(rows);
  ASSERT_TRUE(
      MeanSquaredErrorBackward<double>(kCpu, zv, real, MatrixView<double>(d.data(), rows, 1)).ok());
  reference::MeanSquaredErrorBackward<double>(zv, real, MatrixView<double>(d_ref.data(), rows, 1));
  EXPECT_TRUE(Near(d, d_ref, 1e-12));
}

INSTANTIATE_TEST_SUITE_P(EdgeSizes, OneColumnLossTest, ::testing::Values(0, 1, 3, 64, 1001));

TEST(LossTest, SoftmaxIsStableForHugeLogits) {
  std::vector<float> logits = {1000.0f, -1000.0f, 0.0f};
  std::vector<float> probs(3);
  std::vector<int32_t> labels = {1};
  float loss = 0;
  ASSERT_TRUE(SoftmaxCrossEntropyForward<float>(kCpu, ConstMatrixView<float>(logits.data(), 1, 3),
                                                labels, MatrixView<float>(probs.data(), 1, 3),
                                                &loss)
                  .ok());
  EXPECT_TRUE(std::isfinite(loss));
  EXPECT_NEAR(loss, 2000.0f, 1e-2);
  EXPECT_FLOAT_EQ(probs[0], 1.0f);
}

TEST(LossTest, RejectsLabelsOutOfRange) {
  std::vector<float> logits(6), probs(6);
  std::vector<int32_t> labels = {0, 3};
  float loss = 0;
  Status s = SoftmaxCrossEntropyForward<float>(kCpu, ConstMatrixView<float>(logits.data(), 2, 3),
                                               labels, MatrixView<float>(probs.data(), 2, 3), &loss);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("label 3 at row 1"), std::string_view::npos) << s;
}

class SgdTest : public ::testing::TestWithParam<int64_t> {};

TEST_P(SgdTest, MatchesReferenceInEveryMode) {
  const int64_t n = GetParam();
  for (double momentum : {0.0, 0.9}) {
    for (bool nesterov : {false, true}) {
      if (nesterov && momentum == 0) continue;
      for (double wd : {0.0, 1e-3}) {
        std::mt19937_64 rng(kSeed + n);
        auto p = Random<float>(n, rng), v = Random<float>(n, rng);
        auto p_ref = p, v_ref = v;
        SgdOptions o{0.05, momentum, wd, nesterov};
        for (int step = 0; step < 3; ++step) {
          auto g = Random<float>(n, rng);
          ASSERT_TRUE(SgdStep<float>(kCpu, o, g, v, p).ok());
          reference::SgdStep<float>(o, g, v_ref, p_ref);
        }
        EXPECT_TRUE(Near(p, p_ref, 1e-5)) << "momentum " << momentum << " nesterov " << nesterov
                                          << " wd " << wd;
        if (momentum != 0) {
          EXPECT_TRUE(Near(v, v_ref, 1e-5));
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EdgeSizes, SgdTest, ::testing::Values(0, 1, 7, 31, 1000, 235146));

TEST(SgdTest, RejectsBadOptions) {
  std::vector<float> p(4), g(4), v(3);
  EXPECT_EQ(SgdStep<float>(kCpu, {0.1, 0.9, 0, false}, g, v, p).code(),
            StatusCode::kInvalidArgument);  // velocity too short
  EXPECT_EQ(SgdStep<float>(kCpu, {0.1, 0.0, 0, true}, g, {}, p).code(),
            StatusCode::kInvalidArgument);  // Nesterov without momentum
  EXPECT_EQ(SgdStep<float>(kCpu, {-1, 0.0, 0, false}, g, {}, p).code(),
            StatusCode::kInvalidArgument);
}

TEST(DispatchTest, CudaDeviceNeverFallsBackToHost) {
  if (CudaDeviceCount() > 0) GTEST_SKIP() << "a CUDA device is present (murmur_cuda_test covers it)";
  // Host memory handed to a CUDA device that is not there: an error, and nothing computed here.
  std::vector<float> x(4, -1.0f);
  Status s = ReluForward<float>(Device::Cuda(0), ConstMatrixView<float>(x.data(), 2, 2),
                                MatrixView<float>(x.data(), 2, 2));
  EXPECT_TRUE(s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kUnimplemented) << s;
  EXPECT_EQ(x, std::vector<float>(4, -1.0f));
  // Double never runs on a GPU, whatever the machine.
  std::vector<double> d(4, -1.0);
  s = ReluForward<double>(Device::Cuda(0), ConstMatrixView<double>(d.data(), 2, 2),
                          MatrixView<double>(d.data(), 2, 2));
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << s;
  EXPECT_GE(CudaDeviceCount(), 0);
  EXPECT_EQ(Device::Cuda(1).ToString(), "cuda:1");
}

}  // namespace
}  // namespace murmur::kernels

namespace murmur::kernels {
namespace {

// cuBLAS is opened on the first GPU context, not linked (a CPU process never maps it); where the
// build has CUDA the library must still be found — on this machine without a GPU too.
TEST(GpuLibrariesTest, OpenOnDemandWhereTheBuildHasCuda) {
  const Status s = LoadGpuLibraries();
  if (!MURMUR_WITH_CUDA) {
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s;
    return;
  }
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_TRUE(LoadGpuLibraries().ok());  // once per process, the same answer
}

}  // namespace
}  // namespace murmur::kernels
