#include "coding/selection.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <type_traits>

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "base/check.h"
#include "coding/stream_store.h"

namespace murmur::coding {
namespace {

// |v| as an unsigned integer: for non-negative floats the bit order is the numeric order, and
// NaN and infinity (exponent all ones) lie above every finite magnitude.
inline uint32_t Key(float v) { return std::bit_cast<uint32_t>(v) & 0x7FFFFFFFu; }
inline float KeyMagnitude(uint32_t key) { return std::bit_cast<float>(key); }
constexpr uint32_t kNonFiniteKey = 0x7F800000u;
constexpr size_t kBlock = 16;

// Grows both vectors to hold at least `size` entries (the tail is scratch until trimmed). The
// check is inlined into the collecting loops; the growth is not.
[[gnu::noinline]] void Grow(std::vector<uint32_t>& indices, std::vector<float>& values,
                            size_t size) {
  const size_t grown = std::max({size, indices.size() * 2, values.size() * 2, size_t{1024}});
  indices.resize(grown);
  values.resize(grown);
}
inline void EnsureSize(std::vector<uint32_t>& indices, std::vector<float>& values, size_t size) {
  if (indices.size() < size || values.size() < size) Grow(indices, values, size);
}

#if !defined(__AVX512F__)
// Bitmask of the entries of v[0, 16) whose Key >= key (bit j for entry j).
inline uint32_t AtLeastMask16(const float* v, uint32_t key) {
#if defined(__AVX2__)
  // Keys are below 2^31, so a signed compare against key - 1 is exact (key >= 1).
  const __m256i magnitude_bits = _mm256_set1_epi32(0x7FFFFFFF);
  const __m256i bound = _mm256_set1_epi32(static_cast<int>(key) - 1);
  const __m256i lo =
      _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(v)), magnitude_bits);
  const __m256i hi =
      _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + 8)), magnitude_bits);
  const auto mask_lo =
      static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(lo, bound))));
  const auto mask_hi =
      static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(hi, bound))));
  return mask_lo | (mask_hi << 8);
#else
  uint32_t mask = 0;
  for (uint32_t j = 0; j < kBlock; ++j) mask |= static_cast<uint32_t>(Key(v[j]) >= key) << j;
  return mask;
#endif
}
#endif

// Where a selection reads its values: v itself, a − b computed as it is read (a CHOCO round's
// x − x̂, which then needs no model-sized write and read back), or a + b computed and written to
// `out` as it is read (error feedback's residual + input, formed in the selection's own pass).
// Block(i, tmp) gives the 16 values from i (in tmp, or `out`, when they are computed); Take(i)
// one, as the collecting pass reads it (Sum writes it); At(i) one without writing (samples).
// With AVX-512, Load16(i) gives the block in a register instead (Sum writes it).
struct Plain {
  const float* v;
  bool Streams() const { return false; }
  size_t StreamLead() const { return 0; }
  const float* Block(size_t i, float*) const { return v + i; }
  float At(size_t i) const { return v[i]; }
  void Prefetch(size_t i) const { __builtin_prefetch(v + i); }
  float Take(size_t i) const { return v[i]; }
#if defined(__AVX512F__)
  __m512 Load16(size_t i) const { return _mm512_loadu_ps(v + i); }
#endif
};
struct Difference {
  const float* a;
  const float* b;
  bool Streams() const { return false; }
  size_t StreamLead() const { return 0; }
  const float* Block(size_t i, float* tmp) const {
    for (size_t j = 0; j < kBlock; ++j) tmp[j] = a[i + j] - b[i + j];
    return tmp;
  }
  float At(size_t i) const { return a[i] - b[i]; }
  void Prefetch(size_t i) const {
    __builtin_prefetch(a + i);
    __builtin_prefetch(b + i);
  }
  float Take(size_t i) const { return At(i); }
#if defined(__AVX512F__)
  __m512 Load16(size_t i) const {
    return _mm512_sub_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i));
  }
