#pragma once
// Kernel conformance on one Device, included by murmur_kernels_test (the CPU) and
// murmur_cuda_test (a GPU, skipped without one). Every kernel runs on fresh seeded random inputs
// over edge sizes — 0, 1, odd, and a large size the binary chooses (10^8 on a GPU) — with its
// outputs poisoned with NaN first, and is compared with the naive reference (kernels/reference)
// or, for the compression kernels, with their host versions bit for bit (they define the ties
// and the rounding). Relative error bound: 1e-5 in fp32, 3e-4 with TF32; GEMM against its
// a-priori bound (GemmError). On the CPU the compression comparison only exercises the API's
// contracts (host against itself); the host versions are checked against coding's selections in
// tests/coding/device_compressor_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/compress_ops.h"
#include "kernels/device.h"
#include "kernels/gossip_ops.h"
#include "kernels/memory.h"
#include "kernels/ops.h"
#include "kernels/reference/reference_ops.h"

namespace murmur::kernels::conformance {

constexpr uint64_t kSeed = 8080;

struct Case {
  Device device;
  int64_t large = 0;  // the large size of the sweep, in elements
  std::string name;
};

class DeviceConformance : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (device().is_cuda() && CudaDeviceCount() == 0) {
      GTEST_SKIP() << "no CUDA device on this machine";
    }
    std::printf("device %s, seed %llu, large size %lld\n", device().ToString().c_str(),
                static_cast<unsigned long long>(kSeed), static_cast<long long>(GetParam().large));
  }
  const Device& device() const { return GetParam().device; }
  double tol() const { return device().allow_tf32 ? 3e-4 : 1e-5; }
  std::vector<int64_t> Sizes() const { return {0, 1, 7, 1023, 4097, GetParam().large}; }

  template <typename T>
  Buffer<T> Up(const std::vector<T>& host) {
    auto b = Buffer<T>::FromHost(device(), host);
    EXPECT_TRUE(b.ok()) << b.status();
    return std::move(*b);
  }
  template <typename T>
  Buffer<T> Poisoned(size_t n) {
    std::vector<T> host(n);
    if constexpr (std::is_floating_point_v<T>) {
      std::fill(host.begin(), host.end(), std::numeric_limits<T>::quiet_NaN());
    } else {
      std::fill(host.begin(), host.end(), static_cast<T>(0x5a5a5a5a));
    }
    return Up(host);
  }
  template <typename T>
  std::vector<T> Down(const Buffer<T>& b) {
    std::vector<T> host(b.size());
    EXPECT_TRUE(b.CopyToHost(host).ok());
    return host;
  }
};

inline std::vector<float> Random(size_t n, uint64_t seed, double scale = 1.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, static_cast<float>(scale));
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// max over i of |got - want| / max(1, |want|), NaN counting as infinite.
inline double RelativeError(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = std::abs(double{got[i]} - want[i]) / std::max(1.0, std::abs(double{want[i]}));
    if (!(e <= worst)) worst = std::isnan(e) ? std::numeric_limits<double>::infinity() : e;
  }
  return worst;
}

