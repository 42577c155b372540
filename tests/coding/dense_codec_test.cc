// The dense fp16 pass's hardware conversion (coding/dense_codec.cc, Fp16Converter) against the
// definition (Compress, then EncodeUpdate), bit for bit, where the two could part: the window's
// lowest binades, the rounding carries at each boundary, float subnormals and the saturating top.

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string_view>
#include <vector>

#include "coding/compressor.h"
#include "coding/update_codec.h"
#include "tests/testing/test_vectors.h"

namespace murmur::coding {
namespace {

using testing::Bits;

constexpr uint64_t kSeed = 20261127;

float FromBits(uint32_t bits) { return std::bit_cast<float>(bits); }

Compressor Make(const char* spec, size_t n) {
  return std::move(*Compressor::Create(*ParseCompressorSpec(spec), n));
}

// A vector whose fp16 window has exponent base `base`: its largest magnitude has biased
// exponent base + 31 and its smallest normal one lies more than 32 binades lower (or is the
// smallest normal float), so FloatWindow anchors the window at the top. Every 16-value group
// holds one probe value and 15 ordinary ones (kept, code exponents 2..31), so a probe the
// hardware path can take goes through it and one it cannot sends its group to the definition.
std::vector<float> WindowProbes(uint32_t base, std::mt19937_64& rng) {
  const uint32_t top = base + 31;
  std::vector<uint32_t> probes;
  const int32_t offsets[] = {-0x2001, -0x1001, -0x1000, -0xFFF, -1, 0, 1, 0xFFF, 0x1000, 0x1001};
  // The window's binade edges (code exponents 1, 2, 3 and the flush below), the float
  // subnormal edge, and the top's rounding carry and saturation.
  for (uint32_t edge : {(base + 1) << 23, (base + 2) << 23, (base + 3) << 23, 0x800000u, top << 23,
                        (top + 1) << 23}) {
    for (int32_t off : offsets) {
      const int64_t bits = static_cast<int64_t>(edge) + off;
      if (bits > 0 && bits < 0x7F800000) probes.push_back(static_cast<uint32_t>(bits));
    }
  }
  for (uint32_t special :
       {0u, 1u, 0x1000u, 0x1001u, 0x7FEFFFu, 0x7FF000u, 0x7F7FEFFFu, 0x7F7FF000u, 0x7F7FFFFFu}) {
    probes.push_back(special);
  }
  for (int i = 0; i < 64; ++i) {  // random magnitudes anywhere below the top
    probes.push_back(std::uniform_int_distribution<uint32_t>(0, ((top + 1) << 23) - 1)(rng));
  }
  std::uniform_int_distribution<uint32_t> ordinary((base + 3) << 23, (top << 23) - 1);
  std::vector<float> v;
  // The anchors: the top, and a normal 33 binades lower (or the smallest normal float).
  v.push_back(FromBits(top << 23));
  v.push_back(FromBits((base > 1 ? base - 1 : 1u) << 23));
  for (uint32_t probe : probes) {
    // A magnitude that rounds into the next binade would move the window up; past the largest
    // float it saturates instead, and the window stays.
    if (top < 254 && probe >= ((top + 1) << 23) - 0x1000) continue;
    for (int j = 0; j < 16; ++j) {
      const uint32_t bits = j == 7 ? probe : ordinary(rng);
      v.push_back(FromBits(bits | (rng() & 1 ? 0x80000000u : 0u)));
    }
  }
  return v;
}

TEST(DenseCodecTest, Fp16HardwareConversionIsBitIdenticalAtTheWindowsEdges) {
  std::printf("seed %llu\n", static_cast<unsigned long long>(kSeed));
  std::mt19937_64 rng(kSeed);
  // base 0 and 1: the window reaches the smallest normal floats; 96: values near 1; 223: the
  // largest floats (saturation). The bases above come from narrower spans (the next test).
  for (uint32_t base : {0u, 1u, 96u, 150u, 223u}) {
    for (const char* spec : {"fp16,ef=off", "fp16"}) {
      const std::vector<float> input = WindowProbes(base, rng);
      SCOPED_TRACE(::testing::Message() << spec << " base " << base << " n=" << input.size());
      Compressor two_step = Make(spec, input.size());
      Compressor fused = Make(spec, input.size());
      // With error feedback, later steps add residuals; at the largest floats those sums
      // overflow and are refused (CompressorTest covers that), so one step there.
      const int steps = base == 223 && std::string_view(spec) == "fp16" ? 1 : 3;
      for (int step = 0; step < steps; ++step) {
        Update expected, got;
        std::vector<std::byte> expected_bytes, got_bytes;
        ASSERT_TRUE(two_step.Compress(input, expected).ok());
        ASSERT_TRUE(fused.Compress(input, got, got_bytes).ok());
        if (step == 0) {
          ASSERT_EQ(got.format.exponent_bits, 5);
          ASSERT_EQ(got.format.exponent_base, base);
        }
        EncodeUpdate(expected, expected_bytes);
        EXPECT_EQ(got.format, expected.format);
        EXPECT_EQ(Bits(got.values), Bits(expected.values));
        EXPECT_EQ(got_bytes, expected_bytes);
        EXPECT_EQ(Bits(fused.residual()), Bits(two_step.residual()));
      }
    }
  }
}

TEST(DenseCodecTest, Fp16WindowsAboveTheScalingsRangeTakeTheDefinition) {
  // Magnitudes 2^111 .. 2^127 (exponents 238 .. 254): a 5-bit window with base 237 or 238,
  // the first beyond what the hardware path scales.
  std::mt19937_64 rng(kSeed + 1);
  for (uint32_t low : {238u, 239u}) {
    std::vector<float> v(4099);
    std::uniform_int_distribution<uint32_t> bits(low << 23, (254u << 23) + 0x7FE000u);
    for (float& x : v) x = FromBits(bits(rng) | (rng() & 1 ? 0x80000000u : 0u));
    v[0] = FromBits(low << 23);
    v[1] = FromBits(254u << 23);
    SCOPED_TRACE(::testing::Message() << "smallest exponent " << low);
    Compressor two_step = Make("fp16,ef=off", v.size());
    Compressor fused = Make("fp16,ef=off", v.size());
    Update expected, got;
    std::vector<std::byte> expected_bytes, got_bytes;
    ASSERT_TRUE(two_step.Compress(v, expected).ok());
    ASSERT_TRUE(fused.Compress(v, got, got_bytes).ok());
    ASSERT_EQ(got.format.exponent_bits, 5);
    EXPECT_EQ(got.format.exponent_base, low - 1);
    EncodeUpdate(expected, expected_bytes);
    EXPECT_EQ(Bits(got.values), Bits(expected.values));
    EXPECT_EQ(got_bytes, expected_bytes);
  }
}

}  // namespace
}  // namespace murmur::coding
