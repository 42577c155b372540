#include "coding/compressor.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "coding/dense_codec.h"
#include "coding/stream_store.h"
#include "coding/update_codec.h"
#include "tests/testing/test_vectors.h"

namespace murmur::coding {
namespace {

using testing::Distribution;
using testing::Bits;
using testing::MakeVector;

Compressor Make(std::string_view spec, size_t n) {
  auto options = ParseCompressorSpec(spec);
  EXPECT_TRUE(options.ok()) << options.status();
  auto compressor = Compressor::Create(*options, n);
  EXPECT_TRUE(compressor.ok()) << compressor.status();
  return std::move(*compressor);
}

TEST(CompressorSpecTest, ParsesAndPrintsCanonicalSpecs) {
  for (const char* spec :
       {"none", "fp16", "topk:0.01", "topk:0.001,values=fp16,ef=off", "dgc:0.01,sample=0.02",
        "threshold:0.001,adaptive=on,band=0.0001..0.01", "onebit:0.5,clip=5,clip_every=3",
        "qsgd:4", "qsgd:4,rescale=on,ef=on", "int8,seed=9"}) {
    auto options = ParseCompressorSpec(spec);
    ASSERT_TRUE(options.ok()) << spec << ": " << options.status();
    const std::string canonical = CompressorSpec(*options);
    auto again = ParseCompressorSpec(canonical);
    ASSERT_TRUE(again.ok()) << canonical << ": " << again.status();
    EXPECT_EQ(CompressorSpec(*again), canonical) << spec;
    std::printf("%-48s -> %s\n", spec, canonical.c_str());
  }
  auto o = *ParseCompressorSpec("topk:0.02,values=fp16,ef=off");
  EXPECT_EQ(o.op, Operator::kTopK);
  EXPECT_DOUBLE_EQ(o.ratio, 0.02);
  EXPECT_EQ(o.mantissa_bits, 10);
  EXPECT_FALSE(o.error_feedback);
}

TEST(CompressorSpecTest, RejectsBadSpecsSayingWhy) {
  const std::pair<const char*, const char*> cases[] = {
      {"zip:3", "unknown operator 'zip'"},
      {"topk:abc", "ratio 'abc' is not a number"},
      {"none:3", "takes no parameter"},
      {"topk:0.1,values=fp8", "values=fp8"},
      {"qsgd:4,values=fp16", "does not apply to qsgd"},
      {"topk:0.1,ef=maybe", "must be on or off"},
      {"threshold:1,band=3", "MIN..MAX"},
      {"topk:0.1,clip", "not key=value"},
  };
  for (const auto& [spec, why] : cases) {
    auto options = ParseCompressorSpec(spec);
    ASSERT_FALSE(options.ok()) << spec;
    EXPECT_EQ(options.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(options.status().message().find(why), std::string_view::npos)
        << spec << ": " << options.status();
  }
}

TEST(CompressorTest, CreateRejectsOptionsThatDoNotFit) {
  const std::pair<const char*, const char*> cases[] = {
      {"topk:0", "ratio 0 must be in (0, 1]"},
      {"dgc:1.5", "ratio 1.5"},
      {"threshold:0", "threshold 0 must be positive"},
      {"qsgd:0", "levels 0"},
      {"qsgd:4,clip=5", "relative to a threshold"},
      {"topk:0.1,clip=5,ef=off", "needs error feedback"},
      {"onebit:1,adaptive=on,band=0.1..0.01", "0 < min < max"},
      {"onebit:1,adaptive=on,decay=1", "decay 1"},
      {"qsgd:4,ef=on", "error feedback with unbiased qsgd diverges"},
  };
  for (const auto& [spec, why] : cases) {
    auto options = ParseCompressorSpec(spec);
    ASSERT_TRUE(options.ok()) << spec;
    auto compressor = Compressor::Create(*options, 100);
    ASSERT_FALSE(compressor.ok()) << spec;
    EXPECT_NE(compressor.status().message().find(why), std::string_view::npos)
        << spec << ": " << compressor.status();
  }
}

TEST(CompressorTest, NonFiniteInputIsRejectedByEveryOperatorWithAndWithoutErrorFeedback) {
  for (const char* spec : {"none", "fp16", "topk:0.01", "dgc:0.01", "threshold:1", "onebit:1",
                           "qsgd:4", "int8"}) {
    for (const char* ef : {",ef=on", ",ef=off"}) {
      if (std::string_view(spec) == "qsgd:4" && std::string_view(ef) == ",ef=on") continue;
      const std::string full = std::string(spec) + ef;
      Compressor c = Make(full, 5000);
      Update update;
      std::vector<float> v = MakeVector(Distribution::kNormal, 5000, 3);
      ASSERT_TRUE(c.Compress(v, update).ok()) << full;
      const std::vector<float> residual(c.residual().begin(), c.residual().end());
      v[4999] = -INFINITY;
      const Status s = c.Compress(v, update);
      EXPECT_NE(s.message().find("input[4999] is -inf"), std::string_view::npos) << full << s;
      EXPECT_EQ(std::vector<float>(c.residual().begin(), c.residual().end()), residual) << full;
      EXPECT_EQ(c.steps(), 1u);
    }
  }
}

TEST(CompressorTest, AResidualOverflowIsRejectedAndLeavesTheResidualBitForBit) {
  // Nothing reaches tau, so the first input becomes the residual; the second overflows it at
  // entry 0. No entry may move, not even by the rounding of (r + g) - g.
  Compressor c = Make("threshold:3.4e38", 3);
  Update update;
  const std::vector<float> first = {3e38f, 0.2f, -0.7f};
  ASSERT_TRUE(c.Compress(first, update).ok());
  ASSERT_EQ(update.count(), 0u);
  const std::vector<float> second = {3e38f, 1e-9f, 0.3f};
  const Status s = c.Compress(second, update);
  EXPECT_NE(s.message().find("overflows float"), std::string_view::npos) << s;
  EXPECT_EQ(std::vector<float>(c.residual().begin(), c.residual().end()), first);
  EXPECT_EQ(c.steps(), 1u);
}

TEST(CompressorTest, BadInputIsRejectedAndChangesNothing) {
  Compressor c = Make("topk:0.1", 100);
  Update update;
  std::vector<float> v = MakeVector(Distribution::kNormal, 100, 1);
  ASSERT_TRUE(c.Compress(v, update).ok());
  const std::vector<float> residual(c.residual().begin(), c.residual().end());
  const float threshold = c.threshold();
  v[37] = NAN;
  Status s = c.Compress(v, update);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("input[37] is nan"), std::string_view::npos) << s;
  EXPECT_EQ(std::vector<float>(c.residual().begin(), c.residual().end()), residual);
  EXPECT_EQ(c.threshold(), threshold);
  EXPECT_EQ(c.steps(), 1u);
  std::vector<float> short_input(99, 1.0f);
  s = c.Compress(short_input, update);
  EXPECT_NE(s.message().find("input of 99 values, dimension is 100"), std::string_view::npos) << s;
}

TEST(CompressorTest, ErrorFeedbackConservesMassForEveryOperator) {
  // sum_t update_t + residual_T == sum_t input_t, per coordinate, to float rounding.
  const uint64_t seed = 5;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  const size_t n = 2001;
  const int steps = 200;
  for (const char* spec :
       {"none", "fp16", "topk:0.01", "topk:0.05,values=fp16", "dgc:0.01", "threshold:2.0",
        "threshold:0.5,values=fp16,adaptive=on", "onebit:1.0", "onebit:0.3,clip=5,clip_every=1",
        "qsgd:4,rescale=on,ef=on", "int8"}) {
    Compressor c = Make(spec, n);
    std::vector<double> inputs(n, 0.0);
    std::vector<double> sent(n, 0.0);
    Update update;
    for (int t = 0; t < steps; ++t) {
      const std::vector<float> g = MakeVector(Distribution::kNormal, n, seed * 1000 + t);
      for (size_t i = 0; i < n; ++i) inputs[i] += g[i];
      ASSERT_TRUE(c.Compress(g, update).ok());
      AddTo(update, 1.0, std::span<double>(sent));
    }
    const bool clipped = std::string_view(spec).find("clip") != std::string_view::npos;
    double worst = 0;
    for (size_t i = 0; i < n; ++i) {
      worst = std::max(worst, std::fabs(sent[i] + c.residual()[i] - inputs[i]));
    }
    std::printf("%-40s max |sent + residual - inputs| = %.3g\n", spec, worst);
    if (clipped) {
      // Clipping drops mass on purpose: the residual stays within 5 tau instead.
      for (float r : c.residual()) EXPECT_LE(std::fabs(r), 5 * 0.3f + 1e-6f);
    } else {
      EXPECT_LE(worst, 1e-5 * steps) << spec;  // rounding of ~200 float additions of O(1)
    }
  }
}

// Below and on the selection's candidate path (selection.h), the top of residual + input is
// sent, the residual is exactly the sums that were not, and an overflow of residual + input is
// refused leaving the residual bit for bit.
TEST(CompressorTest, TopKWithErrorFeedbackSendsTheTopOfResidualPlusInput) {
  for (size_t n : {size_t{5000}, size_t{235146}}) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    Compressor c = Make("topk:0.02", n);
    const size_t k = static_cast<size_t>(std::ceil(0.02 * static_cast<double>(n)));
    Update update;
    std::vector<float> expected_source(n, 0.0f);
    for (int t = 0; t < 5; ++t) {
      const std::vector<float> g = MakeVector(Distribution::kHeavyTailed, n, 40 + t);
      for (size_t i = 0; i < n; ++i) expected_source[i] = c.residual()[i] + g[i];
      ASSERT_TRUE(c.Compress(g, update).ok());
      std::vector<uint32_t> want;
      std::vector<float> want_values;
      ASSERT_TRUE(TopK(expected_source, k, want, want_values));
      EXPECT_EQ(update.indices, want);
      std::vector<float> rest = expected_source;
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(update.values[i], expected_source[want[i]]);
        rest[want[i]] = 0.0f;  // fp32 values are sent exactly
      }
      EXPECT_TRUE(std::ranges::equal(c.residual(), rest)) << "step " << t;
    }
    // 2k entries of 3.2e38: the first k are sent, the next k stay in the residual; one more
    // 3.2e38 on one of those overflows residual + input.
    Compressor o = Make("topk:0.02", n);
    std::vector<float> big(n, 0.0f);
    std::fill(big.begin(), big.begin() + static_cast<ptrdiff_t>(2 * k), 3.2e38f);
    ASSERT_TRUE(o.Compress(big, update).ok());
    ASSERT_EQ(o.residual()[k + 5], 3.2e38f);
    const std::vector<float> residual(o.residual().begin(), o.residual().end());
    std::vector<float> g(n, 1e-3f);
    g[k + 5] = 3.2e38f;
    const Status s = o.Compress(g, update);
    EXPECT_NE(s.message().find("residual + input overflows float"), std::string_view::npos) << s;
    EXPECT_TRUE(std::ranges::equal(o.residual(), residual));
    EXPECT_EQ(o.steps(), 1u);
  }
}