#endif
};
// With `stream` (Sum::Of: out is larger than the last-level cache) the vector pass writes out
// past the caches (stream_store.h), from its first 64-byte line on: StreamLead() entries before it
// take the scalar loop.
struct Sum {
  const float* a;
  const float* b;
  float* out;
  bool stream = false;
  static Sum Of(const float* a, const float* b, float* out, size_t n) {
    return {a, b, out, internal::ShouldStream(n * sizeof(float))};
  }
  bool Streams() const { return stream; }
  size_t StreamLead() const { return stream ? internal::FloatsToLine(out) : 0; }
  const float* Block(size_t i, float*) const {
    for (size_t j = 0; j < kBlock; ++j) out[i + j] = a[i + j] + b[i + j];
    return out + i;
  }
  float At(size_t i) const { return a[i] + b[i]; }
  void Prefetch(size_t i) const {
    __builtin_prefetch(a + i);
    __builtin_prefetch(b + i);
  }
  float Take(size_t i) const { return out[i] = At(i); }
  // Every a[i] + b[i] of [0, n) into out, for the paths that do not form it while collecting.
  void WriteAll(size_t n) const {
    for (size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
  }
#if defined(__AVX512F__)
  __m512 Load16(size_t i) const {
    const __m512 v = _mm512_add_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i));
    if (stream) {
      _mm512_stream_ps(out + i, v);
    } else {
      _mm512_storeu_ps(out + i, v);
    }
    return v;
  }
#endif
};

// Replaces indices/values with every (i, v[i]) whose Key >= key, in index order. With AVX-512
// each block of 16 is compared and its hits compressed into place in registers, without a
// branch: a sparse selection hits about a block in four, and the branch on each block's mask
// mispredicted often enough to cost more than the loads (the compress goes through a register
// because its memory form is microcoded on Zen 4).
// Otherwise a 16-wide compare per block and a walk over the set bits of its mask.
template <typename Source>
void CollectAtLeast(const Source& source, size_t n, uint32_t key, std::vector<uint32_t>& indices,
                    std::vector<float>& values) {
  MURMUR_DCHECK(key >= 1);
  size_t count = 0;
  size_t i = 0;
  // Entries [i, stop) one at a time (a streamed Sum's lead, the tail).
  auto scalar = [&](size_t stop) {
    EnsureSize(indices, values, count + (stop - i));
    for (; i < stop; ++i) {
      const float x = source.Take(i);
      indices[count] = static_cast<uint32_t>(i);
      values[count] = x;
      count += Key(x) >= key;
    }
  };
#if defined(__AVX512F__)
  {
    scalar(std::min(n, source.StreamLead()));
    const __m512i magnitude_bits = _mm512_set1_epi32(0x7FFFFFFF);
    const __m512i bound = _mm512_set1_epi32(static_cast<int>(key));
    const __m512i step = _mm512_set1_epi32(static_cast<int>(kBlock));
    __m512i position =
        _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(i)),
                         _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    // Room for a whole chunk's hits first, so that the inner loop has no growth check (whose
    // call would spill the constants) and its stores no vector to reload.
    constexpr size_t kChunk = 1024 * kBlock;
    while (i + kBlock <= n) {
      const size_t end = i + std::min(kChunk, (n - i) / kBlock * kBlock);
      EnsureSize(indices, values, count + (end - i));
      uint32_t* __restrict idx = indices.data();
      float* __restrict val = values.data();
      for (; i < end; i += kBlock) {
        const __m512 v = source.Load16(i);
        const __mmask16 hits = _mm512_cmpge_epu32_mask(
            _mm512_and_si512(_mm512_castps_si512(v), magnitude_bits), bound);
        _mm512_storeu_si512(idx + count, _mm512_maskz_compress_epi32(hits, position));
        _mm512_storeu_ps(val + count, _mm512_maskz_compress_ps(hits, v));
        count += static_cast<size_t>(std::popcount(static_cast<uint32_t>(hits)));
        position = _mm512_add_epi32(position, step);
      }
    }
    if (source.Streams()) internal::StreamFence();
  }