// max over (i, j) of |got - want| / bound(i, j), where bound is the deterministic error bound of
// a product of k terms in any summation order (Higham, "Accuracy and Stability of Numerical
// Algorithms", 2nd ed., §3.5), once for the result and once for the float reference:
// (2 u_in + 2 (k + 2) u) (|alpha| |A||B| + |beta| |C0|)(i, j), with u = 2^-24 (fp32 accumulation)
// and u_in the rounding of the inputs: 0 in fp32, 2^-10 in TF32 (its 10-bit mantissa, rounded or
// truncated). An element-wise error relative to |C| cannot bound TF32: an entry of C near 0 is a
// sum of large terms (seen on an H100: 0.047 against 0.0084). A wrong transpose, stride or missing
// beta term is off by the bound's own order and fails.
inline double GemmError(const std::vector<float>& got, const std::vector<float>& want, Transpose ta,
                        Transpose tb, float alpha, std::vector<float> a, std::vector<float> b,
                        float beta, std::vector<float> c0, int64_t m, int64_t k, int64_t n,
                        bool tf32) {
  if (got.size() != want.size()) return std::numeric_limits<double>::infinity();
  const int64_t ar = ta == Transpose::kNo ? m : k, ac = ta == Transpose::kNo ? k : m;
  const int64_t br = tb == Transpose::kNo ? k : n, bc = tb == Transpose::kNo ? n : k;
  for (auto* v : {&a, &b, &c0}) {
    for (float& x : *v) x = std::abs(x);
  }
  std::vector<float> magnitude = beta == 0 ? std::vector<float>(m * n, 0.0f) : c0;
  reference::Gemm<float>(ta, tb, std::abs(alpha), {a.data(), ar, ac}, {b.data(), br, bc},
                         std::abs(beta), {magnitude.data(), m, n});
  const double u = std::ldexp(1.0, -24), u_in = tf32 ? std::ldexp(1.0, -10) : 0.0;
  const double factor = 2 * u_in + 2 * (static_cast<double>(k) + 2) * u;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = std::abs(double{got[i]} - want[i]);
    // The smallest normal float keeps an all-zero row's bound positive.
    const double r = e / (factor * magnitude[i] + std::numeric_limits<float>::min());
    if (!(r <= worst)) worst = std::isnan(r) ? std::numeric_limits<double>::infinity() : r;
  }
  return worst;
}

TEST_P(DeviceConformance, GemmMatchesReference) {
  // Shapes with 0, 1 and odd extents, a thin one, and one whose C has `large` elements on a GPU.
  std::vector<std::array<int64_t, 3>> shapes = {{0, 3, 2}, {1, 1, 1},     {7, 0, 5},
                                                {1, 300, 1}, {33, 65, 17}, {128, 784, 256}};
  if (GetParam().large >= 100'000'000) shapes.push_back({10000, 16, 10000});
  for (auto [m, k, n] : shapes) {
    for (Transpose ta : {Transpose::kNo, Transpose::kYes}) {
      for (Transpose tb : {Transpose::kNo, Transpose::kYes}) {
        for (float beta : {0.0f, 0.5f}) {
          SCOPED_TRACE(::testing::Message() << m << "x" << k << "x" << n << " ta " << int(ta)
                                            << " tb " << int(tb) << " beta " << beta);
          const int64_t ar = ta == Transpose::kNo ? m : k, ac = ta == Transpose::kNo ? k : m;
          const int64_t br = tb == Transpose::kNo ? k : n, bc = tb == Transpose::kNo ? n : k;
          auto a = Random(ar * ac, kSeed + m), b = Random(br * bc, kSeed + n);
          auto c0 = Random(m * n, kSeed + k);
          std::vector<float> want = beta == 0 ? std::vector<float>(m * n, NAN) : c0;
          reference::Gemm<float>(ta, tb, 1.5f, {a.data(), ar, ac}, {b.data(), br, bc}, beta,
                                 {want.data(), m, n});
          auto da = Up(a), db = Up(b);
          auto dc = beta == 0 ? Poisoned<float>(m * n) : Up(c0);
          ASSERT_TRUE(Gemm<float>(device(), ta, tb, 1.5f, {da.data(), ar, ac},
                                  {db.data(), br, bc}, beta, {dc.data(), m, n})
                          .ok());
          EXPECT_LE(
              GemmError(Down(dc), want, ta, tb, 1.5f, a, b, beta, c0, m, k, n, device().allow_tf32),
              1.0);
        }
      }
    }
  }
}