// CompressDifference(a, b) is Compress(a − b): the same update, bytes, threshold and residual
// over several steps, for top-k (selected as it reads a and b) and the operators that write the
// difference first; a non-finite difference is refused by name and changes nothing.
TEST(CompressorTest, CompressDifferenceIsCompressOfTheDifference) {
  const uint64_t seed = 21;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  for (const char* spec : {"topk:0.01,ef=off", "topk:0.01,values=fp16,ef=off", "topk:0.3,ef=off",
                           "topk:0.01", "dgc:0.01,ef=off", "fp16", "int8,ef=off"}) {
    for (size_t n : {size_t{1}, size_t{1000}, size_t{235146}}) {
      SCOPED_TRACE(::testing::Message() << spec << " n=" << n);
      Compressor fused = Make(spec, n);
      Compressor plain = Make(spec, n);
      for (int step = 0; step < 3; ++step) {
        const std::vector<float> a = MakeVector(Distribution::kNormal, n, seed + n + step);
        const std::vector<float> b = MakeVector(Distribution::kHeavyTailed, n, seed + 7 * n + step);
        std::vector<float> diff(n);
        for (size_t i = 0; i < n; ++i) diff[i] = a[i] - b[i];
        Update got, want;
        std::vector<std::byte> got_bytes, want_bytes;
        ASSERT_TRUE(fused.CompressDifference(a, b, got, got_bytes).ok());
        ASSERT_TRUE(plain.Compress(diff, want, want_bytes).ok());
        EXPECT_EQ(got_bytes, want_bytes) << "step " << step;
        EXPECT_EQ(got.indices, want.indices);
        EXPECT_EQ(got.values, want.values);
        EXPECT_EQ(got.dense, want.dense);
        EXPECT_EQ(fused.threshold(), plain.threshold());
        EXPECT_EQ(fused.steps(), plain.steps());
        EXPECT_TRUE(std::ranges::equal(fused.residual(), plain.residual()));
      }
    }
  }
  Compressor c = Make("topk:0.01,ef=off", 100000);
  std::vector<float> a = MakeVector(Distribution::kNormal, 100000, seed);
  std::vector<float> b(100000, 1.0f);
  a[4242] = 3e38f;
  b[4242] = -3e38f;
  Update out;
  std::vector<std::byte> bytes;
  const Status s = c.CompressDifference(a, b, out, bytes);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("input[4242] = 3e+38 - -3e+38 is inf"), std::string::npos) << s;
  EXPECT_EQ(c.steps(), 0u);
  EXPECT_EQ(out.count(), 0u);
  EXPECT_EQ(c.CompressDifference(a, std::span(b).first(5), out, bytes).code(),
            StatusCode::kInvalidArgument);
}