#else
  alignas(64) float tmp[kBlock];
  for (; i + kBlock <= n; i += kBlock) {
    const float* v = source.Block(i, tmp);
    uint32_t mask = AtLeastMask16(v, key);
    if (mask == 0) continue;
    EnsureSize(indices, values, count + kBlock);
    uint32_t* idx = indices.data();
    float* val = values.data();
    for (; mask != 0; mask &= mask - 1) {
      const size_t j = static_cast<size_t>(std::countr_zero(mask));
      idx[count] = static_cast<uint32_t>(i + j);
      val[count] = v[j];
      ++count;
    }
  }
#endif
  scalar(n);
  indices.resize(count);
  values.resize(count);
}

void CollectAtLeast(const float* v, size_t n, uint32_t key, std::vector<uint32_t>& indices,
                    std::vector<float>& values) {
  CollectAtLeast(Plain{v}, n, key, indices, values);
}

bool AnyNonFinite(const std::vector<float>& values) {
  uint32_t block_max = 0;
  for (float x : values) block_max = std::max(block_max, Key(x));
  return block_max >= kNonFiniteKey;
}

// Keeps in place, in index order, every entry whose key is above `threshold` and the first
// `take_equal` whose key equals it (ties by lower index); returns how many.
size_t KeepChosen(std::vector<uint32_t>& indices, std::vector<float>& values, uint32_t threshold,
                  size_t take_equal) {
  size_t kept = 0;
  for (size_t h = 0; h < indices.size(); ++h) {
    const uint32_t key = Key(values[h]);
    bool take = key > threshold;
    if (key == threshold && take_equal > 0) {
      take = true;
      --take_equal;
    }
    indices[kept] = indices[h];
    values[kept] = values[h];
    kept += take;
  }
  indices.resize(kept);
  values.resize(kept);
  return kept;
}

// Exact top-k of v[0, n) into indices/values (index order, ties by lower index, no zeros).
// Returns false on a NaN or infinity.
bool RadixTopK(const float* v, size_t n, size_t k, std::vector<uint32_t>& indices,
               std::vector<float>& values) {
  indices.clear();
  values.clear();
  if (n == 0 || k == 0) return true;
  // Pass 1: histogram of the top 10 key bits. For large n, four interleaved copies so that runs
  // of equal buckets (common: magnitudes cluster) do not serialize on one counter; small n (a
  // trim among candidates) keeps the fixed cost down with one. Counts fit 32 bits (n < 2^32).
  std::array<uint32_t, 1024> top{};
  size_t i = 0;
  if (n >= (1u << 16)) {
    std::array<std::array<uint32_t, 1024>, 3> partial{};
    for (; i + 4 <= n; i += 4) {
      ++top[Key(v[i]) >> 21];
      ++partial[0][Key(v[i + 1]) >> 21];
      ++partial[1][Key(v[i + 2]) >> 21];
      ++partial[2][Key(v[i + 3]) >> 21];
    }
    for (const auto& p : partial) {
      for (size_t b = 0; b < 1024; ++b) top[b] += p[b];
    }
  }
  for (; i < n; ++i) ++top[Key(v[i]) >> 21];
  // NaN and infinity fill the buckets from kNonFiniteKey up.
  if (std::accumulate(top.begin() + (kNonFiniteKey >> 21), top.end(), uint32_t{0}) != 0) {
    return false;
  }
  // Bucket of the k-th largest key; bucket 0 also holds the zeros, excluded below.
  uint32_t digit = (kNonFiniteKey >> 21) - 1;
  size_t above = 0;
  while (digit > 0 && above + top[digit] < k) above += top[digit--];
  size_t need = k - std::min(k, above);

  // Pass 2: everything at or above that bucket, in index order.
  CollectAtLeast(v, n, digit << 21, indices, values);

  // Within the bucket, find the exact threshold key with two more digits (11 + 10 bits).
  thread_local std::vector<uint32_t> keys;  // scratch, bounded by the bucket's count
  keys.clear();
  keys.reserve(top[digit]);
  for (float x : values) {
    const uint32_t kk = Key(x);
    if ((kk >> 21) == digit && kk != 0) keys.push_back(kk);
  }
  uint32_t threshold = 0;  // take every non-zero key in the bucket
  size_t take_equal = 0;
  if (keys.size() > need) {
    uint32_t prefix = digit;
    for (const auto& [shift_bits, bits] : {std::pair{10, 11}, std::pair{0, 10}}) {
      const int shift = shift_bits;  // a plain local: lambdas capture it on every compiler
      std::array<uint32_t, 2048> hist{};
      const uint32_t mask = (1u << bits) - 1;
      for (uint32_t kk : keys) ++hist[(kk >> shift) & mask];
      uint32_t d = mask;
      size_t higher = 0;
      while (higher + hist[d] < need) higher += hist[d--];
      need -= higher;
      prefix = (prefix << bits) | d;
      if (shift != 0) {
        std::erase_if(keys, [&](uint32_t kk) { return ((kk >> shift) & mask) != d; });
      }
    }
    threshold = prefix;
    take_equal = need;
  }
  [[maybe_unused]] const size_t kept = KeepChosen(indices, values, threshold, take_equal);
  MURMUR_DCHECK(kept <= k);
  return true;
}

