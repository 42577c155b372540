#include "coding/dense_codec.h"

#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>

#include "base/check.h"
#include "coding/stream_store.h"
#include "coding/update_codec.h"
#include "coding/update_wire.h"
#include "coding/vector_ops.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#include <immintrin.h>
#define MURMUR_DENSE_AVX512 1
#endif

// GCC 12's avx512fintrin.h fills unused destinations with a self-initialized register
// (`__m512i __Y = __Y`), which -Wmaybe-uninitialized reports wherever those intrinsics inline
// for some targets (-march=skylake-avx512, not znver4; GCC bug 105593, fixed in GCC 13), so a
// -Werror build for such a CPU failed here. As in level_codec.cc.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace murmur::coding::internal {
namespace {

// Values per block of the writing pass: its bytes (8 KB as fp16) are hashed while in L1.
constexpr size_t kBlock = 4096;

// A dense update of `op` in `out` without clearing its buffers first: Clear then resize would
// zero every value before the pass that writes them.
void PrepareDense(Operator op, size_t dimension, const ValueFormat& format, Update& out) {
  out.op = op;
  out.dimension = static_cast<uint32_t>(dimension);
  out.dense = true;
  out.indices.clear();
  out.values.resize(dimension);
  out.format = format;
}

// none: every value as raw fp32. One pass copies into the values and the payload and checks
// finiteness on the way (without error feedback nothing but the outputs changes on a refusal).
// Above the last-level cache each block goes to an L1 stage and from there past the caches into
// both outputs (stream_store.h).
DenseResult EncodeRaw(std::span<const float> input, Update& out, std::vector<std::byte>& encoded,
                      bool plus_zero) {
  const size_t d = input.size();
  PrepareDense(Operator::kNone, d, ValueFormat::RawFloat32(), out);
  std::byte* header = PrepareBytes(out, encoded);
  std::byte* payload = header + kUpdateHeaderBytes;
  float* __restrict values = out.values.data();
  const float* __restrict in = input.data();
  // residual + input with a zero residual (dense_codec.h): + 0.0f turns -0 into +0, as the
  // sum does.
  const float zero = plus_zero ? 0.0f : -0.0f;  // x + -0.0f == x for every x, -0 included
  const bool stream = ShouldStream(2 * d * sizeof(float));
  alignas(64) float stage[kBlock];
  PayloadHash hash;
  uint32_t non_finite = 0;
  for (size_t begin = 0; begin < d; begin += kBlock) {
    const size_t end = std::min(d, begin + kBlock);
    const size_t bytes = (end - begin) * sizeof(float);
    size_t i = begin;
#if defined(MURMUR_DENSE_AVX512)
    // Each vector goes to both outputs (or the stage) from the register (a copy of the block from
    // `values` into the payload read it back: 0.14-0.17x a cache-resident memcpy at 1 M, against
    // 0.45-0.5x for two stores).
    const __m512 z = _mm512_set1_ps(zero);
    const __m512i exponent = _mm512_set1_epi32(0x7F800000);
    __m512i largest = _mm512_setzero_si512();
    auto* out = reinterpret_cast<float*>(payload);
    for (; i + 16 <= end; i += 16) {
      const __m512 v = _mm512_add_ps(_mm512_loadu_ps(in + i), z);
      if (stream) {
        _mm512_store_ps(stage + (i - begin), v);
      } else {
        _mm512_storeu_ps(values + i, v);
        _mm512_storeu_ps(out + i, v);
      }
      largest = _mm512_max_epu32(largest, _mm512_and_si512(_mm512_castps_si512(v), exponent));
    }
    non_finite |= IsNonFinite(std::bit_cast<float>(_mm512_reduce_max_epu32(largest)));
#endif
    float* block = stream ? stage : values + begin;
    for (; i < end; ++i) {
      const float v = in[i] + zero;
      non_finite |= IsNonFinite(v);
      block[i - begin] = v;
    }
    if (stream) {
      PrefetchFloats(in, end, std::min(d, end + kBlock));
      StreamCopy(values + begin, stage, bytes);
      StreamCopy(payload + begin * sizeof(float), stage, bytes);
      hash.Add(reinterpret_cast<const std::byte*>(stage), bytes);
      continue;
    }
#if defined(MURMUR_DENSE_AVX512)
    // The vector loop wrote the payload; the scalar tail (from i0) did not.
    const size_t i0 = begin + (end - begin) / 16 * 16;
    std::memcpy(payload + i0 * sizeof(float), values + i0, (end - i0) * sizeof(float));
#else
    std::memcpy(payload + begin * sizeof(float), values + begin, bytes);
#endif
    hash.Add(payload + begin * sizeof(float), bytes);
  }
  if (stream) StreamFence();
  if (non_finite != 0) return DenseResult::kNonFinite;
  hash.Finish(header);
  return DenseResult::kDone;
}

#if defined(MURMUR_DENSE_AVX512)
// fp16's pass 2 with the hardware conversion (vcvtps2ph, F16C's instruction at 16 lanes), for
// the entries where it gives the definition's bits. The window's codes are IEEE half codes with
// the exponent one higher: a kept value of biased float exponent e has code exponent e - base in
// [1, 31], where half has [1, 30] for normals. Scaling by 2^(111 - base), exact for these values,
// puts e - base - 1 in half's exponent field, and the conversion rounds the mantissa to nearest
// even as RoundToFp16Precision does. The entries where the two differ are recognized from the
// unrounded magnitude bits (a rounds up into binade X exactly when a >= X - 0x1000) and left to
// the definition, a vector at a time:
// - code exponent 1 (half would hold them as subnormals, with fewer mantissa bits);
// - float subnormals, which the definition keeps bit for bit below every window;
// - magnitudes that round past the largest float, which the definition saturates.
// Everything else is a kept value of code exponent >= 2 or flushed to a signed zero.
class Fp16Converter {
 public:
  explicit Fp16Converter(uint32_t base)
      : usable_(base <= 237),  // 2^(111 - base) and its inverse are normal floats
        band_start_(_mm512_set1_epi32(static_cast<int>(((base + 1) << 23) - 0x1000u))),
        kept_from_(_mm512_set1_epi32(static_cast<int>(((base + 2) << 23) - 0x1000u))),
        scale_(_mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>((238 - base) << 23)))),
        unscale_(_mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>((16 + base) << 23)))) {}

  bool usable() const { return usable_; }

  // Writes 16 values, codes and (kFeedback) residuals; false (nothing written) when one of the
  // 16 entries needs the definition.
  template <bool kFeedback, bool kStream = false>
  bool Encode16(const float* in, float* r, float* values, uint16_t* codes) const {
    __m512 s = _mm512_loadu_ps(in);
    if constexpr (kFeedback) s = _mm512_add_ps(_mm512_loadu_ps(r), s);
    const __m512i bits = _mm512_castps_si512(s);
    const __m512i a = _mm512_and_si512(bits, _mm512_set1_epi32(0x7FFFFFFF));
    // 0 < a < 0x7FF000 (rounds to a float subnormal) | a in the code-exponent-1 band | a rounds
    // past the largest float.
    const __mmask16 hard =
        _mm512_cmplt_epu32_mask(_mm512_sub_epi32(a, _mm512_set1_epi32(1)),
                                _mm512_set1_epi32(0x7FF000 - 1)) |
        _mm512_cmplt_epu32_mask(_mm512_sub_epi32(a, band_start_), _mm512_set1_epi32(1 << 23)) |
        _mm512_cmpge_epu32_mask(a, _mm512_set1_epi32(0x7F7FF000));
    if (hard != 0) return false;
    const __mmask16 kept = _mm512_cmpge_epu32_mask(a, kept_from_);
    const __m256i half =
        _mm512_cvtps_ph(_mm512_mul_ps(s, scale_), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256i code =
        _mm256_mask_blend_epi16(kept, _mm256_and_si256(half, _mm256_set1_epi16(-0x8000)),
                                _mm256_add_epi16(half, _mm256_set1_epi16(0x400)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes), code);
    const __m512 sign = _mm512_castsi512_ps(
        _mm512_and_si512(bits, _mm512_set1_epi32(static_cast<int>(0x80000000u))));
    const __m512 value =
        _mm512_mask_blend_ps(kept, sign, _mm512_mul_ps(_mm512_cvtph_ps(half), unscale_));
    if constexpr (kStream) {
      _mm512_stream_ps(values, value);
    } else {
      _mm512_storeu_ps(values, value);
    }
    if constexpr (kFeedback) _mm512_storeu_ps(r, _mm512_sub_ps(s, value));
    return true;
  }

 private:
  bool usable_;
  __m512i band_start_;
  __m512i kept_from_;
  __m512 scale_;
  __m512 unscale_;
};
#endif