TEST(CompressorTest, OneBitKeepsTheResidualBelowTauForSmallInputs) {
  // Strom's scheme: |r + g| < 2 tau when |g| < tau, and one tau leaves per emitted entry.
  const size_t n = 3000;
  const float tau = 0.1f;
  Compressor c = Make("onebit:0.1", n);
  Update update;
  std::mt19937_64 rng(8);
  std::uniform_real_distribution<float> small(-0.099f, 0.099f);
  for (int t = 0; t < 50; ++t) {
    std::vector<float> g(n);
    for (float& x : g) x = small(rng);
    ASSERT_TRUE(c.Compress(g, update).ok());
    for (float v : update.values) EXPECT_EQ(std::fabs(v), tau);
    for (float r : c.residual()) ASSERT_LT(std::fabs(r), tau);
    EXPECT_EQ(update.format.coding, ValueCoding::kSign);
  }
}

TEST(CompressorTest, ResidualClipBoundsTheResidual) {
  const size_t n = 1000;
  Compressor c = Make("threshold:0.5,clip=2,clip_every=4", n);
  Update update;
  for (int t = 1; t <= 8; ++t) {
    std::vector<float> g(n, 0.3f);  // never reaches tau alone; accumulates
    g[0] = 100.0f;                  // a huge value that would explode the residual
    ASSERT_TRUE(c.Compress(g, update).ok());
    if (t % 4 == 0) {
      for (float r : c.residual()) ASSERT_LE(std::fabs(r), 2 * 0.5f);
    }
  }
  c.ResetResidual();
  for (float r : c.residual()) EXPECT_EQ(r, 0.0f);
}