// The key of 0-based rank `rank` in descending order: a histogram of the top 10 bits finds its
// bucket, nth_element orders only that bucket. Reorders `keys`.
uint32_t KthLargestKey(std::vector<uint32_t>& keys, size_t rank) {
  std::array<uint32_t, 1024> top{};
  for (uint32_t kk : keys) ++top[kk >> 21];
  uint32_t digit = 1023;
  size_t above = 0;
  while (above + top[digit] <= rank) above += top[digit--];
  const auto bucket_end = std::partition(keys.begin(), keys.end(),
                                         [digit](uint32_t kk) { return (kk >> 21) == digit; });
  const auto nth = keys.begin() + static_cast<ptrdiff_t>(rank - above);
  std::nth_element(keys.begin(), nth, bucket_end, std::greater<>());
  return *nth;
}

// Keeps the k largest magnitudes of a selection in place, ties by lower index, in index order:
// what RadixTopK over the values would pick, without its passes over the top key bits, which
// candidates mostly share. One histogram of 2048 buckets over the range of their keys finds the
// k-th largest's bucket; only that bucket is ordered (nth_element); one pass keeps the chosen.
// REQUIRES finite, non-zero values, indices.size() == values.size().
void TrimInPlace(std::vector<uint32_t>& indices, std::vector<float>& values, size_t k) {
  const size_t n = values.size();
  if (n <= k) return;
  uint32_t lo = UINT32_MAX, hi = 0;
  for (float v : values) {
    lo = std::min(lo, Key(v));
    hi = std::max(hi, Key(v));
  }
  constexpr int kBits = 11;
  const int shift = std::max(0, static_cast<int>(std::bit_width(hi - lo)) - kBits);
  std::array<uint32_t, size_t{1} << kBits> hist{};
  for (float v : values) ++hist[(Key(v) - lo) >> shift];
  size_t bucket = (hi - lo) >> shift;
  size_t above = 0;
  while (above + hist[bucket] < k) above += hist[bucket--];  // stops: n > k entries in all
  // From `bucket`: 1 .. hist[bucket] of its entries.
  const size_t need = k - above;
  uint32_t threshold = lo + static_cast<uint32_t>(bucket);
  size_t take_equal = need;
  if (shift > 0) {
    thread_local std::vector<uint32_t> keys;  // the bucket's, scratch
    keys.clear();
    for (float v : values) {
      if (((Key(v) - lo) >> shift) == bucket) keys.push_back(Key(v));
    }
    const auto nth = keys.begin() + static_cast<ptrdiff_t>(need - 1);
    std::nth_element(keys.begin(), nth, keys.end(), std::greater<>());
    threshold = *nth;
    take_equal =
        need - static_cast<size_t>(std::count_if(keys.begin(), keys.end(),
                                                 [&](uint32_t key) { return key > threshold; }));
  }
  [[maybe_unused]] const size_t kept = KeepChosen(indices, values, threshold, take_equal);
  MURMUR_DCHECK(kept == k);
}

