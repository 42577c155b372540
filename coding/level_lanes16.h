#pragma once
// The level pass sixteen values at a time with AVX-512 (internal to coding/; only
// level_codec.cc includes it): the draws and levels (Levels16), a level's value (LevelValues16:
// the table in registers, or with AVX512-VBMI the product and a byte-permuted correction), and
// the dense and sparse blocks QuantizeDense and QuantizeSparse dispatch to. Every lane runs the
// scalar definition's operations in the same order (level_codec.h), so the bits are the same.

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "coding/level_codec.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace murmur::coding::internal {

// Values per block of the dense pass: its one-byte codes (4 KB) are hashed while in L1.
inline constexpr size_t kLevelBlock = 4096;

#if defined(__AVX512F__)
// GCC 12's avx512fintrin.h fills unused destinations with a self-initialized register
// (`__m512i __Y = __Y`), which -Wmaybe-uninitialized reports wherever those intrinsics inline
// (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// The same draws, levels and values as Levels8 / LevelValues8, sixteen at a time (AVX-512F):
// every lane runs the scalar operations in the same order, so the bits are the same.
class Levels16 {
 public:
  Levels16(const LevelPass& pass, size_t first)
      : draw_(_mm512_add_epi32(
            _mm512_set1_epi32(static_cast<int>(pass.seed32)),
            _mm512_mullo_epi32(
                _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(first + 1)),
                                 _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
                                                   14, 15)),
                _mm512_set1_epi32(static_cast<int>(kGolden))))),
        pre_(_mm512_set1_ps(pass.scale.pre)),
        factor_(_mm512_set1_ps(pass.scale.factor)),
        top_(_mm512_set1_ps(static_cast<float>(pass.levels))) {}

  template <bool kPrescaled>
  __m512i Next(__m512i bits, __m512i& sign) {
    __m512i h = draw_;
    draw_ = _mm512_add_epi32(draw_, _mm512_set1_epi32(static_cast<int>(16u * kGolden)));
    h = _mm512_xor_si512(h, _mm512_srli_epi32(h, 16));
    h = _mm512_mullo_epi32(h, _mm512_set1_epi32(static_cast<int>(0x85EBCA6Bu)));
    h = _mm512_xor_si512(h, _mm512_srli_epi32(h, 13));
    h = _mm512_mullo_epi32(h, _mm512_set1_epi32(static_cast<int>(0xC2B2AE35u)));
    h = _mm512_xor_si512(h, _mm512_srli_epi32(h, 16));
    const __m512 u =
        _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(h, 8)), _mm512_set1_ps(0x1p-24f));
    sign = _mm512_and_si512(bits, _mm512_set1_epi32(static_cast<int>(0x80000000u)));
    const __m512 magnitude = _mm512_castsi512_ps(_mm512_xor_si512(bits, sign));
    const __m512 scaled = kPrescaled ? _mm512_mul_ps(magnitude, pre_) : magnitude;
    const __m512 a = _mm512_min_ps(_mm512_mul_ps(scaled, factor_), top_);
    const __m512i floor_a = _mm512_cvttps_epi32(a);
    const __mmask16 up =
        _mm512_cmp_ps_mask(u, _mm512_sub_ps(a, _mm512_cvtepi32_ps(floor_a)), _CMP_LT_OQ);
    return _mm512_mask_add_epi32(floor_a, up, floor_a, _mm512_set1_epi32(1));
  }

 private:
  static constexpr uint32_t kGolden = 0x9E3779B9u;
  __m512i draw_;
  const __m512 pre_, factor_, top_;
};