TEST_P(DeviceConformance, RowKernelsMatchReference) {
  for (int64_t size : Sizes()) {
    // rows x cols with odd column counts; the large case as many rows of 10 columns.
    for (int64_t cols : {int64_t{1}, int64_t{10}, int64_t{257}}) {
      const int64_t rows = size / cols;
      if (rows * cols != size && size > 4097) continue;
      SCOPED_TRACE(::testing::Message() << rows << " x " << cols);
      const size_t n = static_cast<size_t>(rows * cols);
      auto x = Random(n, kSeed + n), dy = Random(n, kSeed + n + 1), bias = Random(cols, kSeed);
      std::vector<float> w = Random(rows, kSeed + 3);
      auto dx_ = Up(x), ddy = Up(dy), dbias = Up(bias), dw = Up(w);
      // BiasReluForward in place.
      std::vector<float> want = x;
      reference::BiasReluForward<float>(bias, {want.data(), rows, cols});
      auto y = Up(x);
      ASSERT_TRUE(BiasReluForward<float>(device(), dbias.span(), {y.data(), rows, cols}).ok());
      auto got_y = Down(y);
      EXPECT_LE(RelativeError(got_y, want), tol());
      // ReluBackwardBiasGrad against the reference, out of place into poisoned memory.
      std::vector<float> want_dx(n), want_db(cols);
      reference::ReluBackwardBiasGrad<float>({want.data(), rows, cols}, {dy.data(), rows, cols},
                                             {want_dx.data(), rows, cols}, want_db);
      auto out = Poisoned<float>(n);
      auto db = Poisoned<float>(cols);
      ASSERT_TRUE(ReluBackwardBiasGrad<float>(device(), {y.data(), rows, cols},
                                              {ddy.data(), rows, cols}, {out.data(), rows, cols},
                                              db.span())
                      .ok());
      EXPECT_LE(RelativeError(Down(out), want_dx), tol());
      EXPECT_LE(RelativeError(Down(db), want_db), tol());
      // BiasGrad, ReluForward, ReluBackward, ScaleRows, BiasAdd.
      std::vector<float> want_bg(cols);
      reference::BiasGrad<float>({dy.data(), rows, cols}, want_bg);
      auto bg = Poisoned<float>(cols);
      ASSERT_TRUE(BiasGrad<float>(device(), {ddy.data(), rows, cols}, bg.span()).ok());
      EXPECT_LE(RelativeError(Down(bg), want_bg), tol());
      std::vector<float> want_r(n);
      reference::ReluForward<float>({x.data(), rows, cols}, {want_r.data(), rows, cols});
      auto r = Poisoned<float>(n);
      ASSERT_TRUE(ReluForward<float>(device(), {dx_.data(), rows, cols}, {r.data(), rows, cols}).ok());
      EXPECT_EQ(Down(r), want_r);
      std::vector<float> want_s = dy;
      reference::ScaleRows<float>(w, {want_s.data(), rows, cols});
      auto s = Up(dy);
      ASSERT_TRUE(ScaleRows<float>(device(), dw.span(), {s.data(), rows, cols}).ok());
      EXPECT_LE(RelativeError(Down(s), want_s), tol());
    }
  }
}

TEST_P(DeviceConformance, LossesMatchReference) {
  for (int64_t size : Sizes()) {
    const int64_t classes = 10, rows = std::max<int64_t>(size / classes, size > 0 ? 1 : 0);
    SCOPED_TRACE(::testing::Message() << rows << " rows");
    auto logits = Random(rows * classes, kSeed + rows, 3.0);
    std::vector<int32_t> labels(rows);
    std::mt19937_64 rng(kSeed);
    for (auto& l : labels) l = static_cast<int32_t>(rng() % classes);
    std::vector<float> want_p(rows * classes);
    float want_loss = 0;
    reference::SoftmaxCrossEntropyForward<float>({logits.data(), rows, classes}, labels,
                                                 {want_p.data(), rows, classes}, &want_loss);
    auto dl = Up(logits);
    auto dlab = Up(labels);
    auto p = Poisoned<float>(rows * classes);
    float loss = NAN;
    ASSERT_TRUE(SoftmaxCrossEntropyForward<float>(device(), {dl.data(), rows, classes},
                                                  dlab.span(), {p.data(), rows, classes}, &loss)
                    .ok());
    EXPECT_LE(RelativeError(Down(p), want_p), tol());
    EXPECT_LE(std::abs(loss - want_loss), tol() * std::max(1.0f, std::abs(want_loss)));
    std::vector<float> want_g(rows * classes);
    reference::SoftmaxCrossEntropyBackward<float>({want_p.data(), rows, classes}, labels,
                                                  {want_g.data(), rows, classes});
    auto g = Poisoned<float>(rows * classes);
    ASSERT_TRUE(SoftmaxCrossEntropyBackward<float>(device(), {p.data(), rows, classes},
                                                   dlab.span(), {g.data(), rows, classes})
                    .ok());
    EXPECT_LE(RelativeError(Down(g), want_g), tol());
    // One-column losses.
    auto z = Random(rows, kSeed + 9, 4.0);
    std::vector<float> t(rows);
    for (auto& v : t) v = static_cast<float>(rng() % 2);
    auto dz = Up(z), dt = Up(t);
    float want_s = 0, got_s = NAN, want_m = 0, got_m = NAN;
    reference::SigmoidCrossEntropyForward<float>({z.data(), rows, 1}, t, &want_s);
    reference::MeanSquaredErrorForward<float>({z.data(), rows, 1}, t, &want_m);
    ASSERT_TRUE(SigmoidCrossEntropyForward<float>(device(), {dz.data(), rows, 1}, dt.span(), &got_s).ok());
    ASSERT_TRUE(MeanSquaredErrorForward<float>(device(), {dz.data(), rows, 1}, dt.span(), &got_m).ok());
    EXPECT_LE(std::abs(got_s - want_s), tol() * std::max(1.0f, want_s));
    EXPECT_LE(std::abs(got_m - want_m), tol() * std::max(1.0f, want_m));
    std::vector<float> want_ds(rows), want_dm(rows);
    reference::SigmoidCrossEntropyBackward<float>({z.data(), rows, 1}, t, {want_ds.data(), rows, 1});
    reference::MeanSquaredErrorBackward<float>({z.data(), rows, 1}, t, {want_dm.data(), rows, 1});
    auto ds = Poisoned<float>(rows), dm = Poisoned<float>(rows);
    ASSERT_TRUE(SigmoidCrossEntropyBackward<float>(device(), {dz.data(), rows, 1}, dt.span(), {ds.data(), rows, 1}).ok());
    ASSERT_TRUE(MeanSquaredErrorBackward<float>(device(), {dz.data(), rows, 1}, dt.span(), {dm.data(), rows, 1}).ok());
    EXPECT_LE(RelativeError(Down(ds), want_ds), tol());
    EXPECT_LE(RelativeError(Down(dm), want_dm), tol());
  }
}