TEST(AdaptiveThresholdTest, MovesTauByDecayOutsideTheBand) {
  const AdaptiveThresholdOptions o;  // band 1e-4..1e-2, decay 0.5^(1/20)
  AdaptiveThreshold a(1.0f, o);
  a.Observe(1e-5);  // too sparse: lower tau
  EXPECT_NEAR(a.tau(), o.decay, 1e-7);
  a.Observe(1e-3);  // inside: keep
  EXPECT_NEAR(a.tau(), o.decay, 1e-7);
  a.Observe(0.5);  // too dense: raise
  EXPECT_NEAR(a.tau(), 1.0, 1e-6);
  AdaptiveThreshold doubling(1.0f, o);
  for (int i = 0; i < 20; ++i) doubling.Observe(0.1);
  EXPECT_NEAR(doubling.tau(), 2.0, 2e-6);
}

TEST(AdaptiveThresholdTest, CompressorSettlesIntoTheTargetBand) {
  // Stationary N(0, 1) inputs without error feedback: starting from tau = 1e-3 (everything
  // passes), the controller raises tau until the sent fraction is inside 1e-3..1e-2.
  const size_t n = 20000;
  Compressor c = Make("threshold:0.001,adaptive=on,band=0.001..0.01,ef=off", n);
  Update update;
  int inside = 0;
  for (int t = 0; t < 400; ++t) {
    const std::vector<float> g = MakeVector(Distribution::kNormal, n, 700 + t);
    ASSERT_TRUE(c.Compress(g, update).ok());
    const double density = static_cast<double>(update.count()) / n;
    if (t >= 300) {
      inside += density >= 1e-3 && density <= 1e-2;
      EXPECT_GE(density, 0.5e-3);
      EXPECT_LE(density, 2e-2);
    }
  }
  std::printf("tau %.4f, %d of the last 100 steps inside the band\n", c.threshold(), inside);
  EXPECT_GE(inside, 80);
}