// ±LevelValue of sixteen levels: the table itself (no ulp correction), held in registers for up
// to 128 levels and read by two-source permutes (32 entries each); a gather beyond.
class LevelValues16 {
 public:
  explicit LevelValues16(const LevelPass& pass) : table_(pass.level_value) {
    const uint32_t entries = pass.levels + 1;
    if (entries > 128) return;  // groups_ 0: the gather
    groups_ = entries <= 32 ? 1 : entries <= 64 ? 2 : 4;
    alignas(64) float padded[128] = {};
    std::memcpy(padded, table_, entries * sizeof(float));
    for (int r = 0; r < 8; ++r) t_[r] = _mm512_load_ps(padded + 16 * r);
#if defined(__AVX512VBMI__)
    // Beyond 64 entries, where the table takes four permutes, two tests and three blends: the
    // product float(l) * step and a per-level correction of -1, 0 or +1 ulp (as LevelValues8),
    // the corrections one byte each, 128 of them in two registers read by one byte permute.
    if (groups_ != 4) return;
    const float step = static_cast<float>(static_cast<double>(pass.scale_f) / pass.levels);
    alignas(64) uint8_t corrections[128] = {};
    for (uint32_t l = 0; l <= pass.levels; ++l) {
      const int64_t ulps = int64_t{std::bit_cast<uint32_t>(table_[l])} -
                           int64_t{std::bit_cast<uint32_t>(static_cast<float>(l) * step)};
      if (ulps < -1 || ulps > 1) return;  // the four permutes then
      corrections[l] = static_cast<uint8_t>(ulps + 1);
    }
    step_ = _mm512_set1_ps(step);
    corrections_[0] = _mm512_load_si512(corrections);
    corrections_[1] = _mm512_load_si512(corrections + 64);
    groups_ = 8;
#endif
  }

  // 0 (gather), 1, 2 or 4 permutes of 32 entries per lookup; 8: a multiply and a byte permute
  // (AVX512-VBMI).
  int groups() const { return groups_; }

  // l: levels 0..levels in uint32 lanes; sign: sign bits to OR in. kGroups == groups().
  template <int kGroups>
  __m512 Of(__m512i l, __m512i sign) const {
    __m512 v;
    if constexpr (kGroups == 0) {
      v = _mm512_i32gather_ps(l, table_, 4);
    } else if constexpr (kGroups == 8) {
#if defined(__AVX512VBMI__)
      // Byte 0 of each lane is l (< 128) and picks its correction; bytes 1-3 (zero) pick
      // entry 0's, masked off.
      const __m512i product = _mm512_castps_si512(_mm512_mul_ps(_mm512_cvtepi32_ps(l), step_));
      const __m512i ulps_plus_one = _mm512_and_si512(
          _mm512_permutex2var_epi8(corrections_[0], l, corrections_[1]), _mm512_set1_epi32(0xFF));
      v = _mm512_castsi512_ps(
          _mm512_sub_epi32(_mm512_add_epi32(product, ulps_plus_one), _mm512_set1_epi32(1)));
#else
      v = _mm512_i32gather_ps(l, table_, 4);  // not chosen: groups() is never 8 without VBMI
#endif
    } else {
      // permutex2var reads an index's low 5 bits: entry (l mod 32) of the pair (t0, t1).
      v = _mm512_permutex2var_ps(t_[0], l, t_[1]);
      if constexpr (kGroups >= 2) {
        const __mmask16 bit5 = _mm512_test_epi32_mask(l, _mm512_set1_epi32(32));
        const __m512 v1 = _mm512_permutex2var_ps(t_[2], l, t_[3]);
        if constexpr (kGroups == 2) {
          v = _mm512_mask_blend_ps(bit5, v, v1);
        } else {
          const __mmask16 bit6 = _mm512_test_epi32_mask(l, _mm512_set1_epi32(64));
          const __m512 v2 = _mm512_permutex2var_ps(t_[4], l, t_[5]);
          const __m512 v3 = _mm512_permutex2var_ps(t_[6], l, t_[7]);
          v = _mm512_mask_blend_ps(bit6, _mm512_mask_blend_ps(bit5, v, v1),
                                   _mm512_mask_blend_ps(bit5, v2, v3));
        }
      }
    }
    return _mm512_or_ps(v, _mm512_castsi512_ps(sign));
  }

 private:
  const float* table_;
  int groups_ = 0;
  __m512 t_[8] = {};
#if defined(__AVX512VBMI__)
  __m512 step_ = _mm512_setzero_ps();
  __m512i corrections_[2] = {};
#endif
};

