#include "kernels/cpu/cpu_gossip_ops.h"

#include <algorithm>
#include <cstddef>
#include <vector>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#include "base/lane_sum.h"

// GCC 12's avx512fintrin.h fills unused destinations with a self-initialized register
// (`__m512i __Y = __Y`), which -Wmaybe-uninitialized reports wherever those intrinsics inline
// for some targets (-march=skylake-avx512, not znver4; GCC bug 105593, fixed in GCC 13), so a
// -Werror build for such a CPU failed here. As in level_codec.cc.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace murmur::kernels::cpu {

void Subtract(std::span<const float> a, std::span<const float> b, std::span<float> out) {
  for (size_t k = 0; k < a.size(); ++k) out[k] = a[k] - b[k];
}

void AccumulateDifference(double w, std::span<const float> x, std::span<const float> base,
                          std::span<double> acc) {
  for (size_t k = 0; k < x.size(); ++k) acc[k] += w * (static_cast<double>(x[k]) - base[k]);
}

void AccumulateScaled(double w, std::span<const float> x, std::span<double> acc) {
  for (size_t k = 0; k < x.size(); ++k) acc[k] += w * x[k];
}

void ApplyScaled(double gamma, std::span<const double> acc, std::span<float> x,
                 double* squares_out) {
  const double* a = acc.data();
  float* xs = x.data();
  Lanes squares;
  ForEachLane(x.size(), [&](size_t k, size_t l) {
    xs[k] += static_cast<float>(gamma * a[k]);
    squares.v[l] += a[k] * a[k];
  });
  *squares_out = squares.Total();
}

void DivideInto(std::span<const double> acc, double divisor, std::span<float> out) {
  for (size_t k = 0; k < out.size(); ++k) out[k] = static_cast<float>(acc[k] / divisor);
}

void SquaredDistance(std::span<const float> a, std::span<const float> b, double* out) {
  const float* pa = a.data();
  const float* pb = b.data();
  *out = LaneSum(a.size(), [pa, pb](size_t k) {
    const double d = static_cast<double>(pa[k]) - pb[k];
    return d * d;
  });
}

void OuterStep(double lr, double momentum, bool nesterov, std::span<float> anchor,
               std::span<float> velocity, std::span<float> x) {
  const auto l = static_cast<float>(lr);
  const auto mu = static_cast<float>(momentum);
  for (size_t k = 0; k < anchor.size(); ++k) {
    const float d = anchor[k] - x[k];
    const float v = mu * velocity[k] + d;
    velocity[k] = v;
    const float step = nesterov ? d + mu * v : v;
    anchor[k] -= l * step;
    x[k] = anchor[k];
  }
}

namespace {

#if defined(__AVX2__) && defined(__FMA__)
constexpr size_t kMaxVectorCopies = 16;

// The consensus step's definition for entry k, its squares added to `sums`.
inline void ConsensusEntry(float gamma, std::span<const std::span<const float>> copies,
                           const float* w, const float* p, float* xs, size_t k,
                           kernels::ConsensusSquares& sums) {
  float m = 0.0f;
  for (size_t j = 0; j < copies.size(); ++j) m += w[j] * (copies[j][k] - p[k]);
  xs[k] += gamma * m;
  const double md = m;
  const double pv = p[k];
  const double r = static_cast<double>(xs[k]) - pv;
  sums.mix += md * md;
  sums.public_copy += pv * pv;
  sums.residual += r * r;
}

// The vector registers a consensus kernel runs on: V::kWidth floats per step (V::F), each half
// converted to V::kWidth / 2 doubles (V::D) for the squares.
struct Avx2Lanes {
  [[maybe_unused]] static constexpr size_t kWidth = 8;
  using F = __m256;
  using D = __m256d;
  static F Load(const float* p) { return _mm256_loadu_ps(p); }
  static void Store(float* p, F v) { _mm256_storeu_ps(p, v); }
  static F SetF(float x) { return _mm256_set1_ps(x); }
  static F AddF(F a, F b) { return _mm256_add_ps(a, b); }
  static F SubF(F a, F b) { return _mm256_sub_ps(a, b); }
  static F MulF(F a, F b) { return _mm256_mul_ps(a, b); }
  static D Lo(F v) { return _mm256_cvtps_pd(_mm256_castps256_ps128(v)); }
  static D Hi(F v) { return _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)); }
  static D Set(double x) { return _mm256_set1_pd(x); }
  static D Sub(D a, D b) { return _mm256_sub_pd(a, b); }
  static D Fmadd(D a, D b, D c) { return _mm256_fmadd_pd(a, b, c); }
  static double Total(D a, D b) {
    alignas(32) double t[4];
    _mm256_store_pd(t, _mm256_add_pd(a, b));
    return (t[0] + t[1]) + (t[2] + t[3]);
  }
};