// The keys of blocks first, first + stride, ... (below `blocks`) of v into `sample` (replaced).
// The blocks lie a stride apart, each on lines of its own that are seldom cached: each is
// prefetched kAhead blocks early, so that the misses overlap instead of following one another.
template <typename Source>
void SampleBlocks(const Source& v, size_t first, size_t blocks, size_t stride,
                  std::vector<uint32_t>& sample) {
  constexpr size_t kAhead = 16;
  sample.resize(first < blocks ? (blocks - first + stride - 1) / stride * kBlock : 0);
  uint32_t* out = sample.data();
  for (size_t b = first, ahead = first + kAhead * stride; b < blocks;
       b += stride, ahead += stride) {
    if (ahead < blocks) v.Prefetch(ahead * kBlock);
    for (size_t j = 0; j < kBlock; ++j) *out++ = Key(v.At(b * kBlock + j));
  }
}

// Exact top-k through a sampled candidate threshold: a key low enough that, by a sample of v,
// well over k entries pass it; one vectorized pass collects them (index order), and the trim
// among the candidates (TrimInPlace) picks exactly what RadixTopK would pick over v — every
// entry at or above the k-th largest key passed, ties keep index order. False when fewer than k
// passed (the caller then runs RadixTopK over v); `ok` is false on a NaN or infinity.
template <typename Source>
bool CandidateTopK(const Source& v, size_t n, size_t k, std::vector<uint32_t>& indices,
                   std::vector<float>& values, bool& ok) {
  // Blocks of 16 floats at a fixed odd stride from the middle of the first gap: deterministic
  // (the result does not depend on the sample, only the speed does).
  constexpr size_t kSampleBlocks = 256;  // 4096 keys
  const size_t blocks = n / kBlock;
  const size_t stride = std::max<size_t>(1, blocks / kSampleBlocks) | 1;
  thread_local std::vector<uint32_t> sample;  // scratch
  SampleBlocks(v, stride / 2, blocks, stride, sample);
  // Expected sample entries above the k-th largest: m k / n. Aim at 1.5 times that plus four
  // standard deviations, so that fewer than k pass only in a rare tail (then the full select).
  const double expected =
      static_cast<double>(sample.size()) * static_cast<double>(k) / static_cast<double>(n);
  const auto rank = static_cast<size_t>(1.5 * expected + 4 * std::sqrt(expected) + 1);
  if (rank >= sample.size()) return false;
  const uint32_t threshold = std::max<uint32_t>(KthLargestKey(sample, rank), 1);
  if (threshold >= kNonFiniteKey) {
    ok = false;
    return true;
  }
  CollectAtLeast(v, n, threshold, indices, values);  // NaN and infinity pass any threshold
  if (AnyNonFinite(values)) {
    ok = false;
    return true;
  }
  if (indices.size() < k) return false;
  TrimInPlace(indices, values, k);
  ok = true;
  return true;
}

// Sparse selections of long vectors (the CHOCO rounds' top 1 %) take the candidate path: one
// histogram-free pass instead of two, most of it a vector compare.
bool UsesCandidates(size_t n, size_t k) { return n >= (size_t{1} << 15) && k > 0 && k * 16 <= n; }

}  // namespace

