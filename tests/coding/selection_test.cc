#include "coding/selection.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>

#include "coding/stream_store.h"
#include "tests/testing/test_vectors.h"

namespace murmur::coding {
namespace {

using testing::Distribution;
using testing::DistributionName;
using testing::kAllDistributions;
using testing::MakeVector;

// The definition: sort by (|v| descending, index ascending), keep k non-zeros, sort by index.
std::vector<uint32_t> ReferenceTopK(const std::vector<float>& v, size_t k) {
  std::vector<uint32_t> order(v.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return std::fabs(v[a]) > std::fabs(v[b]); });
  std::vector<uint32_t> out;
  for (uint32_t i : order) {
    if (out.size() == k || v[i] == 0) break;
    out.push_back(i);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Selection results come with their values; check they match and return the positions.
std::vector<uint32_t> Checked(const std::vector<float>& v, const std::vector<uint32_t>& indices,
                              const std::vector<float>& values) {
  EXPECT_EQ(indices.size(), values.size());
  for (size_t j = 0; j < indices.size() && j < values.size(); ++j) {
    EXPECT_EQ(std::bit_cast<uint32_t>(values[j]), std::bit_cast<uint32_t>(v[indices[j]]));
  }
  return indices;
}

std::vector<uint32_t> TopKOf(const std::vector<float>& v, size_t k) {
  std::vector<uint32_t> indices;
  std::vector<float> values;
  EXPECT_TRUE(TopK(v, k, indices, values));
  return Checked(v, indices, values);
}

std::vector<uint32_t> AtLeastOf(const std::vector<float>& v, float tau) {
  std::vector<uint32_t> indices;
  std::vector<float> values;
  EXPECT_TRUE(AtLeast(v, tau, indices, values));
  return Checked(v, indices, values);
}

std::vector<uint32_t> SampledOf(const std::vector<float>& v, size_t k,
                                const SampledTopKOptions& options, std::mt19937_64& rng,
                                SampledTopKStats* stats = nullptr) {
  std::vector<uint32_t> indices;
  std::vector<float> values;
  const SampledTopKStats s = SampledTopK(v, k, options, rng, indices, values);
  EXPECT_FALSE(s.non_finite);
  if (stats != nullptr) *stats = s;
  return Checked(v, indices, values);
}

// Lengths around the selections' edges: no full block of 16, one and a tail, the candidate
// path's threshold (2^15) either side, a prime, the default model's size.
constexpr size_t kEdgeSizes[] = {0, 1, 7, 17, 1000, 32767, 32768, 100003, 235146};

// Calls check(a, b, where) for operand pairs holding a NaN (in a), an infinity (in b) or a pair
// whose combination overflows (a = 3e38 beside b = overflow_b), at the first, middle and last
// entry of a 17-entry vector (the tail) and a 100,000-entry one (skipped and walked blocks).
template <typename Check>
void ForEachPoisonedPair(float overflow_b, Check check) {
  for (size_t n : {size_t{17}, size_t{100000}}) {
    for (size_t at : {size_t{0}, n / 2, n - 1}) {
      for (int kind = 0; kind < 3; ++kind) {
        std::vector<float> a = MakeVector(Distribution::kNormal, n, n);
        std::vector<float> b(n, 0.5f);
        if (kind == 0) a[at] = NAN;
        if (kind == 1) b[at] = -INFINITY;
        if (kind == 2) a[at] = 3e38f, b[at] = overflow_b;
        check(a, b,
              "n=" + std::to_string(n) + " at " + std::to_string(at) + " kind " +
                  std::to_string(kind));
      }
    }
  }
}

TEST(SelectionTest, TopKSelectsExactlyTheKLargestMagnitudesTiesByIndex) {
  const uint64_t seed = 11;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::vector<uint32_t> got;
  for (Distribution d : kAllDistributions) {
    // 32767 / 32768: either side of the sampled-candidate path; 235146: the default MLP; k up
    // to n / 16, the path's limit, and past it.
    for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{7}, size_t{1000}, size_t{32767},
                     size_t{32768}, size_t{100003}, size_t{235146}}) {
      const std::vector<float> v = MakeVector(d, n, seed + n);
      for (size_t k : {size_t{0}, size_t{1}, n / 100, n / 16, n / 16 + 1, n / 3, n, n + 5}) {
        got = TopKOf(v, k);
        ASSERT_EQ(got, ReferenceTopK(v, k)) << DistributionName(d) << " n=" << n << " k=" << k;
      }
    }
  }
}

// The fused selection of a − b against TopK of the written difference: the same positions and
// value bits, for every distribution, the sizes and k of the test above (candidate path, its
// fallback and the full select), and without writing the difference where the candidates suffice.
TEST(SelectionTest, TopKOfDifferenceIsTopKOfTheWrittenDifference) {
  const uint64_t seed = 12;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  for (Distribution d : kAllDistributions) {
    for (size_t n : kEdgeSizes) {
      // b near a, as a CHOCO round's public copy is near the model.
      const std::vector<float> a = MakeVector(Distribution::kNormal, n, seed + n);
      const std::vector<float> step = MakeVector(d, n, seed + 2 * n + 1);
      std::vector<float> b(n), diff(n);
      for (size_t i = 0; i < n; ++i) {
        b[i] = a[i] - 0.01f * step[i];
        diff[i] = a[i] - b[i];
      }
      for (size_t k : {size_t{0}, size_t{1}, n / 100, n / 16, n / 16 + 1, n}) {
        std::vector<uint32_t> indices;
        std::vector<float> values, scratch;
        ASSERT_TRUE(TopKOfDifference(a, b, k, indices, values, scratch));
        ASSERT_EQ(Checked(diff, indices, values), TopKOf(diff, k))
            << DistributionName(d) << " n=" << n << " k=" << k;
        if (d == Distribution::kNormal && n >= 32768 && k == n / 100) {
          EXPECT_TRUE(scratch.empty()) << "the difference was written, n=" << n;
        }
      }
    }
  }
  // A NaN or infinity in a, in b, or made by the subtraction (3e38 - -3e38), in a skipped block,
  // a walked one or the tail, on the candidate path and the full select.
  std::vector<uint32_t> indices;
  std::vector<float> values, scratch;
  ForEachPoisonedPair(-3e38f, [&](const std::vector<float>& a, const std::vector<float>& b,
                                  const std::string& where) {
    for (size_t k : {std::max<size_t>(1, a.size() / 100), a.size()}) {
      EXPECT_FALSE(TopKOfDifference(a, b, k, indices, values, scratch)) << where << " k=" << k;
    }
  });
}

// The *OfSum selections (error feedback's residual + input, formed while selecting) pick what
// the plain selection picks over the written sum, and leave that sum behind whole: at edge
// sizes (tails, the candidate path's threshold), every distribution, top-k, threshold and DGC's
// sampled top-k (the same rng draws). Then a NaN, an infinity or an overflowing sum anywhere is
// refused by each.
TEST(SelectionTest, OfSumSelectsFromTheSumItWrites) {
  const uint64_t seed = 13;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  for (Distribution d : kAllDistributions) {
    for (size_t n : kEdgeSizes) {
      const std::vector<float> residual = MakeVector(Distribution::kNormal, n, seed + n);
      const std::vector<float> input = MakeVector(d, n, seed + 3 * n + 1);
      std::vector<float> want_sum(n);
      for (size_t i = 0; i < n; ++i) want_sum[i] = residual[i] + input[i];
      for (size_t k : {size_t{0}, size_t{1}, n / 100, n / 16 + 1, n}) {
        std::vector<uint32_t> indices;
        std::vector<float> values;
        std::vector<float> sum(n, -7.0f);
        ASSERT_TRUE(TopKOfSum(residual, input, k, indices, values, sum));
        ASSERT_EQ(Checked(want_sum, indices, values), TopKOf(want_sum, k))
            << DistributionName(d) << " n=" << n << " k=" << k;
        ASSERT_EQ(sum, want_sum) << DistributionName(d) << " n=" << n << " k=" << k;

        std::mt19937_64 rng_of_sum(seed + k), rng_plain(seed + k);
        std::vector<uint32_t> plain_indices;
        std::vector<float> plain_values;
        std::fill(sum.begin(), sum.end(), -7.0f);
        const SampledTopKStats of_sum =
            SampledTopKOfSum(residual, input, k, {}, rng_of_sum, indices, values, sum);
        const SampledTopKStats plain =
            SampledTopK(want_sum, k, {}, rng_plain, plain_indices, plain_values);
        ASSERT_FALSE(of_sum.non_finite);
        EXPECT_EQ(indices, plain_indices) << "dgc n=" << n << " k=" << k;
        EXPECT_EQ(values, plain_values) << "dgc n=" << n << " k=" << k;
        EXPECT_EQ(of_sum.adaptations, plain.adaptations);
        ASSERT_EQ(sum, want_sum) << "dgc n=" << n << " k=" << k;
      }
      for (float tau : {0.125f, 1.0f, 3.0f}) {
        std::vector<uint32_t> indices;
        std::vector<float> values;
        std::vector<float> sum(n, -7.0f);
        ASSERT_TRUE(AtLeastOfSum(residual, input, tau, indices, values, sum));
        EXPECT_EQ(Checked(want_sum, indices, values), AtLeastOf(want_sum, tau)) << "tau " << tau;
        ASSERT_EQ(sum, want_sum) << "threshold n=" << n;
      }
    }
  }
  std::vector<uint32_t> indices;
  std::vector<float> values;
  ForEachPoisonedPair(3e38f, [&](const std::vector<float>& a, const std::vector<float>& b,
                                 const std::string& where) {
    std::vector<float> sum(a.size());
    for (size_t k : {std::max<size_t>(1, a.size() / 100), a.size()}) {
      EXPECT_FALSE(TopKOfSum(a, b, k, indices, values, sum)) << where << " k=" << k;
      std::mt19937_64 rng(1);
      EXPECT_TRUE(SampledTopKOfSum(a, b, k, {}, rng, indices, values, sum).non_finite)
          << where << " k=" << k;
    }
    EXPECT_FALSE(AtLeastOfSum(a, b, 1.0f, indices, values, sum)) << where;
  });
}

// Above the last-level cache the *OfSum selections write the sum past the caches (stream_store.h),
// the entries before its first 64-byte line taking the scalar loop. Forced at small sizes and at
// every float offset of `sum` within a line, they select and leave behind the same as above, and
// still refuse a non-finite value.
TEST(SelectionTest, OfSumStreamedPastTheCachesAtEveryAlignment) {
  const internal::ScopedStreamThresholdForTesting stream_everything(1);
  const uint64_t seed = 17;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  for (size_t n : {size_t{1}, size_t{15}, size_t{17}, size_t{1000}, size_t{40000}}) {
    const std::vector<float> residual = MakeVector(Distribution::kNormal, n, seed + n);
    const std::vector<float> input = MakeVector(Distribution::kHeavyTailed, n, seed + 3 * n + 1);
    std::vector<float> want_sum(n);
    for (size_t i = 0; i < n; ++i) want_sum[i] = residual[i] + input[i];
    std::vector<float> storage(n + 32);
    const auto base = reinterpret_cast<uintptr_t>(storage.data());
    const size_t aligned = ((64 - (base & 63)) & 63) / sizeof(float);
    for (size_t offset = 0; offset < 16; ++offset) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " offset " << offset);
      const std::span<float> sum(storage.data() + aligned + offset, n);
      auto written = [&] { return std::vector<float>(sum.begin(), sum.end()); };
      std::vector<uint32_t> indices;
      std::vector<float> values;
      const size_t k = std::max<size_t>(1, n / 100);
      std::fill(sum.begin(), sum.end(), -7.0f);
      ASSERT_TRUE(TopKOfSum(residual, input, k, indices, values, sum));
      ASSERT_EQ(Checked(want_sum, indices, values), TopKOf(want_sum, k));
      ASSERT_EQ(written(), want_sum);

      std::mt19937_64 rng_of_sum(seed + k), rng_plain(seed + k);
      std::vector<uint32_t> plain_indices;
      std::vector<float> plain_values;
      std::fill(sum.begin(), sum.end(), -7.0f);
      ASSERT_FALSE(
          SampledTopKOfSum(residual, input, k, {}, rng_of_sum, indices, values, sum).non_finite);
      (void)SampledTopK(want_sum, k, {}, rng_plain, plain_indices, plain_values);
      EXPECT_EQ(indices, plain_indices);
      EXPECT_EQ(values, plain_values);
      ASSERT_EQ(written(), want_sum);

      std::fill(sum.begin(), sum.end(), -7.0f);
      ASSERT_TRUE(AtLeastOfSum(residual, input, 1.0f, indices, values, sum));
      EXPECT_EQ(Checked(want_sum, indices, values), AtLeastOf(want_sum, 1.0f));
      ASSERT_EQ(written(), want_sum);
    }
  }
  std::vector<uint32_t> indices;
  std::vector<float> values;
  ForEachPoisonedPair(3e38f, [&](const std::vector<float>& a, const std::vector<float>& b,
                                 const std::string& where) {
    std::vector<float> sum(a.size());
    const size_t k = std::max<size_t>(1, a.size() / 100);
    EXPECT_FALSE(TopKOfSum(a, b, k, indices, values, sum)) << where;
    EXPECT_FALSE(AtLeastOfSum(a, b, 1.0f, indices, values, sum)) << where;
  });
}

