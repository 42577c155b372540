#include "kernels/cpu/cpu_gossip_ops.h"

#include <algorithm>
#include <cstddef>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#include "base/lane_sum.h"

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

double ApplyScaled(double gamma, std::span<const double> acc, std::span<float> x) {
  const double* a = acc.data();
  float* xs = x.data();
  Lanes squares;
  ForEachLane(x.size(), [&](size_t k, size_t l) {
    xs[k] += static_cast<float>(gamma * a[k]);
    squares.v[l] += a[k] * a[k];
  });
  return squares.Total();
}

void DivideInto(std::span<const double> acc, double divisor, std::span<float> out) {
  for (size_t k = 0; k < out.size(); ++k) out[k] = static_cast<float>(acc[k] / divisor);
}

double SquaredDistance(std::span<const float> a, std::span<const float> b) {
  const float* pa = a.data();
  const float* pb = b.data();
  return LaneSum(a.size(), [pa, pb](size_t k) {
    const double d = static_cast<double>(pa[k]) - pb[k];
    return d * d;
  });
}

namespace {

#if defined(__AVX2__) && defined(__FMA__)
constexpr size_t kMaxVectorCopies = 16;

// The consensus step's definition (kernels/gossip_ops.h) for entry k, its squares added to `sums`.
inline void ConsensusEntry(double gamma, std::span<const std::span<const float>> copies,
                           std::span<const double> weights, const float* p, float* xs, size_t k,
                           kernels::ConsensusSquares& sums) {
  double acc = 0;
  for (size_t j = 0; j < copies.size(); ++j) {
    acc += weights[j] * (static_cast<double>(copies[j][k]) - p[k]);
  }
  xs[k] += static_cast<float>(gamma * acc);
  const double pv = p[k];
  const double r = static_cast<double>(xs[k]) - pv;
  sums.mix += acc * acc;
  sums.public_copy += pv * pv;
  sums.residual += r * r;
}

// 8 entries at a time, in double as the definition says: the float-to-double conversions set the
// speed (about 0.8 ns per entry with two copies here, against 1.1-1.6 for the auto-vectorized
// blocks this replaced). Each sum keeps two accumulators, so no FMA waits on the last. Unused
// where AVX-512 is (the kernel below).
[[maybe_unused]] kernels::ConsensusSquares ConsensusStepAvx2(
    double gamma, std::span<const std::span<const float>> copies, std::span<const double> weights,
    const float* p, float* xs, size_t n) {
  const size_t m = copies.size();
  const float* c[kMaxVectorCopies];
  __m256d w[kMaxVectorCopies];
  for (size_t j = 0; j < m; ++j) {
    c[j] = copies[j].data();
    w[j] = _mm256_set1_pd(weights[j]);
  }
  const __m256d g = _mm256_set1_pd(gamma);
  const __m256d zero = _mm256_setzero_pd();
  __m256d mix_lo = zero, mix_hi = zero, pub_lo = zero, pub_hi = zero, res_lo = zero, res_hi = zero;
  auto lo = [](__m256 v) { return _mm256_cvtps_pd(_mm256_castps256_ps128(v)); };
  auto hi = [](__m256 v) { return _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)); };
  size_t k = 0;
  for (; k + 8 <= n; k += 8) {
    const __m256 pf = _mm256_loadu_ps(p + k);
    const __m256d pl = lo(pf);
    const __m256d ph = hi(pf);
    // 0 + the first term, as the definition's zeroed accumulator (it turns −0 into +0).
    __m256d al = zero;
    __m256d ah = zero;
    for (size_t j = 0; j < m; ++j) {
      const __m256 cf = _mm256_loadu_ps(c[j] + k);
      al = _mm256_add_pd(al, _mm256_mul_pd(w[j], _mm256_sub_pd(lo(cf), pl)));
      ah = _mm256_add_pd(ah, _mm256_mul_pd(w[j], _mm256_sub_pd(hi(cf), ph)));
    }
    const __m256 step = _mm256_set_m128(_mm256_cvtpd_ps(_mm256_mul_pd(g, ah)),
                                        _mm256_cvtpd_ps(_mm256_mul_pd(g, al)));
    const __m256 xn = _mm256_add_ps(_mm256_loadu_ps(xs + k), step);
    _mm256_storeu_ps(xs + k, xn);
    mix_lo = _mm256_fmadd_pd(al, al, mix_lo);
    mix_hi = _mm256_fmadd_pd(ah, ah, mix_hi);
    pub_lo = _mm256_fmadd_pd(pl, pl, pub_lo);
    pub_hi = _mm256_fmadd_pd(ph, ph, pub_hi);
    const __m256d rl = _mm256_sub_pd(lo(xn), pl);
    const __m256d rh = _mm256_sub_pd(hi(xn), ph);
    res_lo = _mm256_fmadd_pd(rl, rl, res_lo);
    res_hi = _mm256_fmadd_pd(rh, rh, res_hi);
  }
  auto total = [](__m256d a, __m256d b) {
    alignas(32) double t[4];
    _mm256_store_pd(t, _mm256_add_pd(a, b));
    return (t[0] + t[1]) + (t[2] + t[3]);
  };
  kernels::ConsensusSquares sums{total(mix_lo, mix_hi), total(pub_lo, pub_hi),
                                 total(res_lo, res_hi)};
  for (; k < n; ++k) ConsensusEntry(gamma, copies, weights, p, xs, k, sums);
  return sums;
}
#endif

