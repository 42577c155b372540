#pragma once
// QSGD's and int8's quantizing pass at memory speed (internal to coding/; Compressor::Quantize
// calls it). Each value's level is kernels::StochasticLevel over kernels::LevelDraw, the draws
// and rounding every backend shares; with AVX-512 sixteen of them are computed at once, the
// draws' counter advancing as a vector and a level's value read from LevelValue's table held in
// registers (up to 127 levels; a gather beyond; from 64 levels, with AVX512-VBMI, the product
// below with its corrections read by one byte permute). Without AVX-512, AVX2 takes eight, a
// value being float(l) * step corrected by a stored -1/0/+1 ulp to LevelValue's bits (or the
// gather).
//
// Two forms of the same levels:
// - dense: every value, and one-byte wire codes (int8; QSGD of 64-127 levels) written into the
//   payload and hashed block by block while in L1; with error feedback the residual (the source
//   itself) becomes source - value in the same pass;
// - sparse: only the non-zero levels, for QSGD's few-level updates where most levels are 0
//   (no model-sized write but error feedback's sums); it gives up once the update would be
//   denser than the bitmap's break-even, and the caller takes the dense form.
//
// Bit-identical to the scalar reference (kernels::cpu::StochasticLevels + LevelValue):
// DeviceCompressorTest compares them at edge sizes, LevelCodecTest sweeps the forms' edges.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "coding/update.h"
#include "kernels/compress_ops.h"

namespace murmur::coding::internal {

class PayloadHash;

struct LevelPass {
  std::span<const float> source;  // finite (with addend: source + addend is)
  uint32_t levels = 0;
  kernels::LevelScale scale;
  uint32_t seed32 = 0;
  float scale_f = 0;                   // LevelValue's scale
  const float* level_value = nullptr;  // LevelValue of 0..levels, or null (levels too many)
  // Dense form only: the value quantized is source[i] + addend[i] (float), formed in the pass,
  // so that error feedback's sum is never written (it would be read right back).
  const float* addend = nullptr;
};

// values[i] = ±LevelValue(level_i), signed like the value v_i (source[i], plus addend[i] if
// any). codes (nullable; REQUIRES levels <= 127) receive level | sign << 7 and `hash` (nullable)
// each block of them. residual (nullable) must be source's storage and becomes v_i - value.
// Returns how many levels are non-zero. REQUIRES values.size() == source.size().
size_t QuantizeDense(const LevelPass& pass, std::span<float> values, uint8_t* codes,
                     PayloadHash* hash, float* residual);

// indices/values = the non-zero levels' positions and values, in order, when there are fewer
// than `limit` of them; otherwise false (their contents are then unspecified). With an addend
// (error feedback), `sums` (the source's storage) receives each source[i] + addend[i] in the same
// pass and `*summed` how many from index 0 hold it: all on success; on false the caller
// completes the rest. REQUIRES sums and summed with an addend.
bool QuantizeSparse(const LevelPass& pass, size_t limit, std::vector<uint32_t>& indices,
                    std::vector<float>& values, float* sums = nullptr, size_t* summed = nullptr);

// The receive side of one-byte level codes (level | sign << 7, levels <= 127): values[i] =
// ±LevelValue(scale, levels, level_i), with the multiply and correction above. False when some
// level exceeds `levels` (values then hold unspecified contents; the caller names the first).
bool DecodeByteLevels(const std::byte* codes, size_t count, float scale, uint32_t levels,
                      float* values);

}  // namespace murmur::coding::internal