// The dense pass over source[begin, end) 16 values a turn; as DenseBlock, but `codes` points at
// entry begin's code. stream: the values go past the caches (REQUIRES out + begin 64-byte
// aligned).
template <int kGroups, bool kCodes, bool kResidual, bool kPrescaled, bool kSum>
size_t DenseBlock16(const LevelPass& pass, const LevelValues16& value_of, size_t begin,
                    size_t end, float* __restrict out, uint8_t* __restrict codes, float* residual,
                    bool stream, size_t& zero_levels) {
  const float* in = pass.source.data();
  // A local copy, so that the table stays in registers (the stores below cannot alias it).
  const LevelValues16 table = value_of;
  Levels16 levels(pass, begin);
  size_t zeros = 0;
  size_t i = begin;
  for (; i + 16 <= end; i += 16) {
    __m512i sign;
    __m512 x = _mm512_loadu_ps(in + i);
    if constexpr (kSum) x = _mm512_add_ps(x, _mm512_loadu_ps(pass.addend + i));
    const __m512i l = levels.Next<kPrescaled>(_mm512_castps_si512(x), sign);
    zeros += static_cast<size_t>(
        std::popcount(static_cast<uint32_t>(_mm512_testn_epi32_mask(l, l))));
    const __m512 v = table.Of<kGroups>(l, sign);
    if constexpr (kResidual) _mm512_storeu_ps(residual + i, _mm512_sub_ps(x, v));
    if (stream) {
      _mm512_stream_ps(out + i, v);
    } else {
      _mm512_storeu_ps(out + i, v);
    }
    if constexpr (kCodes) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(codes + (i - begin)),
                       _mm512_cvtepi32_epi8(_mm512_or_si512(l, _mm512_srli_epi32(sign, 24))));
    }
  }
  zero_levels += zeros;
  return i;
}

using DenseBlock16Fn = size_t (*)(const LevelPass&, const LevelValues16&, size_t, size_t, float*,
                                  uint8_t*, float*, bool, size_t&);
// Index: groups (0, 1, 2, 4, 8 as 0..4) * 16 + sum * 8 + codes * 4 + residual * 2 + prescaled.
template <size_t kIndex>
constexpr DenseBlock16Fn DenseBlock16At() {
  constexpr int kGroups[] = {0, 1, 2, 4, 8};
  return DenseBlock16<kGroups[kIndex / 16], (kIndex & 4) != 0, (kIndex & 2) != 0,
                      (kIndex & 1) != 0, (kIndex & 8) != 0>;
}
template <size_t... kIndex>
constexpr std::array<DenseBlock16Fn, sizeof...(kIndex)> DenseBlocks16(
    std::index_sequence<kIndex...>) {
  return {DenseBlock16At<kIndex>()...};
}
constexpr auto kDenseBlocks16 = DenseBlocks16(std::make_index_sequence<80>());
inline size_t GroupSlot(int groups) {
  return groups == 8 ? 4 : groups == 4 ? 3 : static_cast<size_t>(groups);
}

// QuantizeSparse's vector part, 16 wide, for up to 127 levels (a table): each group's non-zero
// levels leave as one code each, (offset in the block << 8) | level | sign << 7, compressed in a
// register and stored whole into the staging (a compress to memory is slow on some CPUs; 16
// slots of slack); after each block of kLevelBlock values the few staged codes become indices
// and ±LevelValue from the table. Every group is compressed and stored, empty or not: at
// QSGD:16's density about one group in five holds a level, and a branch on the mask mispredicted
// often enough to cost more than the compress; one compress per group instead of two (index and
// value) halves what remains of it.
// kSum: the values are source + addend, and each sum is stored to `sums` (the source's
// storage) as it is formed (error feedback's residual, read and written in one pass).
template <bool kPrescaled, bool kSum>
bool SparseCodes16(const LevelPass& pass, size_t limit, size_t& i, std::vector<uint32_t>& indices,
                   std::vector<float>& values, float* sums) {
  static_assert(kLevelBlock <= (size_t{1} << 24), "a block offset fits a code's upper 24 bits");
  const size_t n = pass.source.size();
  const float* in = pass.source.data();
  const float* table = pass.level_value;
  alignas(64) uint32_t staged[kLevelBlock + 16];
  Levels16 levels(pass, 0);
  const __m512i lane =
      _mm512_setr_epi32(0 << 8, 1 << 8, 2 << 8, 3 << 8, 4 << 8, 5 << 8, 6 << 8, 7 << 8, 8 << 8,
                        9 << 8, 10 << 8, 11 << 8, 12 << 8, 13 << 8, 14 << 8, 15 << 8);
  for (size_t begin = 0; begin + 16 <= n; begin += kLevelBlock) {
    const size_t end = std::min(n, begin + kLevelBlock);
    size_t count = 0;
    size_t k = i;  // a local, so that the loop keeps it in a register
    __m512i offset = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>((k - begin) << 8)), lane);
    for (; k + 16 <= end; k += 16) {
      __m512i sign;
      __m512 x = _mm512_loadu_ps(in + k);
      if constexpr (kSum) {
        x = _mm512_add_ps(x, _mm512_loadu_ps(pass.addend + k));
        _mm512_storeu_ps(sums + k, x);
      }
      const __m512i l = levels.Next<kPrescaled>(_mm512_castps_si512(x), sign);
      const __mmask16 nonzero = _mm512_test_epi32_mask(l, l);
      // offset | l | sign >> 24 (0xFE: the OR of the three).
      const __m512i code = _mm512_ternarylogic_epi32(offset, l, _mm512_srli_epi32(sign, 24), 0xFE);
      _mm512_storeu_si512(staged + count, _mm512_maskz_compress_epi32(nonzero, code));
      count += static_cast<size_t>(std::popcount(static_cast<uint32_t>(nonzero)));
      offset = _mm512_add_epi32(offset, _mm512_set1_epi32(16 << 8));
    }
    i = k;
    const size_t old = indices.size();
    if (old + count >= limit) return false;
    indices.resize(old + count);
    values.resize(old + count);
    for (size_t j = 0; j < count; ++j) {
      const uint32_t c = staged[j];
      indices[old + j] = static_cast<uint32_t>(begin + (c >> 8));
      values[old + j] =
          std::bit_cast<float>(std::bit_cast<uint32_t>(table[c & 0x7Fu]) | (c & 0x80u) << 24);
    }
  }
  return true;
}