// fp16 with its full 5-bit window. Pass 1 reads the sources for what the window needs: the
// largest magnitude's bits (also the finiteness test: a NaN or infinity has the largest) and
// the smallest one that rounds to a normal float. Rounding is monotone in the magnitude bits,
// so rounding those two gives the rounded values' exponent range (QuantizeFloats' emax, emin)
// without rounding every value twice. Pass 2 writes value, 16-bit code and residual
// (QuantizeFloats' rounding and flush, EncodeValues' code, residual = source - value).
// The fp16 window of residual + input (or the input): the exponent range its rounded values
// span, or none when a value is not finite (*non_finite) or the range needs other than 5 bits.
template <bool kFeedback>
std::optional<ValueFormat> Fp16Window(const float* __restrict in, const float* __restrict r,
                                      size_t d, bool* non_finite) {
  // The smallest magnitude bits that round to a normal float (0x7FF000 is a tie that rounds up
  // to 0x800000, to even).
  constexpr uint32_t kRoundsToNormal = 0x7FF000u;
  uint32_t largest = 0, smallest_normal = 0xFFFFFFFFu;
  for (size_t i = 0; i < d; ++i) {
    const float s = kFeedback ? r[i] + in[i] : in[i];
    const uint32_t magnitude = std::bit_cast<uint32_t>(s) & 0x7FFFFFFFu;
    largest = magnitude > largest ? magnitude : largest;
    // Spelled as an OR of a mask: GCC 12 vectorizes no min fed by a select.
    const uint32_t candidate = magnitude | (magnitude < kRoundsToNormal ? 0xFFFFFFFFu : 0u);
    smallest_normal = candidate < smallest_normal ? candidate : smallest_normal;
  }
  *non_finite = largest >= 0x7F800000u;
  if (*non_finite) return std::nullopt;
  uint32_t emin = 255, emax = 0;
  ExtendExponentRange(RoundToFp16Precision(largest), emin, emax);
  if (smallest_normal != 0xFFFFFFFFu) {
    ExtendExponentRange(RoundToFp16Precision(smallest_normal), emin, emax);
  }
  const ValueFormat format = FloatWindow(emin, emax, 10);
  if (format.exponent_bits != 5) return std::nullopt;
  return format;
}