TEST(SelectionTest, TopKHandlesSignedZerosSubnormalsAndHugeValues) {
  std::vector<float> v = {-0.0f, 0.0f, 1e-45f, -1e-40f, 3e38f, -3e38f, 1.0f, -0.0f};
  EXPECT_EQ(TopKOf(v, 3), (std::vector<uint32_t>{4, 5, 6}));
  EXPECT_EQ(TopKOf(v, 8), (std::vector<uint32_t>{2, 3, 4, 5, 6}));  // zeros never selected
}

TEST(SelectionTest, ThresholdSelectsEveryMagnitudeAtOrAboveTau) {
  for (Distribution d : kAllDistributions) {
    const std::vector<float> v = MakeVector(d, 5001, 5);
    for (float tau : {1e-6f, 0.125f, 0.25f, 1.0f, 3.0f}) {
      const std::vector<uint32_t> got = AtLeastOf(v, tau);
      std::vector<uint32_t> want;
      for (uint32_t i = 0; i < v.size(); ++i) {
        if (std::fabs(v[i]) >= tau) want.push_back(i);
      }
      ASSERT_EQ(got, want) << DistributionName(d) << " tau " << tau;
    }
  }
}

TEST(SelectionTest, SampledTopKLandsInItsBandOnEveryDistribution) {
  // Band: between min(ceil(0.8 k), nz) and min(k, nz) entries, and every selected magnitude is
  // at least every unselected one's (it is a threshold selection).
  std::mt19937_64 rng(21);
  std::printf("seed 21\n");
  SampledTopKOptions options;
  std::vector<uint32_t> got;
  for (Distribution d : kAllDistributions) {
    for (size_t n : {size_t{100000}, size_t{1000003}}) {
      const std::vector<float> v = MakeVector(d, n, n);
      const size_t nz =
          static_cast<size_t>(std::count_if(v.begin(), v.end(), [](float x) { return x != 0; }));
      for (double ratio : {0.01, 0.001}) {
        const auto k = static_cast<size_t>(std::ceil(ratio * static_cast<double>(n)));
        SampledTopKStats stats;
        got = SampledOf(v, k, options, rng, &stats);
        const size_t low = std::min<size_t>(static_cast<size_t>(std::ceil(0.8 * k)), nz);
        const size_t high = std::min(k, nz);
        EXPECT_GE(got.size(), low) << DistributionName(d) << " n=" << n << " ratio " << ratio;
        EXPECT_LE(got.size(), high) << DistributionName(d) << " n=" << n << " ratio " << ratio;
        ASSERT_TRUE(std::is_sorted(got.begin(), got.end()));
        std::vector<bool> chosen(n, false);
        float smallest_chosen = INFINITY;
        for (uint32_t i : got) {
          chosen[i] = true;
          smallest_chosen = std::min(smallest_chosen, std::fabs(v[i]));
        }
        float largest_left = 0;
        for (size_t i = 0; i < n; ++i) {
          if (!chosen[i]) largest_left = std::max(largest_left, std::fabs(v[i]));
        }
        if (!got.empty()) {
          EXPECT_GE(smallest_chosen, largest_left) << DistributionName(d);
        }
        std::printf(
            "%-12s n=%-8zu ratio=%-6g k=%-6zu sent=%-6zu first=%-7zu adapt=%d trim=%d "
            "fallback=%d\n",
            std::string(DistributionName(d)).c_str(), n, ratio, k, got.size(), stats.first_count,
            stats.adaptations, stats.exact_candidates, stats.exact_fallback);
      }
    }
  }
}