TEST(CompressorTest, QsgdAndInt8AreUnbiased) {
  // Each coordinate's decoded value has variance at most (scale / s)^2 / 4; the mean of N
  // draws must sit within 5 standard errors of the input.
  const size_t n = 64;
  const int draws = 20000;
  const std::vector<float> v = MakeVector(Distribution::kHeavyTailed, n, 77);
  for (const char* spec : {"qsgd:4,ef=off,seed=3", "qsgd:1,ef=off,seed=4", "int8,ef=off,seed=5"}) {
    Compressor c = Make(spec, n);
    std::vector<double> sum(n, 0.0);
    Update update;
    double scale = 0;
    uint32_t levels = 0;
    for (int t = 0; t < draws; ++t) {
      ASSERT_TRUE(c.Compress(v, update).ok());
      AddTo(update, 1.0, std::span<double>(sum));
      scale = update.format.scale;
      levels = update.format.levels;
    }
    const double sigma = scale / levels / 2;
    const double tolerance = 5 * sigma / std::sqrt(static_cast<double>(draws));
    double worst = 0;
    for (size_t i = 0; i < n; ++i) {
      const double error = std::fabs(sum[i] / draws - v[i]);
      worst = std::max(worst, error / tolerance);
      EXPECT_LE(error, tolerance + 1e-6 * std::fabs(v[i])) << spec << " coordinate " << i;
    }
    std::printf("%-24s worst |mean - v| = %.2f of its 5-sigma tolerance\n", spec, worst);
  }
}

TEST(CompressorTest, QsgdVarianceStaysWithinItsBound) {
  // QSGD Lemma 3.1: E||Q(v) - v||^2 <= min(d / s^2, sqrt(d) / s) ||v||^2.
  const size_t n = 1000;
  const std::vector<float> v = MakeVector(Distribution::kNormal, n, 12);
  double norm2 = 0;
  for (float x : v) norm2 += double{x} * x;
  for (uint32_t s : {1u, 4u, 16u}) {
    Compressor c = Make("qsgd:" + std::to_string(s) + ",ef=off", n);
    Update update;
    std::vector<float> dense(n);
    double total = 0;
    const int draws = 200;
    for (int t = 0; t < draws; ++t) {
      ASSERT_TRUE(c.Compress(v, update).ok());
      Densify(update, dense);
      for (size_t i = 0; i < n; ++i) total += std::pow(double{dense[i]} - v[i], 2);
    }
    const double bound =
        std::min(n / double(s * s), std::sqrt(double(n)) / s) * norm2;
    EXPECT_LE(total / draws, bound) << "s=" << s;
  }
}

TEST(CompressorTest, Fp16AndNoneKeepTheirPrecision) {
  const std::vector<float> v = MakeVector(Distribution::kHeavyTailed, 10001, 2);
  Update update;
  Compressor none = Make("none,ef=off", v.size());
  ASSERT_TRUE(none.Compress(v, update).ok());
  EXPECT_EQ(update.values, v);
  Compressor half = Make("fp16,ef=off", v.size());
  ASSERT_TRUE(half.Compress(v, update).ok());
  float largest = 0;
  for (float x : v) largest = std::max(largest, std::fabs(x));
  for (size_t i = 0; i < v.size(); ++i) {
    // 11 significant bits, or flushed when 2^31 below the largest magnitude.
    EXPECT_LE(std::fabs(update.values[i] - v[i]),
              std::max(std::fabs(v[i]) * std::ldexp(1.0f, -11), largest * std::ldexp(1.0f, -30)))
        << i;
  }
  EXPECT_EQ(update.format.BitsPerValue(), 16);
}

