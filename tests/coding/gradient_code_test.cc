#include "coding/gradient_code.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

#include "coding/coded_tree.h"

namespace murmur::coding {
namespace {

GradientCode Make(int n, int s, bool fractional = true, uint64_t seed = 1) {
  auto code = GradientCode::Create({.n = n, .s = s, .seed = seed, .allow_fractional = fractional});
  EXPECT_TRUE(code.ok()) << code.status();
  return *std::move(code);
}

// Every responder set with exactly n - s workers.
std::vector<uint64_t> AllSets(int n, int s) {
  std::vector<uint64_t> sets;
  for (uint64_t m = 0; m < (uint64_t{1} << n); ++m) {
    if (std::popcount(m) == n - s) sets.push_back(m);
  }
  return sets;
}

// Decodes random float64 partial gradients through the code; returns the relative error.
double DecodeError(const GradientCode& code, uint64_t responders, uint64_t seed) {
  const int n = code.n();
  const size_t d = 1000;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<std::vector<double>> g(static_cast<size_t>(n), std::vector<double>(d));
  std::vector<double> truth(d, 0.0);
  for (auto& v : g) {
    for (size_t i = 0; i < d; ++i) {
      v[i] = normal(rng);
    }
  }
  for (const auto& v : g) {
    for (size_t i = 0; i < d; ++i) truth[i] += v[i];
  }
  auto a = code.Decode(responders);
  EXPECT_TRUE(a.ok()) << a.status();
  if (!a.ok()) return 1;
  std::vector<double> decoded(d, 0.0);
  for (int w = 0; w < n; ++w) {
    if ((*a)[static_cast<size_t>(w)] == 0) continue;
    EXPECT_TRUE(responders >> w & 1) << "coefficient for a worker that did not answer";
    for (int j : code.Support(w)) {
      for (size_t i = 0; i < d; ++i) {
        decoded[i] += (*a)[static_cast<size_t>(w)] * code.Coefficient(w, j) * g[static_cast<size_t>(j)][i];
      }
    }
  }
  double err = 0;
  double norm = 0;
  for (size_t i = 0; i < d; ++i) {
    err += (decoded[i] - truth[i]) * (decoded[i] - truth[i]);
    norm += truth[i] * truth[i];
  }
  return std::sqrt(err / norm);
}

TEST(GradientCodeTest, SpanPropertyForEveryResponderSet) {
  // docs/algorithms.md §1.6 tests 1 and 3 over both schemes.
  for (auto [n, s] : {std::pair{3, 1}, {4, 1}, {5, 2}, {6, 2}, {7, 3}, {8, 3}, {12, 2}, {6, 0}}) {
    for (bool fractional : {true, false}) {
      const GradientCode code = Make(n, s, fractional);
      SCOPED_TRACE(code.ToString());
      for (int i = 0; i < n; ++i) {
        ASSERT_EQ(code.Support(i).size(), static_cast<size_t>(s + 1));
        int nonzero = 0;
        for (int j = 0; j < n; ++j) nonzero += code.Coefficient(i, j) != 0;
        EXPECT_EQ(nonzero, s + 1);
      }
      for (int j = 0; j < n; ++j) {
        int holders = 0;
        for (int i = 0; i < n; ++i) holders += code.Coefficient(i, j) != 0;
        EXPECT_EQ(holders, s + 1) << "partition " << j;
      }
      if (code.scheme() == CodeScheme::kCyclicRepetition) {
        for (int i = 0; i < n; ++i) {
          EXPECT_EQ(code.Coefficient(i, i), 1.0);
          for (int t = 0; t <= s; ++t) EXPECT_EQ(code.Support(i)[static_cast<size_t>(t)], (i + t) % n);
        }
      }
      for (uint64_t f : AllSets(n, s)) {
        ASSERT_TRUE(code.Decodable(f));
        EXPECT_LT(DecodeError(code, f, f * 7 + 1), 1e-9) << "responders " << f;
      }
    }
  }
}

TEST(GradientCodeTest, CyclicRowsLieInTheNullSpaceOfH) {
  // §1.6 test 4.
  for (auto [n, s] : {std::pair{5, 2}, {7, 3}, {10, 4}}) {
    const GradientCode code = Make(n, s, false);
    const auto& h = code.parity();
    ASSERT_EQ(h.size(), static_cast<size_t>(s * n));
    for (int r = 0; r < s; ++r) {
      double row = 0;
      for (int j = 0; j < n; ++j) row += h[static_cast<size_t>(r * n + j)];
      EXPECT_NEAR(row, 0, 1e-10);
      for (int i = 0; i < n; ++i) {
        double dot = 0;
        for (int j = 0; j < n; ++j) dot += h[static_cast<size_t>(r * n + j)] * code.Coefficient(i, j);
        EXPECT_NEAR(dot, 0, 1e-10);
      }
    }
  }
}

TEST(GradientCodeTest, FractionalRepetitionIsPreferredAndDecodesEarly) {
  const GradientCode code = Make(6, 2);
  EXPECT_EQ(code.scheme(), CodeScheme::kFractionalRepetition);
  EXPECT_EQ(code.worst_condition(), 1);
  // One reply per group of three is enough, even though only 2 of 6 answered.
  EXPECT_TRUE(code.Decodable(0b001001));
  EXPECT_FALSE(code.Decodable(0b000111));  // the second group is silent
  auto a = code.Decode(0b100010);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, (std::vector<double>{0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(Make(7, 1).scheme(), CodeScheme::kCyclicRepetition);  // 2 does not divide 7
}

TEST(GradientCodeTest, TooManyStragglersIsNotDecodableNeverWrong) {
  // §1.6 test 9: with s + 1 stragglers the decoder refuses.
  for (auto [n, s] : {std::pair{5, 1}, {6, 2}, {4, 1}}) {
    const GradientCode code = Make(n, s, false);
    int refused = 0;
    for (uint64_t f : AllSets(n, s + 1)) {
      auto a = code.Decode(f);
      if (!a.ok()) {
        ++refused;
        EXPECT_NE(a.status().message().find("not decodable"), std::string::npos);
      } else {
        EXPECT_LT(DecodeError(code, f, 3), 1e-9);  // when it answers, it is right
      }
    }
    EXPECT_GT(refused, 0) << code.ToString();
  }
}

TEST(GradientCodeTest, SameSeedSameMatrixBitForBit) {
  // §1.6 test 6 (in one process; the generator is splitmix64 + Box-Muller, no std::normal).
  const GradientCode a = Make(9, 4, false, 42);
  const GradientCode b = Make(9, 4, false, 42);
  const GradientCode c = Make(9, 4, false, 43);
  bool differs = false;
  for (int i = 0; i < 9; ++i) {
    for (int j = 0; j < 9; ++j) {
      EXPECT_EQ(std::bit_cast<uint64_t>(a.Coefficient(i, j)), std::bit_cast<uint64_t>(b.Coefficient(i, j)));
      differs |= a.Coefficient(i, j) != c.Coefficient(i, j);
    }
  }
  EXPECT_TRUE(differs);
}

TEST(GradientCodeTest, BadShapesAndIllConditionedCodesAreRefusedWithAReason) {
  auto bad_s = GradientCode::Create({.n = 3, .s = 3});
  ASSERT_FALSE(bad_s.ok());
  EXPECT_NE(bad_s.status().message().find("s = 3"), std::string::npos);
  EXPECT_FALSE(GradientCode::Create({.n = 0, .s = 0}).ok());
  EXPECT_FALSE(GradientCode::Create({.n = 65, .s = 1}).ok());
  // An impossible conditioning limit: the cyclic code is refused and the message says why.
  auto strict = GradientCode::Create({.n = 7, .s = 2, .max_condition = 1.0001});
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(strict.status().message().find("ill-conditioned"), std::string::npos);
  EXPECT_NE(strict.status().message().find("divisible by s + 1"), std::string::npos);
}

TEST(GradientCodeTest, CyclicCodesUpToSixWorkersAreWellConditioned) {
  // What the tree tests rely on: float32 messages decode to 1e-4 when cond stays small.
  for (int n = 1; n <= 6; ++n) {
    for (int s = 0; s < n; ++s) {
      const GradientCode code = Make(n, s, false);
      EXPECT_LT(code.worst_condition(), 200) << code.ToString();
      for (uint64_t f : AllSets(n, s)) {
        EXPECT_LE(RowConditionNumber(code, f), code.worst_condition() * (1 + 1e-9));
      }
    }
  }
}

TEST(GradientCodeTest, LargeCodeSampledSets) {
  // §1.6 test 2: n = 64, s = 4 (cyclic: 5 does not divide 64), checked on sampled sets. Its
  // worst cond(B_F) is ~4e5, too much for float32 messages (the default limit refuses it), fine
  // for a float64 decode.
  EXPECT_FALSE(GradientCode::Create({.n = 64, .s = 4, .candidates = 4}).ok());
  auto made = GradientCode::Create({.n = 64, .s = 4, .candidates = 4, .max_condition = 1e8});
  ASSERT_TRUE(made.ok()) << made.status();
  const GradientCode& code = *made;
  EXPECT_EQ(code.scheme(), CodeScheme::kCyclicRepetition);
  std::mt19937_64 rng(11);
  std::printf("seed 11, %s\n", code.ToString().c_str());
  for (int trial = 0; trial < 200; ++trial) {
    uint64_t f = ~uint64_t{0};
    while (std::popcount(f) > 60) f &= ~(uint64_t{1} << (rng() % 64));
    EXPECT_LT(DecodeError(code, f, static_cast<uint64_t>(trial)), 1e-5);
  }
}

}  // namespace
}  // namespace murmur::coding