TEST_P(DeviceConformance, OutOfRangeLabelsAndRowsAreRejected) {
  std::vector<float> logits(6, 0.5f);
  std::vector<int32_t> labels = {0, 3};  // 3 classes: 3 is out of range
  auto dl = Up(logits);
  auto dlab = Up(labels);
  auto p = Poisoned<float>(6);
  float loss = 0;
  Status s = SoftmaxCrossEntropyForward<float>(device(), {dl.data(), 2, 3}, dlab.span(),
                                               {p.data(), 2, 3}, &loss);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s;
  std::vector<int64_t> rows = {0, 5};
  auto drows = Up(rows);
  auto out = Poisoned<float>(6);
  s = GatherRows<float>(device(), {dl.data(), 2, 3}, drows.span(), {out.data(), 2, 3});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s;
}

TEST_P(DeviceConformance, SgdMatchesReference) {
  for (int64_t size : Sizes()) {
    for (int mode = 0; mode < 4; ++mode) {
      SgdOptions o;
      o.learning_rate = 0.05;
      o.momentum = mode >= 1 ? 0.9 : 0;
      o.weight_decay = mode >= 2 ? 1e-3 : 0;
      o.nesterov = mode == 3;
      const auto n = static_cast<size_t>(size);
      auto p = Random(n, kSeed + 1), g = Random(n, kSeed + 2), v = Random(n, kSeed + 3);
      auto wp = p, wv = v;
      reference::SgdStep<float>(o, g, wv, wp);
      auto dp = Up(p), dg = Up(g), dv = Up(v);
      ASSERT_TRUE(SgdStep<float>(device(), o, dg.span(), dv.span(), dp.span()).ok());
      EXPECT_LE(RelativeError(Down(dp), wp), tol()) << "mode " << mode << " size " << size;
      if (o.momentum > 0) {
        EXPECT_LE(RelativeError(Down(dv), wv), tol());
      }
    }
  }
}