#if defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__)
// The AVX2 kernel's arithmetic 16 entries at a time (each half of 8 in one 512-bit register of
// doubles): the same operations per entry, so the same bits of x, in half the instructions
// (235 K entries, two copies: a median of 129 µs against 171 µs, six alternating runs).
kernels::ConsensusSquares ConsensusStepAvx512(double gamma,
                                              std::span<const std::span<const float>> copies,
                                              std::span<const double> weights, const float* p,
                                              float* xs, size_t n) {
  const size_t m = copies.size();
  const float* c[kMaxVectorCopies];
  __m512d w[kMaxVectorCopies];
  for (size_t j = 0; j < m; ++j) {
    c[j] = copies[j].data();
    w[j] = _mm512_set1_pd(weights[j]);
  }
  const __m512d g = _mm512_set1_pd(gamma);
  const __m512d zero = _mm512_setzero_pd();
  __m512d mix_lo = zero, mix_hi = zero, pub_lo = zero, pub_hi = zero, res_lo = zero, res_hi = zero;
  auto lo = [](__m512 v) { return _mm512_cvtps_pd(_mm512_castps512_ps256(v)); };
  auto hi = [](__m512 v) {
    return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  };
  size_t k = 0;
  for (; k + 16 <= n; k += 16) {
    const __m512 pf = _mm512_loadu_ps(p + k);
    const __m512d pl = lo(pf);
    const __m512d ph = hi(pf);
    __m512d al = zero;
    __m512d ah = zero;
    for (size_t j = 0; j < m; ++j) {
      const __m512 cf = _mm512_loadu_ps(c[j] + k);
      al = _mm512_add_pd(al, _mm512_mul_pd(w[j], _mm512_sub_pd(lo(cf), pl)));
      ah = _mm512_add_pd(ah, _mm512_mul_pd(w[j], _mm512_sub_pd(hi(cf), ph)));
    }
    const __m512 step =
        _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(_mm512_mul_pd(g, al))),
                           _mm512_cvtpd_ps(_mm512_mul_pd(g, ah)), 1);
    const __m512 xn = _mm512_add_ps(_mm512_loadu_ps(xs + k), step);
    _mm512_storeu_ps(xs + k, xn);
    mix_lo = _mm512_fmadd_pd(al, al, mix_lo);
    mix_hi = _mm512_fmadd_pd(ah, ah, mix_hi);
    pub_lo = _mm512_fmadd_pd(pl, pl, pub_lo);
    pub_hi = _mm512_fmadd_pd(ph, ph, pub_hi);
    const __m512d rl = _mm512_sub_pd(lo(xn), pl);
    const __m512d rh = _mm512_sub_pd(hi(xn), ph);
    res_lo = _mm512_fmadd_pd(rl, rl, res_lo);
    res_hi = _mm512_fmadd_pd(rh, rh, res_hi);
  }
  auto total = [](__m512d a, __m512d b) { return _mm512_reduce_add_pd(_mm512_add_pd(a, b)); };
  kernels::ConsensusSquares sums{total(mix_lo, mix_hi), total(pub_lo, pub_hi),
                                 total(res_lo, res_hi)};
  for (; k < n; ++k) ConsensusEntry(gamma, copies, weights, p, xs, k, sums);
  return sums;
}
#endif

}  // namespace

kernels::ConsensusSquares ConsensusStep(double gamma,
                                        std::span<const std::span<const float>> copies,
                                        std::span<const double> weights,
                                        std::span<const float> public_copy, std::span<float> x) {
#if defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__)
  if (copies.size() <= kMaxVectorCopies) {
    return ConsensusStepAvx512(gamma, copies, weights, public_copy.data(), x.data(), x.size());
  }
#elif defined(__AVX2__) && defined(__FMA__)
  if (copies.size() <= kMaxVectorCopies) {
    return ConsensusStepAvx2(gamma, copies, weights, public_copy.data(), x.data(), x.size());
  }
#endif
  // Blocks small enough that the block's accumulator stays in L1: each copy's term is a
  // vectorized pass over the block, and the model is read and written once.
  constexpr size_t kBlock = 512;
  double acc[kBlock];
  Lanes mix, pub, residual;
  const float* p = public_copy.data();
  float* xs = x.data();
  for (size_t begin = 0; begin < x.size(); begin += kBlock) {
    const size_t n = std::min(kBlock, x.size() - begin);
    for (size_t i = 0; i < n; ++i) acc[i] = 0;
    for (size_t j = 0; j < copies.size(); ++j) {
      const double w = weights[j];
      const float* c = copies[j].data() + begin;
      for (size_t i = 0; i < n; ++i) acc[i] += w * (static_cast<double>(c[i]) - p[begin + i]);
    }
    for (size_t i = 0; i < n; ++i) xs[begin + i] += static_cast<float>(gamma * acc[i]);
    // The lanes continue across blocks (kBlock is a multiple of kLaneCount), so the sums are
    // LaneSum's over the whole vector.
    static_assert(kBlock % kLaneCount == 0);
    ForEachLane(n, [&](size_t i, size_t l) {
      const double pv = p[begin + i];
      const double r = static_cast<double>(xs[begin + i]) - pv;
      mix.v[l] += acc[i] * acc[i];
      pub.v[l] += pv * pv;
      residual.v[l] += r * r;
    });
  }
  return {mix.Total(), pub.Total(), residual.Total()};
}

}  // namespace murmur::kernels::cpu
