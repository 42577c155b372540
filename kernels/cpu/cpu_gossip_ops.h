#pragma once
// The host versions of kernels/gossip_ops.h: plain loops, the reference the CUDA versions are
// compared with. Shapes are checked by kernels/gossip_ops.cc.

#include <span>

#include "kernels/gossip_ops.h"

namespace murmur::kernels::cpu {

void Subtract(std::span<const float> a, std::span<const float> b, std::span<float> out);
void AccumulateDifference(double w, std::span<const float> x, std::span<const float> base,
                          std::span<double> acc);
void AccumulateScaled(double w, std::span<const float> x, std::span<double> acc);
double ApplyScaled(double gamma, std::span<const double> acc, std::span<float> x);
void DivideInto(std::span<const double> acc, double divisor, std::span<float> out);
double SquaredDistance(std::span<const float> a, std::span<const float> b);
void OuterStep(double lr, double momentum, bool nesterov, std::span<float> anchor,
               std::span<float> velocity, std::span<float> x);

// kernels::ConsensusStep on the host, in one pass over the vectors.
kernels::ConsensusSquares ConsensusStep(double gamma,
                                        std::span<const std::span<const float>> copies,
                                        std::span<const double> weights,
                                        std::span<const float> public_copy, std::span<float> x);

}  // namespace murmur::kernels::cpu
