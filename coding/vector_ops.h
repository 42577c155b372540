#pragma once
// Small reductions over flat parameter/update vectors on the host. Every update that enters a
// node passes AllFinite before it touches the model (a NaN from one peer must not spread).

#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace murmur::coding {

// NaN or infinity, by its exponent bits: an integer test that vectorizes where std::isfinite in
// a reduction would not (without fast-math).
inline bool IsNonFinite(float value) {
  return (std::bit_cast<uint32_t>(value) & 0x7F800000u) == 0x7F800000u;
}

// Index of the first NaN or infinity, or nullopt when every value is finite.
std::optional<size_t> FirstNonFinite(std::span<const float> values);
inline bool AllFinite(std::span<const float> values) { return !FirstNonFinite(values).has_value(); }

// Sum of squares, accumulated in double.
double SquaredL2Norm(std::span<const float> values);
// ‖a − b‖², accumulated in double. REQUIRES a.size() == b.size() (CHECKed).
double SquaredL2Distance(std::span<const float> a, std::span<const float> b);

}  // namespace murmur::coding
