#include "coding/coded_tree.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "base/check.h"

namespace murmur::coding {

StatusOr<TreeLayout> TreeLayout::Create(int n, int layers) {
  if (n < 1) return InvalidArgumentError(fmt::format("tree: n = {} children per parent, must be >= 1", n));
  if (layers < 1) return InvalidArgumentError(fmt::format("tree: L = {} layers, must be >= 1", layers));
  int64_t workers = 0;
  int64_t width = 1;
  for (int l = 1; l <= layers; ++l) {
    width *= n;
    workers += width;
    if (workers + 1 > kMaxTreeNodes) {
      return InvalidArgumentError(fmt::format(
          "tree: n = {}, L = {} has more than {} nodes", n, layers, kMaxTreeNodes));
    }
  }
  return TreeLayout(n, layers, workers);
}

int TreeLayout::Layer(int64_t rank) const {
  int layer = 0;
  while (rank > 0) {
    rank = Parent(rank);
    ++layer;
  }
  return layer;
}

int64_t TreeAllocation::MaxLoad() const {
  int64_t load = 0;
  for (const auto& o : own) load = std::max<int64_t>(load, static_cast<int64_t>(o.size()));
  return load;
}

double TreeAllocation::UncodedLoad() const {
  return own.size() <= 1 ? 0.0 : static_cast<double>(samples) / static_cast<double>(own.size() - 1);
}

double CodedLoad(int n, int layers, int s, int64_t samples) {
  const double r = static_cast<double>(n) / (s + 1);
  double sum = 0;
  double power = 1;
  for (int l = 1; l <= layers; ++l) sum += (power *= r);
  return static_cast<double>(samples) / sum;
}

StatusOr<TreeAllocation> AllocateTree(const TreeLayout& layout, const GradientCode& code,
                                      int64_t samples) {
  MURMUR_CHECK_EQ(code.n(), layout.n());
  if (samples < 0) return InvalidArgumentError("tree allocation: negative sample count");
  const int n = layout.n();
  const double r = static_cast<double>(n) / (code.s() + 1);
  // units[l]: the subtree of a layer-l worker holds 1 + r + ... + r^(L-l) "own shares".
  std::vector<double> units(static_cast<size_t>(layout.layers()) + 2, 0.0);
  for (int l = layout.layers(); l >= 1; --l) units[static_cast<size_t>(l)] = 1 + r * units[static_cast<size_t>(l) + 1];

  TreeAllocation alloc;
  alloc.samples = samples;
  const auto size = static_cast<size_t>(layout.size());
  alloc.own.resize(size);
  alloc.subtree.assign(size, 0);
  alloc.held.resize(size);

  std::vector<WeightedSample> root(static_cast<size_t>(samples));
  for (int64_t i = 0; i < samples; ++i) root[static_cast<size_t>(i)] = {i, 1.0};
  // Breadth first, one node's A at a time; `pending[rank]` holds A_rank until it is split.
  std::vector<std::vector<WeightedSample>> pending(size);
  pending[0] = std::move(root);
  for (int64_t v = 0; v < layout.size(); ++v) {
    std::vector<WeightedSample> a = std::move(pending[static_cast<size_t>(v)]);
    alloc.subtree[static_cast<size_t>(v)] = static_cast<int64_t>(a.size());
    if (layout.IsLeaf(v)) {
      alloc.own[static_cast<size_t>(v)] = std::move(a);
      continue;
    }
    const int layer = layout.Layer(v);
    const auto keep = v == 0 ? size_t{0}
                             : std::min(a.size(), static_cast<size_t>(std::llround(
                                                      static_cast<double>(a.size()) /
                                                      units[static_cast<size_t>(layer)])));
    alloc.own[static_cast<size_t>(v)].assign(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(keep));
    // The rest in n near-equal contiguous parts.
    const size_t rest = a.size() - keep;
    std::vector<size_t> begin(static_cast<size_t>(n) + 1);
    for (int j = 0; j <= n; ++j) begin[static_cast<size_t>(j)] = keep + rest * static_cast<size_t>(j) / static_cast<size_t>(n);
    for (int k = 0; k < n; ++k) {
      const int64_t child = layout.FirstChild(v) + k;
      auto& out = pending[static_cast<size_t>(child)];
      for (int j : code.Support(k)) {
        const double coefficient = code.Coefficient(k, j);
        const size_t b = begin[static_cast<size_t>(j)];
        const size_t e = begin[static_cast<size_t>(j) + 1];
        alloc.held[static_cast<size_t>(child)].push_back(
            {j, static_cast<int64_t>(e - b), coefficient});
        for (size_t i = b; i < e; ++i) out.push_back({a[i].sample, a[i].weight * coefficient});
      }
    }
  }
  return alloc;
}

}  // namespace murmur::coding
