// DeviceCompressor on the CPU device (the kernels' host versions): the same updates as the host
// Compressor for every operator but DGC (QSGD and int8 included: both draw from one hash), DGC's
// contract, QSGD's unbiasedness, error feedback's conservation, and rejection of non-finite input
// without a state change. murmur_cuda_test runs the GPU against this.
#include "coding/device_compressor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "coding/compressor.h"
#include "coding/selection.h"
#include "kernels/compress_ops.h"
#include "kernels/device.h"

namespace murmur::coding {
namespace {

constexpr uint64_t kSeed = 4242;
const kernels::Device kCpu = kernels::Device::Cpu();

std::vector<float> Random(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// The host versions of kernels/compress_ops.h are the reference the CUDA kernels are held to
// bit for bit; here they are checked against coding's own selections and known fp16 codes.
TEST(CompressKernelsTest, HostVersionsAgreeWithCodingSelections) {
  for (size_t d : {size_t{0}, size_t{1}, size_t{9}, size_t{4099}, size_t{100003}}) {
    auto v = Random(d, kSeed + d);
    for (size_t i = 0; i < d; i += 5) v[i] = i % 2 ? -0.75f : 0.75f;  // ties
    for (size_t i = 0; i < d; i += 7) v[i] = 0.0f;                   // zeros
    for (size_t k : {size_t{0}, size_t{1}, d / 100 + 1, d / 5, d + 3}) {
      SCOPED_TRACE(::testing::Message() << "d " << d << " k " << k);
      std::vector<uint32_t> want_i, got_i(std::min(k, d));
      std::vector<float> want_v, got_v(std::min(k, d));
      ASSERT_TRUE(TopK(v, k, want_i, want_v));
      int64_t count = -1;
      ASSERT_TRUE(kernels::TopK(kCpu, v, static_cast<int64_t>(k), got_i, got_v, &count).ok());
      got_i.resize(static_cast<size_t>(count));
      got_v.resize(static_cast<size_t>(count));
      EXPECT_EQ(got_i, want_i);
      EXPECT_EQ(got_v, want_v);
    }
    std::vector<uint32_t> want_i, got_i(d);
    std::vector<float> want_v, got_v(d);
    ASSERT_TRUE(AtLeast(v, 0.75f, want_i, want_v));
    int64_t total = -1;
    ASSERT_TRUE(kernels::SelectAtLeast(kCpu, v, 0.75f, got_i, got_v, &total).ok());
    got_i.resize(static_cast<size_t>(total));
    got_v.resize(static_cast<size_t>(total));
    EXPECT_EQ(got_i, want_i);
    EXPECT_EQ(got_v, want_v);
  }
  // IEEE binary16: 1, -2, the largest half, a value rounding to it, overflow, the smallest
  // subnormal, and a tie rounding to even.
  const std::vector<float> in = {1.0f, -2.0f, 65504.0f, 65519.0f, 65520.0f, 0x1p-24f,
                                 1.0f + 0x1p-11f};
  const std::vector<uint16_t> want = {0x3c00, 0xc000, 0x7bff, 0x7bff, 0x7c00, 0x0001, 0x3c00};
  std::vector<uint16_t> got(in.size());
  ASSERT_TRUE(kernels::FloatToHalf(kCpu, in, got).ok());
  EXPECT_EQ(got, want);
  std::vector<uint32_t> words(2);
  std::vector<float> signs(33, 1.0f);
  signs[0] = -1.0f;
  signs[31] = -0.0f;
  signs[32] = -3.0f;
  ASSERT_TRUE(kernels::PackSigns(kCpu, signs, words).ok());
  EXPECT_EQ(words, (std::vector<uint32_t>{0x80000001u, 0x1u}));
}

TEST(DeviceCompressorTest, DeterministicOperatorsMatchTheHostCompressor) {
  std::printf("seed %llu\n", static_cast<unsigned long long>(kSeed));
  for (size_t d : {size_t{1}, size_t{7}, size_t{4099}, size_t{100003}}) {
    for (const char* spec : {"topk:0.01", "topk:0.3,values=fp16", "threshold:1.5", "onebit:1.5",
                             "threshold:0.5,adaptive=on", "none", "topk:0.05,ef=off",
                             "qsgd:16,ef=off", "qsgd:8,rescale=on,ef=on", "int8,ef=on"}) {
      SCOPED_TRACE(::testing::Message() << spec << " d " << d);
      auto options = ParseCompressorSpec(spec);
      ASSERT_TRUE(options.ok());
      auto host = Compressor::Create(*options, d);
      auto dev = DeviceCompressor::Create(*options, d, kCpu);
      ASSERT_TRUE(host.ok() && dev.ok()) << dev.status();
      for (int step = 0; step < 4; ++step) {
        const auto g = Random(d, kSeed + step);
        Update a, b;
        ASSERT_TRUE(host->Compress(g, a).ok());
        ASSERT_TRUE(dev->Compress(g, b).ok());
        EXPECT_EQ(a.indices, b.indices);
        EXPECT_EQ(a.values, b.values);
        EXPECT_EQ(a.dense, b.dense);
        EXPECT_EQ(a.format, b.format);
        EXPECT_EQ(host->threshold(), dev->threshold());
        if (options->error_feedback) {
          EXPECT_EQ(std::vector<float>(host->residual().begin(), host->residual().end()),
                    std::vector<float>(dev->residual().begin(), dev->residual().end()));
        }
      }
    }
  }
}

TEST(DeviceCompressorTest, ErrorFeedbackConservesEveryInput) {
  // Σ inputs = Σ decoded updates + residual, for every operator (to float rounding).
  const size_t d = 20011;
  for (const char* spec :
       {"topk:0.01", "dgc:0.01", "onebit:1.0", "qsgd:8,rescale=on,ef=on", "int8,ef=on", "fp16,ef=on"}) {
    SCOPED_TRACE(spec);
    auto options = ParseCompressorSpec(spec);
    ASSERT_TRUE(options.ok()) << options.status();
    auto dev = DeviceCompressor::Create(*options, d, kCpu);
    ASSERT_TRUE(dev.ok()) << dev.status();
    std::vector<double> inputs(d, 0.0), sent(d, 0.0);
    for (int step = 0; step < 6; ++step) {
      const auto g = Random(d, kSeed + 10 + step);
      Update u;
      ASSERT_TRUE(dev->Compress(g, u).ok());
      std::vector<float> dense(d, 0.0f);
      Densify(u, dense);
      for (size_t i = 0; i < d; ++i) {
        inputs[i] += g[i];
        sent[i] += dense[i];
      }
    }
    double worst = 0;
    for (size_t i = 0; i < d; ++i) {
      // Unbiased operators run without error feedback by default: then nothing is kept back.
      const double kept = dev->residual().empty() ? 0.0 : dev->residual()[i];
      worst = std::max(worst, std::abs(inputs[i] - sent[i] - kept));
    }
    EXPECT_LT(worst, 1e-4);
  }
}

TEST(DeviceCompressorTest, SampledTopKKeepsTheLargestWithinItsBand) {
  const size_t d = 200003, k = 2001;  // ratio 0.01 -> ceil(0.01 d)
  auto options = *ParseCompressorSpec("dgc:0.01,ef=off");
  auto dev = DeviceCompressor::Create(options, d, kCpu);
  ASSERT_TRUE(dev.ok());
  for (int step = 0; step < 5; ++step) {
    const auto g = Random(d, kSeed + 20 + step);
    Update u;
    ASSERT_TRUE(dev->Compress(g, u).ok());
    EXPECT_LE(u.count(), k);
    EXPECT_GE(u.count(), static_cast<size_t>(std::ceil(0.8 * k)));
    // Everything sent is at least as large as everything not sent.
    float smallest_sent = INFINITY, largest_unsent = 0;
    std::vector<bool> chosen(d, false);
    for (uint32_t i : u.indices) chosen[i] = true;
    for (size_t i = 0; i < d; ++i) {
      if (chosen[i]) {
        smallest_sent = std::min(smallest_sent, std::fabs(g[i]));
      } else {
        largest_unsent = std::max(largest_unsent, std::fabs(g[i]));
      }
    }
    EXPECT_GE(smallest_sent, largest_unsent);
  }
}

TEST(DeviceCompressorTest, QsgdIsUnbiased) {
  const size_t d = 64;
  const auto g = Random(d, kSeed + 30);
  auto dev = DeviceCompressor::Create(*ParseCompressorSpec("qsgd:4,ef=off"), d, kCpu);
  ASSERT_TRUE(dev.ok());
  std::vector<double> mean(d, 0.0);
  const int trials = 4000;
  for (int t = 0; t < trials; ++t) {
    Update u;
    ASSERT_TRUE(dev->Compress(g, u).ok());
    std::vector<float> dense(d, 0.0f);
    Densify(u, dense);
    for (size_t i = 0; i < d; ++i) mean[i] += dense[i] / trials;
  }
  double norm = 0;
  for (float x : g) norm += double{x} * x;
  norm = std::sqrt(norm);
  for (size_t i = 0; i < d; ++i) {
    // Each draw's spread is at most norm / levels; the mean of 4000 is within 5 sigma.
    EXPECT_NEAR(mean[i], g[i], 5 * (norm / 4) / std::sqrt(double{trials})) << i;
  }
}

TEST(DeviceCompressorTest, NonFiniteInputIsRejectedAndChangesNothing) {
  const size_t d = 1001;
  auto dev = DeviceCompressor::Create(*ParseCompressorSpec("topk:0.1"), d, kCpu);
  ASSERT_TRUE(dev.ok());
  Update u;
  ASSERT_TRUE(dev->Compress(Random(d, kSeed), u).ok());
  const std::vector<float> before(dev->residual().begin(), dev->residual().end());
  auto bad = Random(d, kSeed + 1);
  bad[500] = NAN;
  Status s = dev->Compress(bad, u);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(s.message()).find("NaN or infinite"), std::string::npos) << s;
  EXPECT_EQ(before, std::vector<float>(dev->residual().begin(), dev->residual().end()));
  EXPECT_EQ(dev->steps(), 1u);
  EXPECT_EQ(dev->Compress(Random(d - 1, kSeed), u).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(DeviceCompressor::Create(*ParseCompressorSpec("topk:0.1,clip=2"), d, kCpu)
                .status()
                .code(),
            StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace murmur::coding