TEST(CompressorTest, DenseEncodingIsChosenWhenSmaller) {
  const std::vector<float> v = MakeVector(Distribution::kNormal, 4096, 6);
  Update update;
  Compressor qsgd = Make("qsgd:255,ef=off", v.size());  // almost no zero levels
  ASSERT_TRUE(qsgd.Compress(v, update).ok());
  EXPECT_TRUE(update.dense);
  Compressor coarse = Make("qsgd:1,ef=off", v.size());  // mostly zero levels
  ASSERT_TRUE(coarse.Compress(v, update).ok());
  EXPECT_FALSE(update.dense);
  Compressor most = Make("topk:0.99,ef=off", v.size());
  ASSERT_TRUE(most.Compress(v, update).ok());
  EXPECT_TRUE(update.dense);
}

TEST(CompressorTest, EmptyAndSingleElementVectors) {
  for (const char* spec : {"none", "fp16", "topk:0.01", "dgc:0.01", "threshold:1", "onebit:1",
                           "qsgd:4", "int8"}) {
    for (size_t n : {size_t{0}, size_t{1}}) {
      Compressor c = Make(spec, n);
      Update update;
      std::vector<float> v(n, 2.5f);
      ASSERT_TRUE(c.Compress(v, update).ok()) << spec;
      EXPECT_EQ(update.dimension, n);
      if (n == 1 && std::string_view(spec) != "onebit:1") {
        // One value of 2.5: everything that sends it sends it with its own precision.
        std::vector<float> dense(1);
        Densify(update, dense);
        EXPECT_NEAR(dense[0], 2.5f, 1e-6) << spec;
      }
    }
  }
}

// The fused dense path (coding/dense_codec.h) against the two-step one it replaces:
// Compressor::Compress(input, update, bytes) must give the Update, the bytes and the residual
// that Compress(input, update) + EncodeUpdate(update) give, bit for bit, over several steps.

// Values at the format's edges: signed zeros, float subnormals (exponent code 0), the largest
// floats (fp16 rounding clamps instead of overflowing), a rounding tie that carries into the
// exponent, and magnitudes 2^-100 .. 2^100, wider than fp16's 32-binade window, so that the
// smallest are flushed.
std::vector<float> EdgeVector(size_t n, uint64_t seed) {
  std::vector<float> v = MakeVector(Distribution::kNormal, n, seed);
  const float specials[] = {0.0f,
                            -0.0f,
                            1e-40f,
                            -3e-42f,
                            std::numeric_limits<float>::denorm_min(),
                            std::numeric_limits<float>::max(),
                            -std::numeric_limits<float>::max(),
                            std::bit_cast<float>(0x7F7FF000u),  // rounds past max: clamped
                            std::bit_cast<float>(0x3F7FF000u),  // tie, carries to 1.0
                            std::bit_cast<float>(0x007FF000u),  // subnormal rounding to normal
                            0x1p-100f,
                            -0x1p100f};
  for (size_t i = 0; i < n; ++i) {
    if (i % 7 == 3) {
      v[i] = specials[(i / 7) % std::size(specials)];
    } else if (i % 11 == 5) {
      v[i] = std::ldexp(v[i], static_cast<int>(i % 200) - 100);
    }
  }
  return v;
}

struct Case {
  const char* name;
  std::vector<float> (*make)(size_t n, uint64_t seed);
};

std::vector<float> Normal(size_t n, uint64_t seed) {
  return MakeVector(Distribution::kNormal, n, seed);
}
std::vector<float> Heavy(size_t n, uint64_t seed) {
  return MakeVector(Distribution::kHeavyTailed, n, seed);
}
std::vector<float> Equal(size_t n, uint64_t seed) {
  return MakeVector(Distribution::kAllEqual, n, seed);
}
std::vector<float> Sparse(size_t n, uint64_t seed) {
  return MakeVector(Distribution::kMostlyZero, n, seed);
}