bool TopK(std::span<const float> v, size_t k, std::vector<uint32_t>& indices,
          std::vector<float>& values) {
  MURMUR_CHECK_LE(v.size(), size_t{UINT32_MAX});
  if (UsesCandidates(v.size(), k)) {
    bool ok = true;
    if (CandidateTopK(Plain{v.data()}, v.size(), k, indices, values, ok)) return ok;
  }
  return RadixTopK(v.data(), v.size(), k, indices, values);
}

bool TopKOfDifference(std::span<const float> a, std::span<const float> b, size_t k,
                      std::vector<uint32_t>& indices, std::vector<float>& values,
                      std::vector<float>& scratch) {
  MURMUR_CHECK_EQ(a.size(), b.size());
  MURMUR_CHECK_LE(a.size(), size_t{UINT32_MAX});
  if (UsesCandidates(a.size(), k)) {
    bool ok = true;
    if (CandidateTopK(Difference{a.data(), b.data()}, a.size(), k, indices, values, ok)) return ok;
  }
  scratch.resize(a.size());
  for (size_t i = 0; i < a.size(); ++i) scratch[i] = a[i] - b[i];
  return RadixTopK(scratch.data(), scratch.size(), k, indices, values);
}

bool TopKOfSum(std::span<const float> a, std::span<const float> b, size_t k,
               std::vector<uint32_t>& indices, std::vector<float>& values, std::span<float> sum) {
  MURMUR_CHECK(a.size() == b.size() && a.size() == sum.size());
  MURMUR_CHECK_LE(a.size(), size_t{UINT32_MAX});
  const Sum source = Sum::Of(a.data(), b.data(), sum.data(), a.size());
  if (UsesCandidates(a.size(), k)) {
    bool ok = true;
    if (CandidateTopK(source, a.size(), k, indices, values, ok)) return ok;
  }
  source.WriteAll(a.size());  // again if the candidates' pass wrote it: a rare path
  return RadixTopK(sum.data(), sum.size(), k, indices, values);
}

bool AtLeast(std::span<const float> v, float tau, std::vector<uint32_t>& indices,
             std::vector<float>& values) {
  MURMUR_CHECK(tau > 0 && std::isfinite(tau)) << "threshold " << tau;
  MURMUR_CHECK_LE(v.size(), size_t{UINT32_MAX});
  CollectAtLeast(v.data(), v.size(), Key(tau), indices, values);
  return !AnyNonFinite(values);
}

