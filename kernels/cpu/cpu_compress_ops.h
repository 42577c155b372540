#pragma once
// The host versions of kernels/compress_ops.h: plain loops written for obviousness. They are the
// reference the CUDA versions are compared with, so they define every tie and rounding. Shapes
// are checked by kernels/compress_ops.cc.

#include <cstdint>
#include <span>

namespace murmur::kernels::cpu {

int64_t CountNonFinite(std::span<const float> v);
void Axpy(float alpha, std::span<const float> x, std::span<float> y);
double SumOfSquares(std::span<const float> v);
float MaxAbs(std::span<const float> v);
int64_t SelectAtLeast(std::span<const float> v, float tau, std::span<uint32_t> indices,
                      std::span<float> values);
int64_t TopK(std::span<const float> v, int64_t k, std::span<uint32_t> indices,
             std::span<float> values);
void Gather(std::span<const float> v, std::span<const uint32_t> indices, std::span<float> values);
void StridedGather(std::span<const float> v, int64_t start, int64_t stride, std::span<float> out);
void ScatterAdd(std::span<const uint32_t> indices, std::span<const float> values, float alpha,
                std::span<float> x);
void PackSigns(std::span<const float> v, std::span<uint32_t> words);
void UnpackSigns(std::span<const uint32_t> words, float magnitude, std::span<float> out);
template <typename L>
void StochasticLevels(std::span<const float> v, double per_level, uint32_t levels, uint64_t seed,
                      std::span<L> out);
template <typename L>
void LevelsToFloat(std::span<const L> level, float scale, uint32_t levels, std::span<float> out);
void FloatToHalf(std::span<const float> v, std::span<uint16_t> out);
void HalfToFloat(std::span<const uint16_t> h, std::span<float> out);

}  // namespace murmur::kernels::cpu