TEST(DenseCodecTest, FusedEncodeIsBitIdenticalToCompressThenEncode) {
  const Case cases[] = {{"edge", EdgeVector},
                        {"normal", Normal},
                        {"heavy-tailed", Heavy},
                        {"all-equal", Equal},
                        {"mostly-zero", Sparse}};
  // Around the 4096-value blocks and the 8- and 16-wide vector tails.
  const size_t sizes[] = {0, 1, 7, 15, 17, 4095, 4096, 4097, 8193, 100003};
  std::printf("seeds 1..3 per step, sizes 0..100003\n");
  // int8's wire codes come out of its quantizing pass (level_codec.h); qsgd's do not. Threshold
  // 1 streams every output past the caches (stream_store.h), as above the last-level cache.
  for (const size_t threshold : {size_t{0}, size_t{1}}) {
    const internal::ScopedStreamThresholdForTesting stream_from(threshold);
    for (const char* spec :
         {"none", "fp16", "none,ef=off", "fp16,ef=off", "int8", "int8,ef=off", "qsgd:16,rescale=on",
          "qsgd:255,ef=off", "qsgd:200,rescale=on,ef=on"}) {
      for (const Case& c : cases) {
        for (size_t n : sizes) {
          Compressor two_step = Make(spec, n);
          Compressor fused = Make(spec, n);
          Update expected, got;
          std::vector<std::byte> expected_bytes, got_bytes;
          for (uint64_t step = 1; step <= 3; ++step) {
            const std::vector<float> input = c.make(n, step);
            SCOPED_TRACE(::testing::Message() << spec << " " << c.name << " n=" << n << " step "
                                              << step << " stream threshold " << threshold);
            // The edge values' largest floats overflow some residual + input sums: both paths
            // must refuse the same steps, with the same message, and keep the same residual.
            const Status expected_status = two_step.Compress(input, expected);
            const Status got_status = fused.Compress(input, got, got_bytes);
            EXPECT_EQ(got_status.ToString(), expected_status.ToString());
            EXPECT_EQ(Bits(fused.residual()), Bits(two_step.residual()));
            if (!expected_status.ok()) continue;
            EncodeUpdate(expected, expected_bytes);
            EXPECT_EQ(got.op, expected.op);
            EXPECT_EQ(got.dimension, expected.dimension);
            EXPECT_EQ(got.dense, expected.dense);
            EXPECT_EQ(got.indices, expected.indices);
            EXPECT_EQ(got.format, expected.format);
            EXPECT_EQ(Bits(got.values), Bits(expected.values));
            EXPECT_EQ(got_bytes, expected_bytes);
            EXPECT_EQ(fused.steps(), two_step.steps());
            Update decoded;
            ASSERT_TRUE(DecodeUpdate(got_bytes, static_cast<uint32_t>(n), decoded).ok());
            EXPECT_EQ(Bits(decoded.values), Bits(got.values));
          }
        }
      }
    }
  }
}

TEST(DenseCodecTest, FusedPathRefusesNonFiniteInputAndChangesNoState) {
  for (const char* spec : {"none", "fp16", "none,ef=off", "fp16,ef=off"}) {
    SCOPED_TRACE(spec);
    Compressor c = Make(spec, 9000);
    Update update;
    std::vector<std::byte> bytes;
    std::vector<float> v = MakeVector(Distribution::kNormal, 9000, 4);
    ASSERT_TRUE(c.Compress(v, update, bytes).ok());
    const std::vector<uint32_t> residual = Bits(c.residual());
    for (const float bad : {std::numeric_limits<float>::quiet_NaN(), -INFINITY}) {
      v[8191] = bad;
      const Status s = c.Compress(v, update, bytes);
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
      EXPECT_NE(s.message().find("input[8191] is"), std::string_view::npos) << s;
      EXPECT_EQ(Bits(c.residual()), residual);
      EXPECT_EQ(c.steps(), 1u);
    }
    std::vector<float> short_input(10, 1.0f);
    EXPECT_NE(c.Compress(short_input, update, bytes).message().find("input of 10 values"),
              std::string_view::npos);
  }
}

TEST(DenseCodecTest, ANarrowFp16WindowTakesTheGeneralPath) {
  // Every value within one binade: the window is 1 bit wide, codes are 12 bits, and the fused
  // pass declines; Compress with bytes still gives EncodeUpdate's bytes.
  std::vector<float> v(5000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 1.0f + static_cast<float>(i) / 8192.0f;
  Compressor c = Make("fp16,ef=off", v.size());
  Update update;
  std::vector<std::byte> bytes;
  EXPECT_EQ(internal::CompressEncodeDense(Operator::kFp16, v, {}, update, bytes),
            internal::DenseResult::kNotHandled);
  ASSERT_TRUE(c.Compress(v, update, bytes).ok());
  EXPECT_LT(update.format.exponent_bits, 5);
  std::vector<std::byte> expected;
  EncodeUpdate(update, expected);
  EXPECT_EQ(bytes, expected);
}

}  // namespace
}  // namespace murmur::coding