namespace {

// SampledTopK of the values `source` gives, which are (once formed) those of v: the first
// collecting pass reads `source` and, for a Sum, writes v; later rounds read v.
template <typename Source>
SampledTopKStats SampledTopKOf(const Source& source, std::span<const float> v, size_t k,
                               const SampledTopKOptions& options, std::mt19937_64& rng,
                               std::vector<uint32_t>& indices, std::vector<float>& values) {
  MURMUR_CHECK_LE(v.size(), size_t{UINT32_MAX});
  SampledTopKStats stats;
  bool formed = false;  // v holds every value (the first collecting pass wrote it)
  auto form = [&] {
    if constexpr (std::is_same_v<Source, Sum>) {
      if (!formed) source.WriteAll(v.size());
    }
    formed = true;
  };
  indices.clear();
  values.clear();
  const size_t n = v.size();
  if (n == 0 || k == 0) {
    form();
    return stats;
  }
  k = std::min(k, n);
  auto exact = [&] {
    form();
    stats.non_finite = !TopK(v, k, indices, values);
    stats.exact_fallback = true;
    return stats;
  };
  const auto samples_wanted = static_cast<size_t>(
      std::max(std::ceil(options.sample_fraction * static_cast<double>(n)),
               std::ceil(2.0 * static_cast<double>(n) / static_cast<double>(k))));
  if (samples_wanted * 4 >= n) return exact();  // sampling would read most of v anyway

  // Whole 16-float blocks (one cache line when aligned), every stride-th with a random start:
  // the same sample size as single floats at a 16th of the memory traffic. The odd stride keeps
  // power-of-two layouts of weight matrices from aliasing with it.
  const size_t blocks = n / kBlock;
  const size_t blocks_wanted = std::max<size_t>(1, (samples_wanted + kBlock - 1) / kBlock);
  const size_t stride = std::max<size_t>(1, blocks / blocks_wanted) | 1;
  const size_t start = std::uniform_int_distribution<size_t>(0, stride - 1)(rng);
  thread_local std::vector<uint32_t> sample;  // scratch
  SampleBlocks(source, start, blocks, stride, sample);
  if (sample.empty()) return exact();
  const auto kth = static_cast<size_t>(std::ceil(static_cast<double>(sample.size()) * options.aim *
                                                 static_cast<double>(k) / static_cast<double>(n)));
  const size_t rank = std::clamp<size_t>(kth, 1, sample.size()) - 1;
  const uint32_t sampled = KthLargestKey(sample, rank);
  if (sampled >= kNonFiniteKey) {
    stats.non_finite = true;
    return stats;
  }
  uint32_t threshold = std::max<uint32_t>(sampled, 1);  // 1: every non-zero passes

  const auto lower = static_cast<size_t>(std::ceil(options.lower * static_cast<double>(k)));
  for (int round = 0;; ++round) {
    if (round == 0) {
      CollectAtLeast(source, n, threshold, indices, values);
      formed = true;
    } else {
      CollectAtLeast(v.data(), n, threshold, indices, values);
    }
    if (AnyNonFinite(values)) {
      stats.non_finite = true;
      return stats;
    }
    stats.threshold = KeyMagnitude(threshold);
    const size_t count = indices.size();
    if (round == 0) stats.first_count = count;
    if (count > k) {
      // Over k, by a little (the aim) or a lot: trim to exactly k by magnitude, among the
      // candidates only. The reference code truncates arbitrarily inside a 1.3 k band.
      TrimInPlace(indices, values, k);
      stats.exact_candidates = true;
      return stats;
    }
    if (count >= lower) return stats;
    const auto nonzeros =
        static_cast<size_t>(std::count_if(v.begin(), v.end(), [](float x) { return x != 0; }));
    if (count == nonzeros) return stats;  // every non-zero is in: nothing left to lower for
    if (round == options.max_adaptations) return exact();
    ++stats.adaptations;
    threshold = std::max<uint32_t>(Key(KeyMagnitude(threshold) * 0.8f), 1);
  }
}

}  // namespace

bool AtLeastOfSum(std::span<const float> a, std::span<const float> b, float tau,
                  std::vector<uint32_t>& indices, std::vector<float>& values,
                  std::span<float> sum) {
  MURMUR_CHECK(tau > 0 && std::isfinite(tau)) << "threshold " << tau;
  MURMUR_CHECK(a.size() == b.size() && a.size() == sum.size());
  MURMUR_CHECK_LE(a.size(), size_t{UINT32_MAX});
  CollectAtLeast(Sum::Of(a.data(), b.data(), sum.data(), a.size()), a.size(), Key(tau), indices,
                 values);
  return !AnyNonFinite(values);
}

SampledTopKStats SampledTopK(std::span<const float> v, size_t k, const SampledTopKOptions& options,
                             std::mt19937_64& rng, std::vector<uint32_t>& indices,
                             std::vector<float>& values) {
  return SampledTopKOf(Plain{v.data()}, v, k, options, rng, indices, values);
}

SampledTopKStats SampledTopKOfSum(std::span<const float> a, std::span<const float> b, size_t k,
                                  const SampledTopKOptions& options, std::mt19937_64& rng,
                                  std::vector<uint32_t>& indices, std::vector<float>& values,
                                  std::span<float> sum) {
  MURMUR_CHECK(a.size() == b.size() && a.size() == sum.size());
  return SampledTopKOf(Sum::Of(a.data(), b.data(), sum.data(), a.size()), sum, k, options, rng,
                       indices, values);
}

}  // namespace murmur::coding