TEST_P(DeviceConformance, CompressionKernelsMatchHostBitForBit) {
  const Device host = Device::Cpu();
  for (int64_t size : Sizes()) {
    SCOPED_TRACE(::testing::Message() << "size " << size);
    const auto n = static_cast<size_t>(size);
    auto v = Random(n, kSeed + n);
    // Ties and zeros: every 5th value repeats a magnitude, every 7th is zero.
    for (size_t i = 0; i < n; i += 5) v[i] = (i % 2 ? -0.75f : 0.75f);
    for (size_t i = 0; i < n; i += 7) v[i] = 0.0f;
    auto dv = Up(v);
    for (int64_t k : {int64_t{0}, int64_t{1}, size / 100 + 1, size / 5, size + 3}) {
      const auto cap = static_cast<size_t>(std::min<int64_t>(k, size));
      std::vector<uint32_t> wi(cap);
      std::vector<float> wval(cap);
      int64_t want = -1, got = -1;
      ASSERT_TRUE(TopK(host, v, k, wi, wval, &want).ok());
      Buffer<uint32_t> gi = Poisoned<uint32_t>(cap);
      Buffer<float> gv = Poisoned<float>(cap);
      ASSERT_TRUE(TopK(device(), dv.span(), k, gi.span(), gv.span(), &got).ok());
      ASSERT_EQ(got, want) << "k " << k;
      wi.resize(want);
      wval.resize(want);
      std::vector<uint32_t> hi = Down(gi);
      std::vector<float> hv = Down(gv);
      hi.resize(got);
      hv.resize(got);
      EXPECT_EQ(hi, wi) << "k " << k;
      EXPECT_EQ(hv, wval) << "k " << k;
    }
    for (float tau : {0.5f, 0.75f, 3.0f}) {
      std::vector<uint32_t> wi(n);
      std::vector<float> wval(n);
      int64_t want = 0, got = 0;
      ASSERT_TRUE(SelectAtLeast(host, v, tau, wi, wval, &want).ok());
      Buffer<uint32_t> gi = Poisoned<uint32_t>(n);
      Buffer<float> gv_ = Poisoned<float>(n);
      ASSERT_TRUE(SelectAtLeast(device(), dv.span(), tau, gi.span(), gv_.span(), &got).ok());
      ASSERT_EQ(got, want);
      std::vector<uint32_t> hi = Down(gi);
      std::vector<float> hv = Down(gv_);
      hi.resize(got);
      hv.resize(got);
      wi.resize(want);
      wval.resize(want);
      EXPECT_EQ(hi, wi);
      EXPECT_EQ(hv, wval);
    }
    // Signs, levels, halves, scatter-add and the reductions.
    std::vector<uint32_t> words((n + 31) / 32);
    ASSERT_TRUE(PackSigns(host, v, words).ok());
    auto dwords = Poisoned<uint32_t>(words.size());
    ASSERT_TRUE(PackSigns(device(), dv.span(), dwords.span()).ok());
    EXPECT_EQ(Down(dwords), words);
    std::vector<float> unpacked(n);
    ASSERT_TRUE(UnpackSigns(host, words, 0.25f, unpacked).ok());
    auto du = Poisoned<float>(n);
    ASSERT_TRUE(UnpackSigns(device(), std::span<const uint32_t>(dwords.span()), 0.25f, du.span()).ok());
    EXPECT_EQ(Down(du), unpacked);
    std::vector<int8_t> levels(n);
    ASSERT_TRUE(StochasticLevels<int8_t>(host, v, 40.0, 127, kSeed, levels).ok());
    auto dlev = Poisoned<int8_t>(n);
    ASSERT_TRUE(StochasticLevels<int8_t>(device(), dv.span(), 40.0, 127, kSeed, dlev.span()).ok());
    EXPECT_EQ(Down(dlev), levels);
    std::vector<float> lf(n);
    ASSERT_TRUE(LevelsToFloat<int8_t>(host, levels, 3.5f, 127, lf).ok());
    auto dlf = Poisoned<float>(n);
    ASSERT_TRUE(LevelsToFloat<int8_t>(device(), std::span<const int8_t>(dlev.span()), 3.5f, 127, dlf.span()).ok());
    EXPECT_EQ(Down(dlf), lf);
    std::vector<uint16_t> half(n);
    ASSERT_TRUE(FloatToHalf(host, v, half).ok());
    auto dh = Poisoned<uint16_t>(n);
    ASSERT_TRUE(FloatToHalf(device(), dv.span(), dh.span()).ok());
    EXPECT_EQ(Down(dh), half);
    std::vector<float> back(n);
    ASSERT_TRUE(HalfToFloat(host, half, back).ok());
    auto db = Poisoned<float>(n);
    ASSERT_TRUE(HalfToFloat(device(), std::span<const uint16_t>(dh.span()), db.span()).ok());
    EXPECT_EQ(Down(db), back);
    double squares = 0, dsq = 0;
    float max = 0, dmax = 0;
    int64_t bad = -1;
    ASSERT_TRUE(SumOfSquares(host, v, &squares).ok());
    ASSERT_TRUE(SumOfSquares(device(), dv.span(), &dsq).ok());
    EXPECT_NEAR(dsq, squares, 1e-9 * std::max(1.0, squares));
    ASSERT_TRUE(MaxAbs(host, v, &max).ok());
    ASSERT_TRUE(MaxAbs(device(), dv.span(), &dmax).ok());
    EXPECT_EQ(dmax, max);
    ASSERT_TRUE(CountNonFinite(device(), dv.span(), &bad).ok());
    EXPECT_EQ(bad, 0);
    // Scatter-add of every third position, then Axpy.
    std::vector<uint32_t> idx;
    std::vector<float> val;
    for (size_t i = 0; i < n; i += 3) {
      idx.push_back(static_cast<uint32_t>(i));
      val.push_back(static_cast<float>(i % 11) - 5.0f);
    }
    std::vector<float> x = v;
    ASSERT_TRUE(ScatterAdd(host, idx, val, -0.5f, x).ok());
    ASSERT_TRUE(Axpy(host, 2.0f, v, x).ok());
    Buffer<float> dx = Up(v);
    Buffer<uint32_t> didx = Up(idx);
    Buffer<float> dval = Up(val);
    ASSERT_TRUE(ScatterAdd(device(), std::span<const uint32_t>(didx.span()),
                           std::span<const float>(dval.span()), -0.5f, dx.span()).ok());
    ASSERT_TRUE(Axpy(device(), 2.0f, dv.span(), dx.span()).ok());
    EXPECT_EQ(Down(dx), x);
  }
}