TEST(SelectionTest, SampledTopKOverlapsExactTopKOnGaussianData) {
  std::mt19937_64 rng(3);
  const std::vector<float> v = MakeVector(Distribution::kNormal, 1000000, 3);
  const std::vector<uint32_t> sampled = SampledOf(v, 10000, {}, rng);
  const std::vector<uint32_t> exact = TopKOf(v, 10000);
  std::vector<uint32_t> common;
  std::set_intersection(sampled.begin(), sampled.end(), exact.begin(), exact.end(),
                        std::back_inserter(common));
  EXPECT_GE(static_cast<double>(common.size()), 0.95 * static_cast<double>(exact.size()));
}

TEST(SelectionTest, SampledTopKWithANarrowBandStillReturnsExactlyTheTopK) {
  // lower = 1 and no adaptation: whatever the sampled threshold lets through, the answer must
  // be the exact top-k, by trimming the candidates or by falling back.
  std::vector<float> v(200000, 0.0f);
  std::mt19937_64 fill(9);
  std::uniform_real_distribution<float> unit(0.5f, 1.0f);
  for (float& x : v) x = unit(fill);
  SampledTopKOptions options;
  options.lower = 1.0;  // accept nothing short of k
  options.max_adaptations = 0;
  std::mt19937_64 rng(4);
  SampledTopKStats stats;
  const std::vector<uint32_t> got = SampledOf(v, 10000, options, rng, &stats);
  EXPECT_EQ(got.size(), 10000u);
  EXPECT_TRUE(stats.exact_candidates || stats.exact_fallback);
  EXPECT_EQ(got, TopKOf(v, 10000));
}

