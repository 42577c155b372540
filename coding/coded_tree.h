#pragma once
// CodedReduce tree (Reisizadeh, Prakash, Pedarsani, Avestimehr; docs/algorithms.md §2): the layout of
// a regular tree of workers under a root, and the recursive allocation of data with
// gradient-coding redundancy among siblings.
//
// Layout (§2.1): rank 0 is the root (holds no data); workers are ranks 1..N breadth first, N =
// n + n^2 + ... + n^L; parent(r) = (r - 1) / n, children(r) = n r + 1 .. n r + n. Flat gradient
// coding is the same layout with L = 1 (n = N); plain tree aggregation is s = 0.
//
// Allocation (§2.2): node v is responsible for weighted samples A_v and must deliver
// M_v = sum_{(x, w) in A_v} w grad loss(x). The root's A is every sample with weight 1. A node
// keeps a share of A_v for itself (balanced so every worker computes about the same number of
// samples: c = m / (r + r^2 + ... + r^L), r = n / (s + 1)), splits the rest into n near-equal
// contiguous parts R_0..R_{n-1}, and child k receives the parts of its code support with
// weights multiplied by B[k, j]. A parent that decodes its first n - s children with the
// code's coefficients and adds its own share delivers exactly M_v (the proof is §2.2's). Sizes
// need not divide: uneven parts change the load balance, never correctness.
//
// "Samples" here are positions 0..m-1 of whatever the iteration works on: the whole training set
// (full-batch gradient descent) or the iteration's global mini-batch.

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "coding/gradient_code.h"

namespace murmur::coding {

class TreeLayout {
 public:
  // kInvalidArgument for n < 1, layers < 1, or more than kMaxTreeNodes ranks.
  static StatusOr<TreeLayout> Create(int n, int layers);
  static constexpr int64_t kMaxTreeNodes = int64_t{1} << 20;

  int n() const { return n_; }
  int layers() const { return layers_; }
  int64_t workers() const { return workers_; }  // N
  int64_t size() const { return workers_ + 1; }  // ranks, root included

  // -1 for the root.
  int64_t Parent(int64_t rank) const { return rank == 0 ? -1 : (rank - 1) / n_; }
  int64_t FirstChild(int64_t rank) const { return rank * n_ + 1; }
  bool IsLeaf(int64_t rank) const { return FirstChild(rank) > workers_; }
  // Which child of its parent `rank` is (0..n-1); REQUIRES rank > 0.
  int ChildIndex(int64_t rank) const { return static_cast<int>((rank - 1) % n_); }
  // 0 for the root, 1..L for workers.
  int Layer(int64_t rank) const;

 private:
  TreeLayout(int n, int layers, int64_t workers) : n_(n), layers_(layers), workers_(workers) {}
  int n_;
  int layers_;
  int64_t workers_;
};

struct WeightedSample {
  int64_t sample = 0;
  double weight = 0;
  bool operator==(const WeightedSample&) const = default;
};

// Which parts of its parent's delegated data a node holds (for describing the plan).
struct HeldPart {
  int part = 0;            // index of the parent's part R_j
  int64_t samples = 0;     // |R_j|
  double coefficient = 0;  // B[child index, j]
};

struct TreeAllocation {
  int64_t samples = 0;  // m
  // Per rank: the weighted samples the node computes itself (empty for the root).
  std::vector<std::vector<WeightedSample>> own;
  // Per rank: |A_v|, the pairs its whole subtree is responsible for.
  std::vector<int64_t> subtree;
  // Per rank: the parent's parts it holds (empty for the root).
  std::vector<std::vector<HeldPart>> held;

  // Largest own load over workers, and the load of uncoded data parallelism m / N.
  int64_t MaxLoad() const;
  double UncodedLoad() const;
};

// REQUIRES code.n() == layout.n(). kInvalidArgument for samples < 0.
StatusOr<TreeAllocation> AllocateTree(const TreeLayout& layout, const GradientCode& code,
                                      int64_t samples);

// c = m / (r + r^2 + ... + r^L), r = n / (s + 1) (§2.2 step 4): the balanced load.
double CodedLoad(int n, int layers, int s, int64_t samples);

}  // namespace murmur::coding
