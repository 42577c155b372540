#include "kernels/cpu/cpu_gossip_ops.h"

#include <cstddef>

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
  double squares = 0;
  for (size_t k = 0; k < x.size(); ++k) {
    x[k] += static_cast<float>(gamma * acc[k]);
    squares += acc[k] * acc[k];
  }
  return squares;
}

void DivideInto(std::span<const double> acc, double divisor, std::span<float> out) {
  for (size_t k = 0; k < out.size(); ++k) out[k] = static_cast<float>(acc[k] / divisor);
}

double SquaredDistance(std::span<const float> a, std::span<const float> b) {
  double sum = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    const double d = static_cast<double>(a[k]) - b[k];
    sum += d * d;
  }
  return sum;
}

}  // namespace murmur::kernels::cpu