// The CHOCO vector ops (gossip_ops.h) against the formulas written out here: element-wise results
// bit for bit (no fused multiply-add on either side), sums to 1e-12 relative.
TEST_P(DeviceConformance, GossipKernelsMatchFormulasBitForBit) {
  for (int64_t size : Sizes()) {
    SCOPED_TRACE(::testing::Message() << "size " << size);
    const auto n = static_cast<size_t>(size);
    const std::vector<float> a = Random(n, kSeed + 3 * n);
    const std::vector<float> b = Random(n, kSeed + 3 * n + 1, 0.01);
    std::vector<double> acc(n);
    for (size_t k = 0; k < n; ++k) acc[k] = 1e-3 * static_cast<double>(k % 17) - 0.008;
    const double w = 1.0 / 3.0, gamma = 0.05;
    std::vector<float> diff(n), x = a, average(n);
    std::vector<double> want_acc = acc, want_sum = acc;
    double squares = 0, distance = 0;
    for (size_t k = 0; k < n; ++k) {
      diff[k] = a[k] - b[k];
      volatile double term = w * (static_cast<double>(a[k]) - b[k]);  // no contraction
      want_acc[k] = want_acc[k] + term;
      volatile double scaled = w * a[k];
      want_sum[k] = want_sum[k] + scaled;
      volatile double step = gamma * want_acc[k];
      x[k] += static_cast<float>(step);
      squares += want_acc[k] * want_acc[k];
      average[k] = static_cast<float>(want_sum[k] / 1.75);
      const double d = static_cast<double>(a[k]) - b[k];
      distance += d * d;
    }
    auto da = Up(a);
    auto db = Up(b);
    auto dout = Poisoned<float>(n);
    ASSERT_TRUE(Subtract(device(), da.span(), db.span(), dout.span()).ok());
    EXPECT_EQ(Down(dout), diff);
    auto dacc = Up(acc);
    auto dsum = Up(acc);
    ASSERT_TRUE(AccumulateDifference(device(), w, da.span(), db.span(), dacc.span()).ok());
    EXPECT_EQ(Down(dacc), want_acc);
    ASSERT_TRUE(AccumulateScaled(device(), w, da.span(), dsum.span()).ok());
    EXPECT_EQ(Down(dsum), want_sum);
    auto dx = Up(a);
    double got_squares = -1;
    ASSERT_TRUE(ApplyScaled(device(), gamma, std::span<const double>(dacc.span()), dx.span(),
                            &got_squares).ok());
    EXPECT_EQ(Down(dx), x);
    EXPECT_NEAR(got_squares, squares, 1e-12 * std::max(1.0, squares));
    auto davg = Poisoned<float>(n);
    ASSERT_TRUE(DivideInto(device(), std::span<const double>(dsum.span()), 1.75, davg.span()).ok());
    EXPECT_EQ(Down(davg), average);
    double got_distance = -1;
    ASSERT_TRUE(SquaredDistance(device(), da.span(), db.span(), &got_distance).ok());
    EXPECT_NEAR(got_distance, distance, 1e-12 * std::max(1.0, distance));
  }
  // Shapes are checked before anything runs.
  auto small = Poisoned<float>(3);
  auto other = Poisoned<float>(4);
  EXPECT_EQ(Subtract(device(), small.span(), other.span(), small.span()).code(),
            StatusCode::kInvalidArgument);
  auto acc = Poisoned<double>(3);
  EXPECT_EQ(DivideInto(device(), std::span<const double>(acc.span()), 0.0, small.span()).code(),
            StatusCode::kInvalidArgument);
}