template <bool kFeedback>
DenseResult EncodeFp16(std::span<const float> input, std::span<float> residual, Update& out,
                       std::vector<std::byte>& encoded) {
  const size_t d = input.size();
  const float* __restrict in = input.data();
  float* __restrict r = residual.data();
  bool non_finite = false;
  const std::optional<ValueFormat> window = Fp16Window<kFeedback>(in, r, d, &non_finite);
  if (non_finite) return DenseResult::kNonFinite;
  if (!window.has_value()) return DenseResult::kNotHandled;
  const ValueFormat format = *window;

  PrepareDense(Operator::kFp16, d, format, out);
  std::byte* header = PrepareBytes(out, encoded);
  // Codes are written in place: the payload starts 40 bytes into the vector's storage.
  auto* __restrict codes = reinterpret_cast<uint16_t*>(header + kUpdateHeaderBytes);
  float* __restrict values = out.values.data();
  // Magnitude bits from which a rounded value is kept (exponent > base); normal values below
  // are flushed to signed zero. The code's magnitude is the kept bits >> 13, the exponent made
  // relative to the base: 5 exponent bits and 10 mantissa bits, or (exponent 0) the subnormal's
  // top mantissa bits.
  const uint32_t kept_from = (format.exponent_base + 1u) << 23;
  const uint32_t rebase = static_cast<uint32_t>(format.exponent_base) << 10;
  // One entry as the definition says (QuantizeFloats' rounding and flush, EncodeValues' code).
  // Entry i's code goes to *code: the payload, or (streaming) the block's stage.
  auto entry = [&](size_t i, uint16_t* code) {
    const float s = kFeedback ? r[i] + in[i] : in[i];
    const uint32_t bits = RoundToFp16Precision(std::bit_cast<uint32_t>(s));
    const uint32_t sign = bits & 0x80000000u;
    const uint32_t magnitude = bits & 0x7FFFFFFFu;
    // Masks, not branches, so that the loop vectorizes.
    const uint32_t kept = magnitude >= kept_from ? 0xFFFFFFFFu : 0u;
    const uint32_t small = magnitude < 0x800000u ? 0xFFFFFFFFu : 0u;  // zero or subnormal
    const uint32_t sent = magnitude & (kept | small);
    const float value = std::bit_cast<float>(sign | sent);
    values[i] = value;
    if constexpr (kFeedback) r[i] = s - value;
    *code = static_cast<uint16_t>(((sent >> 13) - (rebase & kept)) | (sign >> 16));
  };
#if defined(MURMUR_DENSE_AVX512)
  Fp16Converter convert(format.exponent_base);
#endif
  PayloadHash hash;
  // Above the last-level cache the values go past it from the register (a non-temporal store
  // needs a 64-byte-aligned destination: each block's first entries up to a line boundary take
  // the definition's loop). The codes, 40 bytes into the payload, cannot be aligned with them:
  // they go to an L1 stage, hashed there and StreamCopied out after the block.
  const bool stream = ShouldStream(d * (sizeof(float) + sizeof(uint16_t)));
#if defined(MURMUR_DENSE_AVX512)
  alignas(64) uint16_t stage[kBlock];
#endif
  for (size_t begin = 0; begin < d; begin += kBlock) {
    const size_t end = std::min(d, begin + kBlock);
    size_t i = begin;
#if defined(MURMUR_DENSE_AVX512)
    if (convert.usable() && stream) {
      // Up to the values' next 64-byte line, then whole lines past the caches; the codes go to
      // an L1 stage, hashed there and streamed out after the block.
      const size_t lead = FloatsToLine(values + begin);
      for (; i < std::min(end, begin + lead); ++i) entry(i, stage + (i - begin));
      for (; i + 16 <= end; i += 16) {
        if (!convert.Encode16<kFeedback, true>(in + i, r + i, values + i, stage + (i - begin))) {
          for (size_t j = i; j < i + 16; ++j) entry(j, stage + (j - begin));
        }
      }
      for (; i < end; ++i) entry(i, stage + (i - begin));
      const size_t bytes = (end - begin) * sizeof(uint16_t);
      hash.Add(reinterpret_cast<const std::byte*>(stage), bytes);
      StreamCopy(codes + begin, stage, bytes);
      continue;
    } else if (convert.usable()) {
      for (; i + 16 <= end; i += 16) {
        if (!convert.Encode16<kFeedback>(in + i, r + i, values + i, codes + i)) {
          for (size_t j = i; j < i + 16; ++j) entry(j, codes + j);
        }
      }
    }
#endif
    for (; i < end; ++i) entry(i, codes + i);
    hash.Add(reinterpret_cast<const std::byte*>(codes + begin), (end - begin) * sizeof(uint16_t));
  }
  if (stream) StreamFence();
  hash.Finish(header);
  return DenseResult::kDone;
}

}  // namespace

