#include "coding/coded_tree.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

namespace murmur::coding {
namespace {

TEST(TreeLayoutTest, RanksParentsAndChildren) {
  // docs/algorithms.md §2.8 test 1.
  for (auto [n, layers, workers] : {std::tuple{3, 2, 12}, {4, 3, 84}, {12, 2, 156}, {1, 3, 3}}) {
    auto layout = TreeLayout::Create(n, layers);
    ASSERT_TRUE(layout.ok());
    EXPECT_EQ(layout->workers(), workers);
    int64_t leaves = 0;
    for (int64_t r = 0; r < layout->size(); ++r) {
      if (layout->IsLeaf(r)) {
        ++leaves;
        EXPECT_EQ(layout->Layer(r), layers);
        continue;
      }
      for (int k = 0; k < n; ++k) {
        const int64_t child = layout->FirstChild(r) + k;
        ASSERT_LT(child, layout->size());
        EXPECT_EQ(layout->Parent(child), r);
        EXPECT_EQ(layout->ChildIndex(child), k);
        EXPECT_EQ(layout->Layer(child), layout->Layer(r) + 1);
      }
    }
    EXPECT_EQ(leaves, static_cast<int64_t>(std::pow(n, layers)));
  }
  EXPECT_FALSE(TreeLayout::Create(0, 2).ok());
  EXPECT_FALSE(TreeLayout::Create(3, 0).ok());
  EXPECT_FALSE(TreeLayout::Create(64, 4).ok());  // beyond kMaxTreeNodes
}

TEST(TreeAllocationTest, LoadFormulaWhenSizesDivide) {
  // §2.8 test 2: every worker computes exactly c = m / sum_l (n/(s+1))^l samples.
  for (auto [n, layers, s, c, m] :
       {std::tuple{3, 2, 1, 4, 15}, {4, 3, 1, 8, 112}, {12, 2, 2, 9, 180}, {3, 2, 0, 2, 24},
        {4, 1, 1, 2, 4}}) {
    auto layout = *TreeLayout::Create(n, layers);
    auto code = *GradientCode::Create({.n = n, .s = s});
    auto alloc = AllocateTree(layout, code, m);
    ASSERT_TRUE(alloc.ok());
    EXPECT_DOUBLE_EQ(CodedLoad(n, layers, s, m), c);
    EXPECT_TRUE(alloc->own[0].empty());
    for (int64_t r = 1; r < layout.size(); ++r) {
      EXPECT_EQ(static_cast<int64_t>(alloc->own[static_cast<size_t>(r)].size()), c)
          << "n=" << n << " L=" << layers << " s=" << s << " rank " << r;
    }
  }
}

// The master's result, in closed form, when each parent decodes the children in `answered`:
// the effective weight of every sample (§2.8 test 4).
std::vector<double> EffectiveWeights(const TreeLayout& layout, const GradientCode& code,
                                     const TreeAllocation& alloc,
                                     const std::vector<uint64_t>& answered) {
  const auto m = static_cast<size_t>(alloc.samples);
  std::vector<std::vector<double>> delivered(static_cast<size_t>(layout.size()), std::vector<double>(m, 0.0));
  for (int64_t r = layout.size() - 1; r >= 0; --r) {
    auto& out = delivered[static_cast<size_t>(r)];
    for (const auto& p : alloc.own[static_cast<size_t>(r)]) out[static_cast<size_t>(p.sample)] += p.weight;
    if (layout.IsLeaf(r)) continue;
    auto a = code.Decode(answered[static_cast<size_t>(r)]);
    EXPECT_TRUE(a.ok());
    for (int k = 0; k < layout.n(); ++k) {
      const auto& child = delivered[static_cast<size_t>(layout.FirstChild(r) + k)];
      for (size_t i = 0; i < m; ++i) out[i] += (*a)[static_cast<size_t>(k)] * child[i];
    }
  }
  return delivered[0];
}

TEST(TreeAllocationTest, EverySampleCountsOnceForRandomStragglerSets) {
  std::mt19937_64 rng(5);
  std::printf("seed 5\n");
  for (auto [n, layers, s] : {std::tuple{3, 2, 1}, {4, 3, 1}, {5, 2, 2}, {6, 2, 3}, {2, 3, 1}}) {
    auto layout = *TreeLayout::Create(n, layers);
    auto code = *GradientCode::Create({.n = n, .s = s});
    for (int64_t m : {int64_t{0}, int64_t{1}, int64_t{37}, int64_t{500}}) {
      auto alloc = *AllocateTree(layout, code, m);
      for (int trial = 0; trial < 50; ++trial) {
        std::vector<uint64_t> answered(static_cast<size_t>(layout.size()), 0);
        for (auto& f : answered) {
          f = (uint64_t{1} << n) - 1;
          while (std::popcount(f) > n - s) f &= ~(uint64_t{1} << (rng() % static_cast<uint64_t>(n)));
        }
        const std::vector<double> w = EffectiveWeights(layout, code, alloc, answered);
        for (size_t i = 0; i < w.size(); ++i) {
          ASSERT_NEAR(w[i], 1.0, 1e-9) << code.ToString() << " L=" << layers << " m=" << m
                                       << " sample " << i;
        }
      }
    }
  }
}

TEST(TreeAllocationTest, PartsFollowTheCodeSupport) {
  auto layout = *TreeLayout::Create(3, 2);
  auto code = *GradientCode::Create({.n = 3, .s = 1});
  auto alloc = *AllocateTree(layout, code, 15);
  // Rank 1 is the root's child 0: it holds parts 0 and 1 of the root's 15 samples.
  ASSERT_EQ(alloc.held[1].size(), 2u);
  EXPECT_EQ(alloc.held[1][0].part, 0);
  EXPECT_EQ(alloc.held[1][1].part, 1);
  EXPECT_EQ(alloc.held[1][0].samples, 5);
  EXPECT_EQ(alloc.subtree[1], 10);
  EXPECT_EQ(alloc.subtree[0], 15);
  EXPECT_EQ(alloc.MaxLoad(), 4);
  EXPECT_DOUBLE_EQ(alloc.UncodedLoad(), 15.0 / 12);
}

}  // namespace
}  // namespace murmur::coding