// The outer step against its definition in float (kernels/gossip_ops.h: one rounding per
// operation), Nesterov and plain momentum, bit for bit; x ends equal to the new anchor.
TEST_P(DeviceConformance, OuterStepMatchesItsFormulaBitForBit) {
  for (bool nesterov : {true, false}) {
    for (int64_t size : Sizes()) {
      SCOPED_TRACE(::testing::Message() << "size " << size << " nesterov " << nesterov);
      const auto n = static_cast<size_t>(size);
      const std::vector<float> anchor = Random(n, kSeed + 5 * n);
      const std::vector<float> velocity = Random(n, kSeed + 5 * n + 1, 0.01);
      std::vector<float> x = Random(n, kSeed + 5 * n + 2, 0.01);
      for (size_t k = 0; k < n; ++k) x[k] += anchor[k];  // a model near its anchor
      const float lr = 0.7f, mu = 0.9f;
      std::vector<float> want_anchor = anchor, want_velocity = velocity;
      for (size_t k = 0; k < n; ++k) {
        volatile float d = anchor[k] - x[k];
        volatile float decayed = mu * velocity[k];
        volatile float v = decayed + d;
        want_velocity[k] = v;
        volatile float pushed = mu * v;
        volatile float step = nesterov ? d + pushed : v;
        volatile float moved = lr * step;
        want_anchor[k] = anchor[k] - moved;
      }
      auto da = Up(anchor);
      auto dv = Up(velocity);
      auto dx = Up(x);
      ASSERT_TRUE(OuterStep(device(), 0.7, 0.9, nesterov, da.span(), dv.span(), dx.span()).ok());
      EXPECT_EQ(Down(da), want_anchor);
      EXPECT_EQ(Down(dv), want_velocity);
      EXPECT_EQ(Down(dx), want_anchor);
    }
  }
  auto small = Poisoned<float>(3);
  auto other = Poisoned<float>(4);
  EXPECT_EQ(OuterStep(device(), 0.7, 0.9, true, small.span(), other.span(), small.span()).code(),
            StatusCode::kInvalidArgument);
}

