#include "coding/level_codec.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>

#include "base/check.h"
#include "coding/dense_codec.h"
#include "coding/level_lanes16.h"
#include "coding/stream_store.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace murmur::coding::internal {
namespace {

// The reference for one value: its level's magnitude (0..levels), its sign bit and its value.
struct OneLevel {
  uint32_t level;
  uint32_t sign;
  float value;
};
inline float SourceAt(const LevelPass& pass, size_t i) {
  return pass.addend != nullptr ? pass.source[i] + pass.addend[i] : pass.source[i];
}
inline OneLevel LevelAt(const LevelPass& pass, size_t i) {
  const uint32_t bits = std::bit_cast<uint32_t>(SourceAt(pass, i));
  const uint32_t sign = bits & 0x80000000u;
  const uint32_t level =
      kernels::StochasticLevel(std::bit_cast<float>(bits ^ sign), pass.scale, pass.levels,
                               kernels::LevelDraw(pass.seed32, static_cast<uint32_t>(i)));
  const float magnitude = pass.level_value != nullptr
                              ? pass.level_value[level]
                              : LevelValue(pass.scale_f, pass.levels, level);
  return {level, sign, std::bit_cast<float>(std::bit_cast<uint32_t>(magnitude) | sign)};
}

#if defined(__AVX2__)
// kernels::StochasticLevel and LevelDraw for eight consecutive indices per call, in order from
// `first`. Every step is the scalar one in float or uint32 lanes, so the levels are the same.
class Levels8 {
 public:
  Levels8(const LevelPass& pass, size_t first)
      : draw_(_mm256_add_epi32(
            _mm256_set1_epi32(static_cast<int>(pass.seed32)),
            _mm256_mullo_epi32(_mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(first + 1)),
                                                _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)),
                               _mm256_set1_epi32(static_cast<int>(kGolden))))),
        pre_(_mm256_set1_ps(pass.scale.pre)),
        factor_(_mm256_set1_ps(pass.scale.factor)),
        top_(_mm256_set1_ps(static_cast<float>(pass.levels))),
        prescaled_(pass.scale.pre != 1.0f) {}

  // Whether |x| is pre-scaled (a tiny scale); otherwise pre is 1 and its multiply is skipped
  // (x * 1 is x).
  bool prescaled() const { return prescaled_; }

  // Level magnitudes of x[0..8) in uint32 lanes; `sign` gets their sign bits. kPrescaled ==
  // prescaled().
  template <bool kPrescaled>
  __m256i Next(__m256i bits, __m256i& sign) {
    // LevelDraw: murmur3's finalizer over seed + (i + 1) * golden.
    __m256i h = draw_;
    draw_ = _mm256_add_epi32(draw_, _mm256_set1_epi32(static_cast<int>(8u * kGolden)));
    h = _mm256_xor_si256(h, _mm256_srli_epi32(h, 16));
    h = _mm256_mullo_epi32(h, _mm256_set1_epi32(static_cast<int>(0x85EBCA6Bu)));
    h = _mm256_xor_si256(h, _mm256_srli_epi32(h, 13));
    h = _mm256_mullo_epi32(h, _mm256_set1_epi32(static_cast<int>(0xC2B2AE35u)));
    h = _mm256_xor_si256(h, _mm256_srli_epi32(h, 16));
    const __m256 u =
        _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(h, 8)), _mm256_set1_ps(0x1p-24f));
    // StochasticLevel: a = min(|x| pre factor, levels); floor(a) + (u < a - floor(a)).
    // min_ps(a, top) is a < top ? a : top. The scalar's final clamp to `levels` never binds
    // (a <= levels, an integer: floor(a) + 1 exceeds it only if a is levels, with remainder 0).
    sign = _mm256_and_si256(bits, _mm256_set1_epi32(static_cast<int>(0x80000000u)));
    const __m256 magnitude = _mm256_castsi256_ps(_mm256_xor_si256(bits, sign));
    const __m256 scaled = kPrescaled ? _mm256_mul_ps(magnitude, pre_) : magnitude;
    const __m256 a = _mm256_min_ps(_mm256_mul_ps(scaled, factor_), top_);
    const __m256i floor_a = _mm256_cvttps_epi32(a);
    const __m256 up = _mm256_cmp_ps(u, _mm256_sub_ps(a, _mm256_cvtepi32_ps(floor_a)), _CMP_LT_OQ);
    return _mm256_sub_epi32(floor_a, _mm256_castps_si256(up));
  }

 private:
  static constexpr uint32_t kGolden = 0x9E3779B9u;
  __m256i draw_;
  const __m256 pre_, factor_, top_;
  const bool prescaled_;
};