TEST(SelectionTest, SampledTopKWithATinyVectorIsExact) {
  std::mt19937_64 rng(1);
  const std::vector<float> v = MakeVector(Distribution::kNormal, 50, 1);
  SampledTopKStats stats;
  EXPECT_EQ(SampledOf(v, 5, {}, rng, &stats), ReferenceTopK(v, 5));
  EXPECT_TRUE(stats.exact_fallback);
}

TEST(SelectionTest, EverySelectionReportsANonFiniteValueWhereverItSits) {
  // The selections double as the finiteness check of the compressors: a NaN or infinity in a
  // skipped block, a walked block or the tail must never pass unnoticed.
  std::mt19937_64 rng(2);
  std::vector<uint32_t> indices;
  std::vector<float> values;
  for (size_t n : {size_t{1}, size_t{17}, size_t{100000}}) {
    for (size_t at : {size_t{0}, n / 2, n - 1}) {
      for (float bad : {NAN, INFINITY, -INFINITY}) {
        std::vector<float> v = MakeVector(Distribution::kNormal, n, n);
        v[at] = bad;
        EXPECT_FALSE(TopK(v, std::max<size_t>(1, n / 100), indices, values)) << n << " " << at;
        EXPECT_FALSE(AtLeast(v, 100.0f, indices, values)) << n << " " << at;
        EXPECT_TRUE(
            SampledTopK(v, std::max<size_t>(1, n / 100), {}, rng, indices, values).non_finite)
            << n << " " << at;
      }
    }
  }
}

}  // namespace
}  // namespace murmur::coding
