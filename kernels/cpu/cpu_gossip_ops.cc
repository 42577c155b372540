#include "kernels/cpu/cpu_gossip_ops.h"

#include <algorithm>
#include <cstddef>

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

kernels::ConsensusSquares ConsensusStep(double gamma,
                                        std::span<const std::span<const float>> copies,
                                        std::span<const double> weights,
                                        std::span<const float> public_copy, std::span<float> x) {
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