// ±LevelValue of eight levels. Gathering from the table costs a third of the pass; where the
// table allows, a float multiply float(l) * step plus a per-level correction of -1, 0 or +1 ulp
// gives the same bits (2 bits per level: levels 0..127 fit one register, looked up by a
// permute and a shift).
class LevelValues8 {
 public:
  explicit LevelValues8(const LevelPass& pass) : table_(pass.level_value) {
    if (pass.levels > 127) return;
    const float step = static_cast<float>(static_cast<double>(pass.scale_f) / pass.levels);
    alignas(32) uint32_t words[8] = {};
    for (uint32_t l = 0; l <= pass.levels; ++l) {
      const float product = static_cast<float>(l) * step;
      const int64_t ulps =
          int64_t{std::bit_cast<uint32_t>(table_[l])} - int64_t{std::bit_cast<uint32_t>(product)};
      if (ulps < -1 || ulps > 1) return;  // the gather then
      words[l / 16] |= static_cast<uint32_t>(ulps + 1) << (2 * (l % 16));
    }
    step_ = _mm256_set1_ps(step);
    corrections_ = _mm256_load_si256(reinterpret_cast<const __m256i*>(words));
    multiply_ = true;
  }

  bool multiply() const { return multiply_; }

  // l: levels 0..levels in uint32 lanes; sign: sign bits to OR in. kMultiply == multiply().
  template <bool kMultiply>
  __m256 Of(__m256i l, __m256i sign) const {
    if constexpr (!kMultiply) {
      return _mm256_or_ps(_mm256_i32gather_ps(table_, l, 4), _mm256_castsi256_ps(sign));
    }
    const __m256i product = _mm256_castps_si256(_mm256_mul_ps(_mm256_cvtepi32_ps(l), step_));
    const __m256i word = _mm256_permutevar8x32_epi32(corrections_, _mm256_srli_epi32(l, 4));
    const __m256i shift = _mm256_slli_epi32(_mm256_and_si256(l, _mm256_set1_epi32(15)), 1);
    const __m256i ulps_plus_one =
        _mm256_and_si256(_mm256_srlv_epi32(word, shift), _mm256_set1_epi32(3));
    const __m256i bits =
        _mm256_sub_epi32(_mm256_add_epi32(product, ulps_plus_one), _mm256_set1_epi32(1));
    return _mm256_castsi256_ps(_mm256_or_si256(bits, sign));
  }

 private:
  const float* table_;
  bool multiply_ = false;
  __m256 step_ = _mm256_setzero_ps();
  __m256i corrections_ = _mm256_setzero_si256();
};

// The dense pass over source[begin, end) 32 values a turn (four codes vectors pack into one of
// bytes); returns where it stopped (the scalar loop does the rest) and adds the zero levels.
// kFlags: which variant (kMultiplyFlag ... below), so that each loop carries no branch.
constexpr int kMultiplyFlag = 1, kCodesFlag = 2, kResidualFlag = 4, kPrescaledFlag = 8,
              kSumFlag = 16;

