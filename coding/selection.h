#pragma once
// Choosing which coordinates a sparse update sends: exact top-k, a fixed threshold, and DGC's
// sampled threshold. None selects an exact zero (sending one carries no information). Each scans
// v once or twice at memory speed: blocks of 16 are tested with a vectorized max first and only
// blocks holding a hit are walked, which also makes a NaN or infinity (a magnitude above every
// finite one) impossible to miss, so the caller needs no separate finiteness pass.

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace murmur::coding {

// Selections come back as increasing positions with their values (values[i] = v[indices[i]]),
// replacing the vectors' contents and keeping their capacity.

// The k largest |v|, ties broken by lower index; min(k, non-zeros of v) positions.
// Radix select on the magnitude bits: one histogram pass (10-bit top digit), one pass that
// collects the entries at or above the k-th largest's bucket, and two small digit rounds over
// that bucket; no sort, no copy of v. For k <= |v| / 16 of a long v, a sample of 4096 keys first
// sets a candidate threshold that ~1.5 k entries pass: one collecting pass and a trim among the
// candidates (one histogram over their keys' range, an nth_element in the k-th largest's
// bucket) give the same selection (the full select runs when fewer than k pass).
// Returns false if v holds a NaN or infinity.
[[nodiscard]] bool TopK(std::span<const float> v, size_t k, std::vector<uint32_t>& indices,
                        std::vector<float>& values);

// TopK(v) of v = a − b (float subtraction per entry), without writing v where the candidate path
// applies: the sample and the collecting pass compute a[i] − b[i] as they read. Otherwise, and
// when too few candidates pass, v is written to `scratch` and the full select runs over it.
// Returns false if some a[i] − b[i] is a NaN or infinity. REQUIRES a.size() == b.size().
[[nodiscard]] bool TopKOfDifference(std::span<const float> a, std::span<const float> b, size_t k,
                                    std::vector<uint32_t>& indices, std::vector<float>& values,
                                    std::vector<float>& scratch);

// Every |v| >= tau. REQUIRES tau > 0. Returns false if v holds a NaN or infinity.
[[nodiscard]] bool AtLeast(std::span<const float> v, float tau, std::vector<uint32_t>& indices,
                           std::vector<float>& values);

// The *OfSum selections select from v = a + b (float addition per entry) and write v into `sum`
// in the same pass: error feedback's residual + input, formed while it is selected from instead
// of in a pass of its own. On true, `sum` holds every a[i] + b[i] and the selection is the one
// of the plain function over it; on false (some sum is a NaN or infinity) `sum` holds
// unspecified contents. REQUIRES a, b and sum of one size; sum overlaps neither.
[[nodiscard]] bool TopKOfSum(std::span<const float> a, std::span<const float> b, size_t k,
                             std::vector<uint32_t>& indices, std::vector<float>& values,
                             std::span<float> sum);
[[nodiscard]] bool AtLeastOfSum(std::span<const float> a, std::span<const float> b, float tau,
                                std::vector<uint32_t>& indices, std::vector<float>& values,
                                std::span<float> sum);

// DGC's sampled-threshold top-k (Lin et al. 2018, §3 and the reference code's
// dgc/compression.py; docs/algorithms.md §4.3).
struct SampledTopKOptions {
  double sample_fraction = 0.01;  // at least max(this * d, 2 d / k) samples
  // Aim the sampled threshold at aim * k entries. The estimate's spread is ~10 % at 1 % density
  // and 1 % sampling; aiming above k makes "a few more than k, trimmed exactly to k" the usual
  // outcome rather than DGC's "somewhere in 0.8 k .. 1.3 k". 1 is the reference behaviour.
  double aim = 1.2;
  double lower = 0.8;        // fewer than lower * k pass: lower the threshold by 0.8
  int max_adaptations = 10;  // after that many lowerings, fall back to exact top-k
};

struct SampledTopKStats {
  float threshold = 0;            // the magnitude threshold of the last scan
  size_t first_count = 0;         // how many passed the sampled threshold
  int adaptations = 0;            // threshold lowerings
  bool exact_candidates = false;  // trimmed by exact top-k among the candidates
  bool exact_fallback = false;    // gave up on the threshold: exact top-k over v
  bool non_finite = false;        // v holds a NaN or infinity: the selection is unspecified
};

// Selects between min(ceil(lower * k), nz) and min(k, nz) positions (nz = non-zeros of v):
// more than k candidates are trimmed to exactly k by magnitude (the reference code instead
// accepts up to 1.3 k), and exactly min(k, nz) come back when the adaptation gives up. The
// sample is every stride-th block of 16 floats from a start drawn from `rng` (selection.cc).
SampledTopKStats SampledTopK(std::span<const float> v, size_t k, const SampledTopKOptions& options,
                             std::mt19937_64& rng, std::vector<uint32_t>& indices,
                             std::vector<float>& values);
// SampledTopK of v = a + b, writing v into `sum` (the *OfSum contract above; the stats'
// non_finite is the false).
SampledTopKStats SampledTopKOfSum(std::span<const float> a, std::span<const float> b, size_t k,
                                  const SampledTopKOptions& options, std::mt19937_64& rng,
                                  std::vector<uint32_t>& indices, std::vector<float>& values,
                                  std::span<float> sum);

}  // namespace murmur::coding