// Over 127 levels: the gather's values, a group skipped when it holds no level (a gather costs
// more than a misprediction).
template <bool kPrescaled>
bool SparseBlocks16(const LevelPass& pass, size_t limit, size_t& i,
                    std::vector<uint32_t>& indices, std::vector<float>& values) {
  const size_t n = pass.source.size();
  const float* in = pass.source.data();
  alignas(64) uint32_t staged_index[kLevelBlock + 16];
  alignas(64) float staged_value[kLevelBlock + 16];
  const LevelValues16 value_of(pass);
  Levels16 levels(pass, 0);
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  for (size_t begin = 0; begin + 16 <= n; begin += kLevelBlock) {
    const size_t end = std::min(n, begin + kLevelBlock);
    size_t staged = 0;
    size_t k = i;
    for (; k + 16 <= end; k += 16) {
      __m512i sign;
      const __m512i l = levels.Next<kPrescaled>(_mm512_loadu_si512(in + k), sign);
      const __mmask16 nonzero = _mm512_test_epi32_mask(l, l);
      if (nonzero == 0) continue;
      const __m512 v = value_of.Of<0>(l, sign);
      const __m512i at = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(k)), lane);
      _mm512_storeu_si512(staged_index + staged, _mm512_maskz_compress_epi32(nonzero, at));
      _mm512_storeu_ps(staged_value + staged, _mm512_maskz_compress_ps(nonzero, v));
      staged += static_cast<size_t>(std::popcount(static_cast<uint32_t>(nonzero)));
    }
    i = k;
    if (indices.size() + staged >= limit) return false;
    indices.insert(indices.end(), staged_index, staged_index + staged);
    values.insert(values.end(), staged_value, staged_value + staged);
  }
  return true;
}

// sums: as QuantizeSparse's, with an addend (REQUIRES levels <= 127 then).
inline bool SparseBlocks16For(const LevelPass& pass, size_t limit, size_t& i,
                              std::vector<uint32_t>& indices, std::vector<float>& values,
                              float* sums) {
  const bool pre = pass.scale.pre != 1.0f;
  if (pass.levels <= 127) {
    if (pass.addend != nullptr) {
      return pre ? SparseCodes16<true, true>(pass, limit, i, indices, values, sums)
                 : SparseCodes16<false, true>(pass, limit, i, indices, values, sums);
    }
    return pre ? SparseCodes16<true, false>(pass, limit, i, indices, values, sums)
               : SparseCodes16<false, false>(pass, limit, i, indices, values, sums);
  }
  return pre ? SparseBlocks16<true>(pass, limit, i, indices, values)
             : SparseBlocks16<false>(pass, limit, i, indices, values);
}
#pragma GCC diagnostic pop
#endif  // __AVX512F__

}  // namespace murmur::coding::internal
