#pragma once
// Sums of many doubles in a fixed order that the compiler vectorizes. A loop `s += f(k)` is one
// chain of dependent additions (about 4 cycles each), which GCC may not reorder without
// -ffast-math; over a model of 10^5..10^7 values that chain, not memory, sets the speed. LaneSum
// keeps kLaneCount independent partial sums (lane l takes every kLaneCount-th term, from the
// start), which the compiler maps onto vector registers, and adds them pairwise at the end. The
// order depends only on n, so a result is the same on every run and thread count.

#include <cstddef>

namespace murmur {

inline constexpr size_t kLaneCount = 32;

// Per-lane partial sums, for loops that produce several sums in one pass.
struct Lanes {
  double v[kLaneCount] = {};
  double Total() const {
    double w[kLaneCount];
    for (size_t l = 0; l < kLaneCount; ++l) w[l] = v[l];
    for (size_t half = kLaneCount / 2; half > 0; half /= 2) {
      for (size_t l = 0; l < half; ++l) w[l] += w[l + half];
    }
    return w[0];
  }
};

// body(k, l) for 0 <= k < n with l = k % kLaneCount, as whole rows of kLaneCount (which the
// compiler vectorizes when the body adds into lane l of some Lanes) and then the tail.
template <typename Body>
inline void ForEachLane(size_t n, Body body) {
  size_t k = 0;
  for (; k + kLaneCount <= n; k += kLaneCount) {
    for (size_t l = 0; l < kLaneCount; ++l) body(k + l, l);
  }
  for (size_t l = 0; k < n; ++k, ++l) body(k, l);
}

// Σ term(k) for 0 <= k < n, in double. `term` must be cheap and free of side effects.
template <typename Term>
inline double LaneSum(size_t n, Term term) {
  Lanes lanes;
  ForEachLane(n, [&](size_t k, size_t l) { lanes.v[l] += term(k); });
  return lanes.Total();
}

}  // namespace murmur