template <int kFlags>
size_t DenseBlock(const LevelPass& pass, const LevelValues8& value_of, size_t begin, size_t end,
                  float* __restrict out, uint8_t* __restrict codes, float* residual,
                  size_t& zero_levels) {
  constexpr bool kMultiply = (kFlags & kMultiplyFlag) != 0;
  constexpr bool kCodes = (kFlags & kCodesFlag) != 0;
  constexpr bool kResidual = (kFlags & kResidualFlag) != 0;
  constexpr bool kSum = (kFlags & kSumFlag) != 0;
  const float* in = pass.source.data();
  const float* addend = pass.addend;
  Levels8 levels(pass, begin);
  __m256i zeros = _mm256_setzero_si256();
  size_t i = begin;
  for (; i + 32 <= end; i += 32) {
    __m256i code[4];
    for (int k = 0; k < 4; ++k) {
      const size_t at = i + 8 * static_cast<size_t>(k);
      __m256i sign;
      __m256 x = _mm256_loadu_ps(in + at);
      if constexpr (kSum) x = _mm256_add_ps(x, _mm256_loadu_ps(addend + at));
      const __m256i l = levels.Next<(kFlags & kPrescaledFlag) != 0>(_mm256_castps_si256(x), sign);
      // Without codes, zero levels are counted per lane; with them, per byte below.
      if constexpr (!kCodes) {
        zeros = _mm256_sub_epi32(zeros, _mm256_cmpeq_epi32(l, _mm256_setzero_si256()));
      }
      const __m256 v = value_of.Of<kMultiply>(l, sign);
      if constexpr (kResidual) {
        _mm256_storeu_ps(residual + at, _mm256_sub_ps(x, v));
      }
      _mm256_storeu_ps(out + at, v);
      if constexpr (kCodes) code[k] = _mm256_or_si256(l, _mm256_srli_epi32(sign, 24));
    }
    if constexpr (kCodes) {
      // packus interleaves 128-bit lanes: bytes come out as 0-3 8-11 16-19 24-27 4-7 ...; the
      // permutation restores the order.
      const __m256i bytes = _mm256_packus_epi16(_mm256_packus_epi32(code[0], code[1]),
                                                _mm256_packus_epi32(code[2], code[3]));
      _mm256_storeu_si256(
          reinterpret_cast<__m256i*>(codes + i),
          _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
      const __m256i level_bits = _mm256_and_si256(bytes, _mm256_set1_epi8(0x7F));
      zero_levels += static_cast<size_t>(std::popcount(static_cast<uint32_t>(
          _mm256_movemask_epi8(_mm256_cmpeq_epi8(level_bits, _mm256_setzero_si256())))));
    }
  }
  alignas(32) uint32_t lane_zeros[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lane_zeros), zeros);
  for (uint32_t z : lane_zeros) zero_levels += z;
  return i;
}

using DenseBlockFn = size_t (*)(const LevelPass&, const LevelValues8&, size_t, size_t, float*,
                                uint8_t*, float*, size_t&);
template <size_t... kFlags>
constexpr std::array<DenseBlockFn, sizeof...(kFlags)> DenseBlocks(std::index_sequence<kFlags...>) {
  return {DenseBlock<static_cast<int>(kFlags)>...};
}
constexpr auto kDenseBlocks = DenseBlocks(std::make_index_sequence<32>());

// QuantizeSparse's vector part: every whole group of 8; i is where it stopped. False once the
// entries reach `limit`. A block's entries are staged on the stack and appended after it: no
// call inside the loop, so its vector state stays in registers.
template <bool kPrescaled>
bool SparseBlocks(const LevelPass& pass, size_t limit, size_t& i, std::vector<uint32_t>& indices,
                  std::vector<float>& values) {
  const size_t n = pass.source.size();
  uint32_t staged_index[kLevelBlock];
  float staged_value[kLevelBlock];
  Levels8 levels(pass, 0);
  for (size_t begin = 0; begin + 8 <= n; begin += kLevelBlock) {
    const size_t end = std::min(n, begin + kLevelBlock);
    size_t staged = 0;
    for (; i + 8 <= end; i += 8) {
      __m256i sign;
      const __m256i l = levels.Next<kPrescaled>(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pass.source.data() + i)), sign);
      auto nonzero = static_cast<uint32_t>(_mm256_movemask_ps(
                         _mm256_castsi256_ps(_mm256_cmpeq_epi32(l, _mm256_setzero_si256())))) ^
                     0xFFu;
      if (nonzero == 0) continue;
      alignas(32) uint32_t level[8], sign_bits[8];
      _mm256_store_si256(reinterpret_cast<__m256i*>(level), l);
      _mm256_store_si256(reinterpret_cast<__m256i*>(sign_bits), sign);
      for (; nonzero != 0; nonzero &= nonzero - 1) {
        const int k = std::countr_zero(nonzero);
        staged_index[staged] = static_cast<uint32_t>(i + static_cast<size_t>(k));
        staged_value[staged] = std::bit_cast<float>(
            std::bit_cast<uint32_t>(pass.level_value[level[k]]) | sign_bits[k]);
        ++staged;
      }
    }
    if (indices.size() + staged >= limit) return false;
    indices.insert(indices.end(), staged_index, staged_index + staged);
    values.insert(values.end(), staged_value, staged_value + staged);
  }
  return true;
}
#endif


}  // namespace