namespace {
XXH3_state_t* State(void* state) { return static_cast<XXH3_state_t*>(state); }
}  // namespace

PayloadHash::PayloadHash() : state_(XXH3_createState()) {
  MURMUR_CHECK(state_ != nullptr && XXH3_64bits_reset(State(state_)) == XXH_OK);
}
PayloadHash::~PayloadHash() { XXH3_freeState(State(state_)); }
void PayloadHash::Add(const std::byte* data, size_t size) {
  MURMUR_CHECK(XXH3_64bits_update(State(state_), data, size) == XXH_OK);
}
void PayloadHash::Finish(std::byte* header) {
  wire::Store<uint64_t>(header + 32,
                        XXH3_64bits_withSeed(header, 32, XXH3_64bits_digest(State(state_))));
}

std::byte* PrepareBytes(const Update& out, std::vector<std::byte>& encoded) {
  encoded.resize(kUpdateHeaderBytes +
                 wire::ValueBytes(out.values.size(), out.format.BitsPerValue()));
  wire::WriteHeader(out, IndexCoding::kAll, 0, encoded.data());
  return encoded.data();
}

DenseResult CompressEncodeDense(Operator op, std::span<const float> input,
                                std::span<float> residual, Update& out,
                                std::vector<std::byte>& encoded) {
  MURMUR_CHECK(residual.empty() || residual.size() == input.size());
  switch (op) {
    case Operator::kNone:
      return EncodeRaw(input, out, encoded, !residual.empty());
    case Operator::kFp16:
      return residual.empty() ? EncodeFp16<false>(input, residual, out, encoded)
                              : EncodeFp16<true>(input, residual, out, encoded);
    default:
      MURMUR_CHECK(false) << "not a dense float operator: " << OperatorName(op);
  }
  return DenseResult::kNotHandled;
}

}  // namespace murmur::coding::internal
