#pragma once
// Choosing which coordinates a sparse update sends: exact top-k, a fixed threshold, and DGC's
// sampled threshold. Every function writes increasing positions into `out` (replacing its
// contents, keeping its capacity), never selects an exact zero (sending one carries no
// information), and REQUIRES finite input: the Compressor checks before it selects.

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace murmur::coding {

// The k largest |v|, ties broken by lower index; min(k, non-zeros of v) positions.
// Radix select on the magnitude bits (11 + 10 + 10 bit digits): two passes over v, a pass over
// the candidates of one top-level bucket, and a pass to emit; no sort, no copy of v.
void TopKIndices(std::span<const float> v, size_t k, std::vector<uint32_t>& out);

// Every |v| >= tau. REQUIRES tau > 0.
void ThresholdIndices(std::span<const float> v, float tau, std::vector<uint32_t>& out);

// DGC's sampled-threshold top-k (Lin et al. 2018, §3 and the reference code's
// dgc/compression.py; algorithms.md §4.3).
struct SampledTopKOptions {
  double sample_fraction = 0.01;  // at least max(this * d, 2 d / k) samples
  // Aim the sampled threshold at aim * k entries. The estimate's spread is ~10 % at 1 % density
  // and 1 % sampling; aiming above k makes "a few more than k, trimmed exactly to k" the usual
  // outcome rather than DGC's "somewhere in 0.8 k .. 1.3 k". 1 is the reference behaviour.
  double aim = 1.2;
  double lower = 0.8;             // fewer than lower * k pass: lower the threshold by 0.8
  int max_adaptations = 10;       // after that many lowerings, fall back to exact top-k
};

struct SampledTopKStats {
  float threshold = 0;        // the magnitude threshold of the last scan
  size_t first_count = 0;     // how many passed the sampled threshold
  int adaptations = 0;        // threshold lowerings
  bool exact_candidates = false;  // trimmed by exact top-k among the candidates
  bool exact_fallback = false;    // gave up on the threshold: exact top-k over v
};

// Selects between min(ceil(lower * k), nz) and min(k, nz) positions (nz = non-zeros of v):
// more than k candidates are trimmed to exactly k by magnitude (the reference code instead
// accepts up to 1.3 k), and exactly min(k, nz) come back when the adaptation gives up. Samples are strided with a random start (an odd stride, so power-of-two layouts
// of weight matrices do not alias), drawn from `rng`.
SampledTopKStats SampledTopKIndices(std::span<const float> v, size_t k,
                                    const SampledTopKOptions& options, std::mt19937_64& rng,
                                    std::vector<uint32_t>& out);

}  // namespace murmur::coding
