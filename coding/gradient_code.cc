#include "coding/gradient_code.h"

#include <Eigen/Dense>
#include <algorithm>
#include <bit>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <numbers>

#include "base/check.h"

namespace murmur::coding {
namespace {

using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Portable draws (the platform's std::normal_distribution differs between standard libraries,
// and every node must derive the same B): splitmix64, then Box-Muller.
class PortableNormal {
 public:
  explicit PortableNormal(uint64_t seed) : state_(seed) {}
  double Uniform() { return static_cast<double>(Bits() >> 11) * 0x1.0p-53; }  // [0, 1)
  double Next() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    // u1 in (0, 1], u2 in [0, 1): 53-bit mantissas.
    const double u1 = static_cast<double>((Bits() >> 11) + 1) * 0x1.0p-53;
    const double u2 = Uniform();
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(2.0 * std::numbers::pi * u2);
    has_spare_ = true;
    return r * std::cos(2.0 * std::numbers::pi * u2);
  }

 private:
  uint64_t Bits() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t state_;
  bool has_spare_ = false;
  double spare_ = 0;
};

uint64_t AllWorkers(int n) { return n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1; }

double Binomial(int n, int k) {
  double c = 1;
  for (int i = 1; i <= k; ++i) c = c * (n - k + i) / i;
  return c;
}

// The responder sets of size n - s to check a cyclic candidate on: all of them when there are
// at most kExhaustiveSets, else a fixed random sample (the same for every candidate).
constexpr double kExhaustiveSets = 5000;
constexpr int kSampledSets = 500;
// Responder-set checks, each an eigenvalue problem of size n - s, over all candidates: n = 20,
// s = 3 (1,140 sets) still draws all 32; n = 54 with 500 sampled sets draws 3.
constexpr double kCandidateWork = 3e8;

std::vector<uint64_t> ResponderSetsToCheck(int n, int s, uint64_t seed) {
  std::vector<uint64_t> sets;
  if (Binomial(n, s) <= kExhaustiveSets) {
    // Every choice of the s stragglers, by Gosper's hack over s-bit masks.
    if (s == 0) return {AllWorkers(n)};
    uint64_t stragglers = (uint64_t{1} << s) - 1;
    while (n == 64 || (stragglers >> n) == 0) {
      sets.push_back(AllWorkers(n) & ~stragglers);
      const uint64_t c = stragglers & (~stragglers + 1);
      const uint64_t r = stragglers + c;
      if (r == 0) break;
      stragglers = (((r ^ stragglers) >> 2) / c) | r;
    }
    return sets;
  }
  PortableNormal draw(seed ^ 0x5eedULL);
  std::vector<int> order(static_cast<size_t>(n));
  for (int k = 0; k < kSampledSets; ++k) {
    for (int i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
    uint64_t mask = AllWorkers(n);
    for (int j = 0; j < s; ++j) {  // partial Fisher-Yates with portable draws
      const double u = draw.Uniform();
      const int pick = j + std::min(n - j - 1, static_cast<int>(u * (n - j)));
      std::swap(order[static_cast<size_t>(j)], order[static_cast<size_t>(pick)]);
      mask &= ~(uint64_t{1} << order[static_cast<size_t>(j)]);
    }
    sets.push_back(mask);
  }
  return sets;
}

Matrix RowsOf(const std::vector<double>& b, int n, uint64_t rows) {
  Matrix m(std::popcount(rows), n);
  int r = 0;
  for (int i = 0; i < n; ++i) {
    if (!(rows >> i & 1)) continue;
    for (int j = 0; j < n; ++j) m(r, j) = b[static_cast<size_t>(i * n + j)];
    ++r;
  }
  return m;
}

// cond(M) = sqrt(λmax / λmin) of the Gram matrix M Mᵀ (rows ≤ columns here): the eigenvalues of
// a symmetric matrix cost a fraction of an SVD (n = 64, s = 2 checks 2,016 sets for each of 32
// candidates), and squaring a condition of up to max_condition = 1e4 loses nothing in double.
double Condition(const Matrix& m) {
  if (m.rows() == 0) return 1;
  const Matrix gram = m * m.transpose();
  const Eigen::VectorXd ev = Eigen::SelfAdjointEigenSolver<Matrix>(gram, Eigen::EigenvaluesOnly).eigenvalues();
  const double smallest = ev(0), largest = ev(ev.size() - 1);  // ascending
  if (!(smallest > 1e-300 * std::max(largest, 1.0))) return std::numeric_limits<double>::infinity();
  return std::sqrt(largest / smallest);
}

// One cyclic candidate from H (s x n, H 1 = 0): B[i, i] = 1 and B[i, T_i] = y with
// H[:, T_i] y = -H[:, i], T_i = {i+1, ..., i+s} mod n (§1.3 step 2).
std::vector<double> CyclicRows(const std::vector<double>& h, int n, int s) {
  std::vector<double> b(static_cast<size_t>(n * n), 0.0);
  for (int i = 0; i < n; ++i) {
    b[static_cast<size_t>(i * n + i)] = 1;
    if (s == 0) continue;
    Matrix a(s, s);
    Eigen::VectorXd rhs(s);
    for (int r = 0; r < s; ++r) {
      rhs(r) = -h[static_cast<size_t>(r * n + i)];
      for (int t = 0; t < s; ++t) a(r, t) = h[static_cast<size_t>(r * n + (i + 1 + t) % n)];
    }
    const Eigen::VectorXd y = a.colPivHouseholderQr().solve(rhs);
    for (int t = 0; t < s; ++t) b[static_cast<size_t>(i * n + (i + 1 + t) % n)] = y(t);
  }
  return b;
}

}  // namespace

const char* CodeSchemeName(CodeScheme scheme) {
  return scheme == CodeScheme::kFractionalRepetition ? "fractional repetition"
                                                     : "cyclic repetition";
}

namespace {

Status CheckCodeOptions(const GradientCodeOptions& options) {
  const int n = options.n;
  const int s = options.s;
  if (n < 1 || n > kMaxCodeWorkers) {
    return InvalidArgumentError(fmt::format("gradient code: n = {} workers, must be 1 to {}", n,
                                            kMaxCodeWorkers));
  }
  if (s < 0 || s >= n) {
    return InvalidArgumentError(
        fmt::format("gradient code: s = {} stragglers with n = {} workers, must be 0 to {}", s,
                    n, n - 1));
  }
  if (options.candidates < 1) return InvalidArgumentError("gradient code: candidates must be >= 1");
  return OkStatus();
}

// One candidate H of the cyclic code (docs/algorithms.md §1.3): s rows of n Gaussian draws, each row
// summing to zero.
std::vector<double> DrawCyclicH(uint64_t seed, int candidate, int n, int s) {
  PortableNormal draw(seed * 0x100000001b3ULL + static_cast<uint64_t>(candidate));
  std::vector<double> h(static_cast<size_t>(s * n));
  for (int r = 0; r < s; ++r) {
    double sum = 0;
    for (int j = 0; j + 1 < n; ++j) {
      h[static_cast<size_t>(r * n + j)] = draw.Next();
      sum += h[static_cast<size_t>(r * n + j)];
    }
    h[static_cast<size_t>(r * n + n - 1)] = -sum;
  }
  return h;
}

}  // namespace

void GradientCode::BuildFractionalRepetition() {
  scheme_ = CodeScheme::kFractionalRepetition;
  b_.assign(static_cast<size_t>(n_ * n_), 0.0);
  for (int i = 0; i < n_; ++i) {
    const int first = i / (s_ + 1) * (s_ + 1);
    for (int j = first; j <= first + s_; ++j) {
      b_[static_cast<size_t>(i * n_ + j)] = 1;
      support_[static_cast<size_t>(i)].push_back(j);
    }
  }
  worst_condition_ = 1;
}

void GradientCode::SearchCyclicRepetition(const GradientCodeOptions& options,
                                          const std::vector<uint64_t>& sets) {
  scheme_ = CodeScheme::kCyclicRepetition;
  for (int i = 0; i < n_; ++i) {
    for (int t = 0; t <= s_; ++t) support_[static_cast<size_t>(i)].push_back((i + t) % n_);
  }
  double best = std::numeric_limits<double>::infinity();
  const double per_candidate = static_cast<double>(sets.size()) * n_ * n_ * n_;
  const int candidates = static_cast<int>(
      std::clamp(kCandidateWork / per_candidate, 1.0, static_cast<double>(options.candidates)));
  for (int candidate = 0; candidate < candidates; ++candidate) {
    std::vector<double> h = DrawCyclicH(options.seed, candidate, n_, s_);
    std::vector<double> b = CyclicRows(h, n_, s_);
    double worst = 1;
    for (uint64_t f : sets) {
      worst = std::max(worst, Condition(RowsOf(b, n_, f)));
      if (!(worst < best)) break;  // cannot win any more
    }
    if (worst < best) {
      best = worst;
      b_ = std::move(b);
      h_ = std::move(h);
    }
  }
  worst_condition_ = best;
}

StatusOr<GradientCode> GradientCode::Create(const GradientCodeOptions& options) {
  MURMUR_RETURN_IF_ERROR(CheckCodeOptions(options));
  GradientCode code;
  code.n_ = options.n;
  code.s_ = options.s;
  code.support_.resize(static_cast<size_t>(options.n));
  if (options.allow_fractional && options.n % (options.s + 1) == 0) {
    code.BuildFractionalRepetition();
    return code;
  }
  const std::vector<uint64_t> sets = ResponderSetsToCheck(options.n, options.s, options.seed);
  code.SearchCyclicRepetition(options, sets);
  if (!(code.worst_condition_ <= options.max_condition)) {
    return FailedPreconditionError(fmt::format(
        "gradient code: the cyclic code for n = {}, s = {} is ill-conditioned (worst cond(B_F) "
        "{:.3g} over {} responder sets, limit {:.3g}; float32 messages would lose about {:.1g} "
        "relative accuracy): choose n divisible by s + 1 (fractional repetition) or a smaller s",
        options.n, options.s, code.worst_condition_, sets.size(), options.max_condition,
        code.worst_condition_ * 6e-8));
  }
  return code;
}

bool GradientCode::Decodable(uint64_t responders) const {
  responders &= AllWorkers(n_);
  if (scheme_ == CodeScheme::kFractionalRepetition) {
    const uint64_t group = (uint64_t{1} << (s_ + 1)) - 1;
    for (int first = 0; first < n_; first += s_ + 1) {
      if ((responders >> first & group) == 0) return false;
    }
    return true;
  }
  return std::popcount(responders) >= n_ - s_;
}

StatusOr<std::vector<double>> GradientCode::Decode(uint64_t responders) const {
  responders &= AllWorkers(n_);
  if (!Decodable(responders)) {
    return FailedPreconditionError(fmt::format(
        "not decodable: {} of {} workers answered, {} needs {}", std::popcount(responders), n_,
        CodeSchemeName(scheme_),
        scheme_ == CodeScheme::kFractionalRepetition ? "one per group of s + 1"
                                                     : fmt::format("{}", n_ - s_)));
  }
  {
    std::lock_guard<std::mutex> lock(cache_->mu);
    if (auto it = cache_->coefficients.find(responders); it != cache_->coefficients.end()) {
      return it->second;
    }
  }
  MURMUR_ASSIGN_OR_RETURN(std::vector<double> a, Solve(responders));
  std::lock_guard<std::mutex> lock(cache_->mu);
  cache_->coefficients.emplace(responders, a);
  return a;
}

StatusOr<std::vector<double>> GradientCode::Solve(uint64_t responders) const {
  std::vector<double> a(static_cast<size_t>(n_), 0.0);
  if (scheme_ == CodeScheme::kFractionalRepetition) {
    // §1.2 step 3: the first responder of every group, coefficient 1.
    for (int first = 0; first < n_; first += s_ + 1) {
      for (int i = first; i <= first + s_; ++i) {
        if (responders >> i & 1) {
          a[static_cast<size_t>(i)] = 1;
          break;
        }
      }
    }
    return a;
  }
  // §1.4: least squares B_F^T a_F = 1_n, rank-revealing QR in double, then a residual check.
  const Matrix bf = RowsOf(b_, n_, responders);
  const Matrix bft = bf.transpose();
  const Eigen::VectorXd ones = Eigen::VectorXd::Ones(n_);
  const Eigen::VectorXd af = bft.colPivHouseholderQr().solve(ones);
  const double residual = (bft * af - ones).cwiseAbs().maxCoeff();
  if (!(residual <= 1e-8)) {
    return FailedPreconditionError(fmt::format(
        "not decodable: the {} responders leave a residual of {:.3g} (rank deficient B_F)",
        std::popcount(responders), residual));
  }
  int r = 0;
  for (int i = 0; i < n_; ++i) {
    if (responders >> i & 1) a[static_cast<size_t>(i)] = af(r++);
  }
  return a;
}

std::string GradientCode::ToString() const {
  return fmt::format("{} n={} s={} (worst cond {:.3g})", CodeSchemeName(scheme_), n_, s_,
                     worst_condition_);
}

double RowConditionNumber(const GradientCode& code, uint64_t rows) {
  std::vector<double> b(static_cast<size_t>(code.n() * code.n()));
  for (int i = 0; i < code.n(); ++i) {
    for (int j = 0; j < code.n(); ++j) b[static_cast<size_t>(i * code.n() + j)] = code.Coefficient(i, j);
  }
  return Condition(RowsOf(b, code.n(), rows));
}

}  // namespace murmur::coding