#if defined(__AVX512F__)
struct Avx512Lanes {
  static constexpr size_t kWidth = 16;
  using F = __m512;
  using D = __m512d;
  static F Load(const float* p) { return _mm512_loadu_ps(p); }
  static void Store(float* p, F v) { _mm512_storeu_ps(p, v); }
  static F SetF(float x) { return _mm512_set1_ps(x); }
  static F AddF(F a, F b) { return _mm512_add_ps(a, b); }
  static F SubF(F a, F b) { return _mm512_sub_ps(a, b); }
  static F MulF(F a, F b) { return _mm512_mul_ps(a, b); }
  static D Lo(F v) { return _mm512_cvtps_pd(_mm512_castps512_ps256(v)); }
  static D Hi(F v) {
    return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  }
  static D Set(double x) { return _mm512_set1_pd(x); }
  static D Sub(D a, D b) { return _mm512_sub_pd(a, b); }
  static D Fmadd(D a, D b, D c) { return _mm512_fmadd_pd(a, b, c); }
  static double Total(D a, D b) { return _mm512_reduce_add_pd(_mm512_add_pd(a, b)); }
};
#endif

// V::kWidth entries at a time: the step in float (the definition's operations, no FMA), the
// squares of its float terms in double, two accumulators each so that no FMA waits on the last.
// Double arithmetic would spend its time converting every operand.
template <typename V>
kernels::ConsensusSquares ConsensusStepVector(float gamma,
                                              std::span<const std::span<const float>> copies,
                                              const float* weights, const float* p, float* xs,
                                              size_t n) {
  using F = typename V::F;
  using D = typename V::D;
  const size_t m = copies.size();
  const float* c[kMaxVectorCopies];
  F w[kMaxVectorCopies];
  for (size_t j = 0; j < m; ++j) {
    c[j] = copies[j].data();
    w[j] = V::SetF(weights[j]);
  }
  const F g = V::SetF(gamma);
  const F zero_f = V::SetF(0.0f);
  const D zero = V::Set(0.0);
  D mix_lo = zero, mix_hi = zero, pub_lo = zero, pub_hi = zero, res_lo = zero, res_hi = zero;
  size_t k = 0;
  for (; k + V::kWidth <= n; k += V::kWidth) {
    const F pf = V::Load(p + k);
    // 0 + the first term, as the definition's zeroed sum (it turns −0 into +0).
    F a = zero_f;
    for (size_t j = 0; j < m; ++j) {
      // The copies are read here once a round and otherwise only written at an update's
      // entries: fetched non-temporally, 2 KB ahead, so that their megabytes do not push the
      // training step's parameters, gradient and momentum out of the caches: the step alone is
      // slower from DRAM, the training around it faster (bench/results/2026-11-28-history.md).
      if (k + 512 < n) _mm_prefetch(reinterpret_cast<const char*>(c[j] + k + 512), _MM_HINT_NTA);
      a = V::AddF(a, V::MulF(w[j], V::SubF(V::Load(c[j] + k), pf)));
    }
    const F xn = V::AddF(V::Load(xs + k), V::MulF(g, a));
    V::Store(xs + k, xn);
    const D al = V::Lo(a), ah = V::Hi(a), pl = V::Lo(pf), ph = V::Hi(pf);
    mix_lo = V::Fmadd(al, al, mix_lo);
    mix_hi = V::Fmadd(ah, ah, mix_hi);
    pub_lo = V::Fmadd(pl, pl, pub_lo);
    pub_hi = V::Fmadd(ph, ph, pub_hi);
    const D rl = V::Sub(V::Lo(xn), pl);
    const D rh = V::Sub(V::Hi(xn), ph);
    res_lo = V::Fmadd(rl, rl, res_lo);
    res_hi = V::Fmadd(rh, rh, res_hi);
  }
  kernels::ConsensusSquares sums{V::Total(mix_lo, mix_hi), V::Total(pub_lo, pub_hi),
                                 V::Total(res_lo, res_hi)};
  for (; k < n; ++k) ConsensusEntry(gamma, copies, weights, p, xs, k, sums);
  return sums;
}
#endif

