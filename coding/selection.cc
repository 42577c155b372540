#include "coding/selection.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <functional>

#include "base/check.h"

namespace murmur::coding {
namespace {

// |v| as an unsigned integer: for non-negative floats the bit order is the numeric order.
inline uint32_t MagnitudeKey(float v) { return std::bit_cast<uint32_t>(v) & 0x7FFFFFFFu; }
inline float KeyMagnitude(uint32_t key) { return std::bit_cast<float>(key); }

// Positions (increasing) of the k largest keys among n, ties by lower position, zero keys
// never selected. key(i) must be cheap: it is read three times per position.
template <typename KeyFn>
void RadixTopK(size_t n, KeyFn key, size_t k, std::vector<uint32_t>& out) {
  out.clear();
  if (n == 0 || k == 0) return;
  std::array<size_t, 2048> top{};
  size_t zeros = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t kk = key(i);
    ++top[kk >> 20];
    zeros += kk == 0;
  }
  k = std::min(k, n - zeros);
  if (k == 0) return;

  // Bucket of the k-th largest key, and how many keys lie strictly above it.
  uint32_t digit = 2047;
  size_t above = 0;
  while (above + top[digit] < k) above += top[digit--];
  size_t need = k - above;  // still to take from keys with this prefix
  uint32_t prefix = digit;

  std::vector<uint32_t> candidates;
  candidates.reserve(top[digit]);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t kk = key(i);
    if ((kk >> 20) == digit) candidates.push_back(kk);
  }
  for (const int shift : {10, 0}) {
    std::array<size_t, 1024> hist{};
    for (uint32_t c : candidates) ++hist[(c >> shift) & 1023u];
    uint32_t d = 1023;
    size_t higher = 0;
    while (higher + hist[d] < need) higher += hist[d--];
    need -= higher;
    prefix = (prefix << 10) | d;
    if (shift != 0) {
      std::erase_if(candidates, [&](uint32_t c) { return ((c >> shift) & 1023u) != d; });
    }
  }
  // prefix is now the k-th largest key: take every larger key and the first `need` equal ones.
  const uint32_t threshold = prefix;
  out.reserve(k);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t kk = key(i);
    if (kk > threshold) {
      out.push_back(static_cast<uint32_t>(i));
    } else if (kk == threshold && need > 0) {
      out.push_back(static_cast<uint32_t>(i));
      --need;
    }
  }
  MURMUR_DCHECK(out.size() == k);
}

}  // namespace

void TopKIndices(std::span<const float> v, size_t k, std::vector<uint32_t>& out) {
  MURMUR_CHECK_LE(v.size(), size_t{UINT32_MAX});
  const float* data = v.data();
  RadixTopK(v.size(), [data](size_t i) { return MagnitudeKey(data[i]); }, k, out);
}

void ThresholdIndices(std::span<const float> v, float tau, std::vector<uint32_t>& out) {
  MURMUR_CHECK(tau > 0) << "threshold " << tau;
  MURMUR_CHECK_LE(v.size(), size_t{UINT32_MAX});
  out.clear();
  const uint32_t key = MagnitudeKey(tau);
  for (size_t i = 0; i < v.size(); ++i) {
    if (MagnitudeKey(v[i]) >= key) out.push_back(static_cast<uint32_t>(i));
  }
}

SampledTopKStats SampledTopKIndices(std::span<const float> v, size_t k,
                                    const SampledTopKOptions& options, std::mt19937_64& rng,
                                    std::vector<uint32_t>& out) {
  MURMUR_CHECK_LE(v.size(), size_t{UINT32_MAX});
  SampledTopKStats stats;
  out.clear();
  const size_t n = v.size();
  if (n == 0 || k == 0) return stats;
  k = std::min(k, n);
  const auto samples_wanted = static_cast<size_t>(
      std::max(std::ceil(options.sample_fraction * static_cast<double>(n)),
               std::ceil(2.0 * static_cast<double>(n) / static_cast<double>(k))));
  if (samples_wanted * 4 >= n) {  // sampling would read most of v anyway
    TopKIndices(v, k, out);
    stats.exact_fallback = true;
    return stats;
  }
  const size_t stride = (n / samples_wanted) | 1;
  const size_t start = std::uniform_int_distribution<size_t>(0, stride - 1)(rng);
  std::vector<uint32_t> sample;
  sample.reserve(n / stride + 1);
  for (size_t i = start; i < n; i += stride) sample.push_back(MagnitudeKey(v[i]));
  const auto kth = static_cast<size_t>(std::ceil(static_cast<double>(sample.size()) *
                                                 options.aim * static_cast<double>(k) /
                                                 static_cast<double>(n)));
  const size_t rank = std::clamp<size_t>(kth, 1, sample.size()) - 1;
  std::nth_element(sample.begin(), sample.begin() + static_cast<ptrdiff_t>(rank), sample.end(),
                   std::greater<>());
  uint32_t threshold = std::max<uint32_t>(sample[rank], 1);  // 1: every non-zero passes

  const auto lower = static_cast<size_t>(std::ceil(options.lower * static_cast<double>(k)));
  std::vector<uint32_t>& candidates = out;
  for (int round = 0;; ++round) {
    candidates.clear();
    size_t nonzeros = 0;
    for (size_t i = 0; i < n; ++i) {
      const uint32_t kk = MagnitudeKey(v[i]);
      nonzeros += kk != 0;
      if (kk >= threshold) candidates.push_back(static_cast<uint32_t>(i));
    }
    stats.threshold = KeyMagnitude(threshold);
    if (round == 0) stats.first_count = candidates.size();
    const size_t count = candidates.size();
    if (count > k) {
      // Over k, by a little or a lot: trim to exactly k by magnitude. The reference code
      // truncates arbitrarily inside its 1.3 k band; an exact trim among the candidates costs
      // a pass over them only.
      std::vector<uint32_t> chosen;
      const uint32_t* c = candidates.data();
      const float* data = v.data();
      RadixTopK(count, [c, data](size_t i) { return MagnitudeKey(data[c[i]]); }, k, chosen);
      for (uint32_t& position : chosen) position = c[position];
      out.swap(chosen);
      stats.exact_candidates = true;
      return stats;
    }
    if (count >= lower || count == nonzeros) return stats;
    if (round == options.max_adaptations) {
      TopKIndices(v, k, out);
      stats.exact_fallback = true;
      return stats;
    }
    ++stats.adaptations;
    threshold = std::max<uint32_t>(MagnitudeKey(KeyMagnitude(threshold) * 0.8f), 1);
  }
}

}  // namespace murmur::coding