size_t QuantizeDense(const LevelPass& pass, std::span<float> values, uint8_t* codes,
                     PayloadHash* hash, float* residual) {
  const size_t n = pass.source.size();
  MURMUR_CHECK_EQ(values.size(), n);
  MURMUR_CHECK(codes == nullptr || pass.levels <= 127) << "levels " << pass.levels;
  MURMUR_CHECK(residual == nullptr || residual == pass.source.data());
  float* __restrict out = values.data();
  size_t nonzero = 0;
#if defined(__AVX512F__)
  std::optional<LevelValues16> value_of;
  DenseBlock16Fn block = nullptr;
  if (pass.level_value != nullptr) {
    value_of.emplace(pass);
    block = kDenseBlocks16[GroupSlot(value_of->groups()) * 16 + (pass.addend != nullptr ? 8 : 0) +
                           (codes != nullptr ? 4 : 0) + (residual != nullptr ? 2 : 0) +
                           (pass.scale.pre != 1.0f ? 1 : 0)];
  }
#elif defined(__AVX2__)
  std::optional<LevelValues8> value_of;
  DenseBlockFn block = nullptr;
  if (pass.level_value != nullptr) {
    value_of.emplace(pass);
    block = kDenseBlocks[(value_of->multiply() ? kMultiplyFlag : 0) |
                         (codes != nullptr ? kCodesFlag : 0) |
                         (residual != nullptr ? kResidualFlag : 0) |
                         (pass.scale.pre != 1.0f ? kPrescaledFlag : 0) |
                         (pass.addend != nullptr ? kSumFlag : 0)];
  }
#endif
  // Entry i's code goes to *code: the payload, or (streaming) the block's stage.
  auto one_entry = [&](size_t i, uint8_t* code) {
    const OneLevel one = LevelAt(pass, i);
    nonzero += one.level != 0 ? 1 : 0;
    if (residual != nullptr) residual[i] = SourceAt(pass, i) - one.value;
    out[i] = one.value;
    if (codes != nullptr) *code = static_cast<uint8_t>(one.level | (one.sign >> 24));
  };
#if defined(__AVX512F__)
  // Above the last-level cache the values go past it from the register (stream_store.h), each
  // block's first entries up to a 64-byte line boundary taking the scalar loop; the codes go to
  // an L1 stage, hashed there and streamed out after the block.
  const bool stream =
      block != nullptr && ShouldStream(n * (sizeof(float) + (codes != nullptr ? 1 : 0)));
  alignas(64) uint8_t stage[kLevelBlock];
#endif
  for (size_t begin = 0; begin < n; begin += kLevelBlock) {
    const size_t end = std::min(n, begin + kLevelBlock);
    size_t i = begin;
    uint8_t* block_codes = codes != nullptr ? codes + begin : nullptr;  // entry begin's code
    auto code_of = [&](size_t j) {
      return block_codes != nullptr ? block_codes + (j - begin) : nullptr;
    };
#if defined(__AVX512F__)
    if (block != nullptr) {
      if (stream) {
        if (codes != nullptr) block_codes = stage;
        for (; i < std::min(end, begin + FloatsToLine(out + begin)); ++i) {
          one_entry(i, code_of(i));
        }
      }
      const size_t start = i;
      size_t zero_levels = 0;
      i = block(pass, *value_of, start, end, out, code_of(start), residual, stream, zero_levels);
      nonzero += (i - start) - zero_levels;
    }
#elif defined(__AVX2__)
    if (block != nullptr) {
      size_t zero_levels = 0;
      i = block(pass, *value_of, begin, end, out, codes, residual, zero_levels);
      nonzero += (i - begin) - zero_levels;
    }
#endif
    for (; i < end; ++i) one_entry(i, code_of(i));
    if (hash != nullptr) {
      hash->Add(reinterpret_cast<const std::byte*>(block_codes), end - begin);
    }
#if defined(__AVX512F__)
    if (codes != nullptr && block_codes == stage) StreamCopy(codes + begin, stage, end - begin);
#endif
  }
#if defined(__AVX512F__)
  if (stream) StreamFence();
#endif
  return nonzero;
}