kernels::ConsensusSquares ConsensusPass(double gamma,
                                        std::span<const std::span<const float>> copies,
                                        std::span<const double> weights,
                                        std::span<const float> public_copy, std::span<float> x) {
  const auto g = static_cast<float>(gamma);
  const float* p = public_copy.data();
  float* xs = x.data();
#if defined(__AVX2__) && defined(__FMA__)
  if (copies.size() <= kMaxVectorCopies) {
#if defined(__AVX512F__)
    using Registers = Avx512Lanes;
#else
    using Registers = Avx2Lanes;
#endif
    float w[kMaxVectorCopies];
    for (size_t j = 0; j < copies.size(); ++j) w[j] = static_cast<float>(weights[j]);
    return ConsensusStepVector<Registers>(g, copies, w, p, xs, x.size());
  }
#endif
  // Blocks small enough that the block's sum stays in L1: each copy's term is a vectorized pass
  // over the block, and the model is read and written once.
  std::vector<float> w(copies.size());
  for (size_t j = 0; j < copies.size(); ++j) w[j] = static_cast<float>(weights[j]);
  constexpr size_t kBlock = 512;
  float acc[kBlock];
  Lanes mix, pub, residual;
  for (size_t begin = 0; begin < x.size(); begin += kBlock) {
    const size_t n = std::min(kBlock, x.size() - begin);
    for (size_t i = 0; i < n; ++i) acc[i] = 0.0f;
    for (size_t j = 0; j < copies.size(); ++j) {
      const float wj = w[j];
      const float* c = copies[j].data() + begin;
      for (size_t i = 0; i < n; ++i) acc[i] += wj * (c[i] - p[begin + i]);
    }
    for (size_t i = 0; i < n; ++i) xs[begin + i] += g * acc[i];
    // The lanes continue across blocks (kBlock is a multiple of kLaneCount), so the sums are
    // LaneSum's over the whole vector.
    static_assert(kBlock % kLaneCount == 0);
    ForEachLane(n, [&](size_t i, size_t l) {
      const double md = acc[i];
      const double pv = p[begin + i];
      const double r = static_cast<double>(xs[begin + i]) - pv;
      mix.v[l] += md * md;
      pub.v[l] += pv * pv;
      residual.v[l] += r * r;
    });
  }
  return {mix.Total(), pub.Total(), residual.Total()};
}

}  // namespace

void ConsensusStep(double gamma, std::span<const std::span<const float>> copies,
                   std::span<const double> weights, std::span<const float> public_copy,
                   std::span<float> x, std::span<float> /*scratch*/,
                   kernels::ConsensusSquares* squares) {
  *squares = ConsensusPass(gamma, copies, weights, public_copy, x);
}

}  // namespace murmur::kernels::cpu