// The consensus step against its definition in float (kernels/gossip_ops.h: the terms summed from
// +0 copy by copy, each operation rounded on its own): x bit for bit, the three sums to their
// summation-order bound; 0 to 3 copies and 17 (past the host's vector path). Every 97th entry is
// a signed zero the zeroed sum decides: x = −0, copies −0, public +0, so x must end +0.
TEST_P(DeviceConformance, ConsensusStepIsTheComposedStepInOnePass) {
  for (int64_t size : Sizes()) {
    const auto n = static_cast<size_t>(size);
    std::vector<float> x0 = Random(n, kSeed + 5 * n);
    std::vector<float> pub = Random(n, kSeed + 5 * n + 1);
    std::vector<std::vector<float>> copies;
    std::vector<double> weights;
    for (int j = 0; j < 17; ++j) {
      copies.push_back(Random(n, kSeed + 5 * n + 2 + j));
      weights.push_back(1.0 / (j + 3));
    }
    for (size_t k = 5; k < n; k += 97) {
      x0[k] = -0.0f;
      pub[k] = 0.0f;
      for (auto& c : copies) c[k] = -0.0f;
    }
    const double gamma = 0.05;
    for (size_t count : {0, 1, 2, 3, 17}) {
      SCOPED_TRACE(::testing::Message() << "size " << size << ", " << count << " copies");
      // The definition in float, each operation rounded on its own (volatile: no FMA).
      std::vector<float> acc(n, 0.0f);
      std::vector<float> want = x0;
      double mix = 0, pub_squares = 0, residual = 0;
      for (size_t k = 0; k < n; ++k) {
        for (size_t j = 0; j < count; ++j) {
          volatile float difference = copies[j][k] - pub[k];
          volatile float term = static_cast<float>(weights[j]) * difference;
          acc[k] = acc[k] + term;
        }
        volatile float step = static_cast<float>(gamma) * acc[k];
        want[k] += step;
        mix += static_cast<double>(acc[k]) * acc[k];
        pub_squares += static_cast<double>(pub[k]) * pub[k];
        const double r = static_cast<double>(want[k]) - pub[k];
        residual += r * r;
      }
      std::vector<Buffer<float>> up;
      std::vector<std::span<const float>> spans;
      for (size_t j = 0; j < count; ++j) up.push_back(Up(copies[j]));
      for (const auto& b : up) spans.push_back(b.span());
      auto dx = Up(x0);
      auto dpub = Up(pub);
      auto scratch = Poisoned<float>(n);
      ConsensusSquares got;
      ASSERT_TRUE(ConsensusStep(device(), gamma, spans, std::span(weights).first(count),
                                dpub.span(), dx.span(), scratch.span(), &got)
                      .ok());
      const std::vector<float> x = Down(dx);
      EXPECT_EQ(x, want);
      for (size_t k = 5; k < n; k += 97) {  // == does not tell −0 from +0
        ASSERT_FALSE(std::signbit(want[k]));
        EXPECT_FALSE(std::signbit(x[k])) << "entry " << k;
      }
      // Sums of n non-negative doubles in two orders (the reference's sequential one, the
      // GPU's tree of warps and atomics) differ by a random walk of roundings, about u sqrt(n)
      // of the sum (an H100 at n = 10^8: 1.8e-12 to 3.3e-12 relative); 20 u sqrt(n) still
      // catches one term of average size missing (1/n relative).
      const double sum_tol = std::max(1e-12, 20 * std::ldexp(1.0, -53) * std::sqrt(double(n)));
      EXPECT_NEAR(got.mix, mix, sum_tol * std::max(1.0, mix));
      EXPECT_NEAR(got.public_copy, pub_squares, sum_tol * std::max(1.0, pub_squares));
      EXPECT_NEAR(got.residual, residual, sum_tol * std::max(1.0, residual));
    }
  }
  // Shapes are checked before anything runs: a copy of another size leaves x as it was.
  const std::vector<float> x0 = {1, 2, 3};
  auto dx = Up(x0);
  auto dpub = Up(x0);
  auto other = Poisoned<float>(4);
  auto scratch = Poisoned<float>(3);
  const std::span<const float> spans[] = {other.span()};
  const double weights[] = {0.5};
  ConsensusSquares got;
  EXPECT_EQ(
      ConsensusStep(device(), 0.1, spans, weights, dpub.span(), dx.span(), scratch.span(), &got)
          .code(),
      StatusCode::kInvalidArgument);
  EXPECT_EQ(Down(dx), x0);
}

TEST_P(DeviceConformance, NonFiniteValuesAreCounted) {
  std::vector<float> v = {1.0f, NAN, -INFINITY, 2.0f, INFINITY};
  auto dv = Up(v);
  int64_t bad = 0;
  ASSERT_TRUE(CountNonFinite(device(), dv.span(), &bad).ok());
  EXPECT_EQ(bad, 3);
  float max = 0;
  ASSERT_TRUE(MaxAbs(device(), dv.span(), &max).ok());
  EXPECT_EQ(max, INFINITY);  // NaN skipped, infinity counted, as on the host
}

}  // namespace murmur::kernels::conformance