bool QuantizeSparse(const LevelPass& pass, size_t limit, std::vector<uint32_t>& indices,
                    std::vector<float>& values, float* sums, size_t* summed) {
  MURMUR_CHECK(pass.addend == nullptr || (sums == pass.source.data() && summed != nullptr))
      << "the sums go to the source's storage";
  indices.clear();
  values.clear();
  const size_t n = pass.source.size();
  if (summed != nullptr) *summed = 0;
  if (limit == 0) return false;
  if (pass.addend != nullptr) {
#if defined(__AVX512F__)
    const bool in_pass = pass.level_value != nullptr && pass.levels <= 127;
#else
    const bool in_pass = false;
#endif
    if (!in_pass) {  // no vector pass forms them: the sums first, then their levels
      for (size_t k = 0; k < n; ++k) sums[k] = pass.source[k] + pass.addend[k];
      *summed = n;
      LevelPass plain = pass;
      plain.addend = nullptr;
      return QuantizeSparse(plain, limit, indices, values);
    }
  }
  auto keep = [&](size_t i, float value) {
    indices.push_back(static_cast<uint32_t>(i));
    values.push_back(value);
    return indices.size() < limit;
  };
  size_t i = 0;
#if defined(__AVX512F__)
  if (pass.level_value != nullptr && !SparseBlocks16For(pass, limit, i, indices, values, sums)) {
    if (summed != nullptr) *summed = i;
    return false;
  }
#elif defined(__AVX2__)
  if (pass.level_value != nullptr &&
      !(pass.scale.pre != 1.0f ? SparseBlocks<true>(pass, limit, i, indices, values)
                               : SparseBlocks<false>(pass, limit, i, indices, values))) {
    return false;
  }
#endif
  for (; i < n; ++i) {
    const float source = SourceAt(pass, i);
    const OneLevel one = LevelAt(pass, i);
    if (pass.addend != nullptr) {
      sums[i] = source;
      *summed = i + 1;
    }
    if (one.level != 0 && !keep(i, one.value)) return false;
  }
  return true;
}

bool DecodeByteLevels(const std::byte* codes, size_t count, float scale, uint32_t levels,
                      float* values) {
  MURMUR_CHECK(levels >= 1 && levels <= 127) << "levels " << levels;
  thread_local std::vector<float> table;
  FillLevelTable(scale, levels, table);
  const auto* in = reinterpret_cast<const uint8_t*>(codes);
  uint32_t too_high = 0;
  size_t i = 0;
#if defined(__AVX2__)
  LevelPass pass;
  pass.levels = levels;
  pass.scale_f = scale;
  pass.level_value = table.data();
  const LevelValues8 value_of(pass);
  const __m256i top = _mm256_set1_epi32(static_cast<int>(levels));
  __m256i above = _mm256_setzero_si256();
  auto decode = [&]<bool kMultiply>() {
    for (; i + 8 <= count; i += 8) {
      uint64_t eight;
      std::memcpy(&eight, in + i, sizeof(eight));
      const __m256i code = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(eight)));
      const __m256i l = _mm256_and_si256(code, _mm256_set1_epi32(0x7F));
      above = _mm256_or_si256(above, _mm256_cmpgt_epi32(l, top));
      const __m256i sign = _mm256_slli_epi32(_mm256_srli_epi32(code, 7), 31);
      // An out-of-range level's lookup stays inside the correction register (l <= 127); its
      // value is discarded with the update.
      _mm256_storeu_ps(values + i, value_of.Of<kMultiply>(_mm256_min_epu32(l, top), sign));
    }
  };
  if (value_of.multiply()) {
    decode.template operator()<true>();
  } else {
    decode.template operator()<false>();
  }
  too_high = static_cast<uint32_t>(_mm256_movemask_epi8(above));
#endif
  for (; i < count; ++i) {
    const uint32_t level = in[i] & 0x7Fu;
    too_high |= level > levels ? 1u : 0u;
    const uint32_t sign = static_cast<uint32_t>(in[i] >> 7) << 31;
    values[i] =
        std::bit_cast<float>(std::bit_cast<uint32_t>(table[std::min(level, levels)]) | sign);
  }
  return too_high == 0;
}

}  // namespace murmur::coding::internal
