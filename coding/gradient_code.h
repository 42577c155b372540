#pragma once
// Gradient codes (Tandon, Lei, Dimakis, Karampatziakis, ICML 2017; docs/algorithms.md §1): n workers,
// n data partitions; worker i computes the partial gradients g_j of the partitions in its
// support and sends m_i = sum_j B[i, j] g_j. From the messages of any n - s workers F the
// aggregator recovers g_1 + ... + g_n as sum_{i in F} a_i m_i, where a^T B_F = 1^T.
//
// Schemes:
//   fractional repetition (§1.2, needs (s + 1) | n): groups of s + 1 consecutive workers share
//     the same s + 1 partitions, each sends their plain sum; B is block-diagonal ones, perfectly
//     conditioned, and decodable as soon as every group has one reply.
//   cyclic repetition (§1.3, any n and s < n): worker i holds partitions i, i+1, ..., i+s (mod
//     n); B's rows span null(H) for a random s x n matrix H with H 1 = 0. H is drawn from a
//     portable generator (splitmix64 + Box-Muller), so every node derives the same B from
//     (n, s, seed); of `candidates` draws (fewer for large n: candidates × responder sets × n³
//     stays under 3e8 unless one candidate exceeds it, under a second here) the one with the
//     smallest worst-case cond(B_F) is kept, and a code whose worst case exceeds
//     `max_condition` is refused (§1.4: float32 messages lose about cond * 6e-8 of relative
//     accuracy).
// GradientCode::Create prefers fractional repetition whenever it applies.
//
// Decoding solves B_F^T a = 1 by least squares in double (column-pivoted QR), checks the
// residual, and caches a per responder set. Responder sets are bitmasks, so n <= 64.
// Thread safety: const methods may be called concurrently (the cache has its own lock).

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace murmur::coding {

enum class CodeScheme { kFractionalRepetition, kCyclicRepetition };
const char* CodeSchemeName(CodeScheme scheme);

inline constexpr int kMaxCodeWorkers = 64;

struct GradientCodeOptions {
  int n = 1;                   // workers (= partitions)
  int s = 0;                   // stragglers tolerated, 0 <= s < n
  uint64_t seed = 1;           // cyclic: the draw of H
  int candidates = 32;         // cyclic: draws of H to choose from
  double max_condition = 1e4;  // cyclic: refuse a code whose worst cond(B_F) is above this
  bool allow_fractional = true;
};

class GradientCode {
 public:
  // kInvalidArgument for n outside [1, 64] or s outside [0, n); kFailedPrecondition when no
  // cyclic candidate is conditioned well enough (the message says how bad and what to change).
  static StatusOr<GradientCode> Create(const GradientCodeOptions& options);

  int n() const { return n_; }
  int s() const { return s_; }
  CodeScheme scheme() const { return scheme_; }
  // B[worker, partition].
  double Coefficient(int worker, int partition) const {
    return b_[static_cast<size_t>(worker) * static_cast<size_t>(n_) + static_cast<size_t>(partition)];
  }
  // The partitions worker i holds (non-zero coefficients), in the order i, i+1, ... (cyclic) or
  // its group's partitions (fractional).
  const std::vector<int>& Support(int worker) const { return support_[static_cast<size_t>(worker)]; }
  // cyclic: the largest cond(B_F) over the responder sets checked at creation (all of them
  // when C(n, s) <= 20000, else 20000 random ones); fractional: 1.
  double worst_condition() const { return worst_condition_; }
  // The s x n matrix H of the cyclic scheme (row-major; empty for fractional repetition).
  const std::vector<double>& parity() const { return h_; }

  // Whether the workers in `responders` (bit i = worker i) carry enough to decode: fractional,
  // one per group; cyclic, at least n - s of them.
  bool Decodable(uint64_t responders) const;
  // Coefficients a (length n, zero outside `responders`) with sum_i a_i B[i, :] = 1.
  // kFailedPrecondition when the set cannot be decoded (too few workers, or a residual above
  // 1e-8: never a silently wrong gradient).
  StatusOr<std::vector<double>> Decode(uint64_t responders) const;

  // "cyclic repetition n=5 s=2 (worst cond 12.3)".
  std::string ToString() const;

 private:
  // Fractional repetition (docs/algorithms.md §1.2): groups of s + 1 workers share their partitions.
  void BuildFractionalRepetition();
  // Cyclic repetition (§1.3): of the random candidates, the best conditioned over `sets` (§1.4).
  void SearchCyclicRepetition(const GradientCodeOptions& options,
                              const std::vector<uint64_t>& sets);
  GradientCode() = default;
  StatusOr<std::vector<double>> Solve(uint64_t responders) const;

  int n_ = 1;
  int s_ = 0;
  CodeScheme scheme_ = CodeScheme::kFractionalRepetition;
  std::vector<double> b_;  // n x n row-major
  std::vector<double> h_;  // s x n row-major (cyclic)
  std::vector<std::vector<int>> support_;
  double worst_condition_ = 1;
  struct Cache {
    std::mutex mu;
    std::map<uint64_t, std::vector<double>> coefficients;
  };
  std::shared_ptr<Cache> cache_ = std::make_shared<Cache>();
};

// cond_2 of the rows of B picked by `rows` (ratio of extreme singular values; infinity when
// rank deficient). Exposed for tests and `murmur plan`.
double RowConditionNumber(const GradientCode& code, uint64_t rows);

}  // namespace murmur::coding
