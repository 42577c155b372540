#include "coding/update_codec.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "coding/compressor.h"
#include "tests/testing/test_vectors.h"

namespace murmur::coding {
namespace {

using testing::Distribution;
using testing::MakeVector;

constexpr const char* kSpecs[] = {
    "none",          "fp16",        "topk:0.01",        "topk:0.01,values=fp16",
    "topk:0.5",      "dgc:0.01",    "dgc:0.001,values=fp16", "threshold:1.5",
    "threshold:0.5,values=fp16",    "onebit:1.0",       "qsgd:16",
    "qsgd:1",        "qsgd:1000",   "int8"};

void ExpectSameUpdate(const Update& a, const Update& b, const std::string& what) {
  EXPECT_EQ(a.op, b.op) << what;
  EXPECT_EQ(a.dimension, b.dimension) << what;
  EXPECT_EQ(a.dense, b.dense) << what;
  EXPECT_EQ(a.indices, b.indices) << what;
  ASSERT_EQ(a.values.size(), b.values.size()) << what;
  // Bitwise: the receiver must reconstruct exactly what the sender subtracted from its residual.
  EXPECT_EQ(std::memcmp(a.values.data(), b.values.data(), a.values.size() * sizeof(float)), 0)
      << what;
  if (a.format.coding != ValueCoding::kFloat) {
    EXPECT_EQ(a.format.scale, b.format.scale) << what;
  }
}

TEST(UpdateCodecTest, EveryOperatorRoundTripsAtEdgeAndLargeSizes) {
  const uint64_t seed = 7;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::vector<std::byte> bytes;
  Update update;
  Update decoded;
  for (const char* spec : kSpecs) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{1001}, size_t{10000000}}) {
      const std::vector<float> v = MakeVector(Distribution::kNormal, n, seed + n);
      auto options = ParseCompressorSpec(spec);
      ASSERT_TRUE(options.ok()) << options.status();
      options->seed = seed;
      auto compressor = Compressor::Create(*options, n);
      ASSERT_TRUE(compressor.ok()) << compressor.status();
      ASSERT_TRUE(compressor->Compress(v, update).ok());
      const size_t size = EncodeUpdate(update, bytes);
      const std::string what = std::string(spec) + " n=" + std::to_string(n);
      EXPECT_EQ(size, bytes.size()) << what;
      EXPECT_EQ(size, EncodedSize(update)) << what;
      DecodeFailure failure = DecodeFailure::kTruncated;
      const Status status = DecodeUpdate(bytes, static_cast<uint32_t>(n), decoded, &failure);
      ASSERT_TRUE(status.ok()) << what << ": " << status;
      EXPECT_EQ(failure, DecodeFailure::kNone);
      ExpectSameUpdate(update, decoded, what);
    }
  }
}

TEST(UpdateCodecTest, TopOnePercentMeetsTheBytesPerNonZeroTargets) {
  const std::vector<float> v = MakeVector(Distribution::kNormal, 1000000, 1);
  Update update;
  for (const auto& [spec, limit] : {std::pair{"topk:0.01", 5.0}, {"topk:0.01,values=fp16", 3.0}}) {
    auto compressor = Compressor::Create(*ParseCompressorSpec(spec), v.size());
    ASSERT_TRUE(compressor->Compress(v, update).ok());
    EXPECT_EQ(update.count(), 10000u);
    EXPECT_EQ(ChooseIndexCoding(update), IndexCoding::kVarint);
    const double per = BytesPerNonZero(update);
    std::printf("%s: %.3f bytes per non-zero\n", spec, per);
    EXPECT_LE(per, limit) << spec;
  }
}

TEST(UpdateCodecTest, IndexCodingIsChosenBySize) {
  // Density 1/4: deltas cost a byte per entry, a bitmap 1/8 byte per entry of d: bitmap.
  // Density 1/1000: deltas of 1000 cost two bytes: varint. Sizes follow the layout exactly.
  const uint32_t d = 100000;
  for (const auto& [step, want] : {std::pair{4u, IndexCoding::kBitmap},
                                   std::pair{1000u, IndexCoding::kVarint}}) {
    Update u;
    u.Clear(Operator::kThreshold, d);
    for (uint32_t i = 3; i < d; i += step) {
      u.indices.push_back(i);
      u.values.push_back(1.0f);
    }
    u.format = QuantizeFloats(u.values, 23);
    EXPECT_EQ(ChooseIndexCoding(u), want);
    const size_t value_bytes = (u.count() * u.format.BitsPerValue() + 7) / 8;
    const size_t index_bytes = want == IndexCoding::kBitmap ? (d + 7) / 8
                                                            : 1 + 2 * (u.count() - 1);  // 1000 > 127
    EXPECT_EQ(EncodedSize(u), kUpdateHeaderBytes + index_bytes + value_bytes);
    std::vector<std::byte> bytes;
    EncodeUpdate(u, bytes);
    Update back;
    ASSERT_TRUE(DecodeUpdate(bytes, d, back).ok());
    EXPECT_EQ(back.indices, u.indices);
  }
}

TEST(UpdateCodecTest, Fp16KeepsElevenSignificantBitsWithoutOverflowOrUnderflow) {
  // Values far outside IEEE half's range survive: the exponent window is relative.
  std::vector<float> v = {1e-9f, -3.3e-9f, 7.77e-9f, 1e-8f};
  const std::vector<float> original = v;
  const ValueFormat f = QuantizeFloats(v, 10);
  EXPECT_LE(f.exponent_bits, 5);
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_NEAR(v[i], original[i], std::fabs(original[i]) * std::ldexp(1.0, -11)) << i;
  }
  std::vector<float> wide = {1e30f, 1.0f, 1e-30f};  // wider than a 5-bit window: tiny flushes
  const ValueFormat g = QuantizeFloats(wide, 10);
  EXPECT_EQ(g.exponent_bits, 5);
  EXPECT_NEAR(wide[0], 1e30f, 1e30 * std::ldexp(1.0, -11)) << "largest kept to fp16 precision";
  EXPECT_EQ(wide[1], 0.0f);
  EXPECT_EQ(wide[2], 0.0f);
}

// QuantizeFloats against a scalar reference written from the format's definition (update.h):
// round to nearest even at 10 mantissa bits, the window's base below the smallest exponent, or
// a 5-bit window under the largest with everything below flushed to signed zero.
TEST(UpdateCodecTest, QuantizeFloatsMatchesTheScalarDefinition) {
  const uint64_t seed = 11;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  for (const int mantissa : {10, 23}) {
    for (size_t n : {size_t{1}, size_t{7}, size_t{33}, size_t{1001}, size_t{1} << 20}) {
      for (const Distribution d : {Distribution::kNormal, Distribution::kHeavyTailed,
                                   Distribution::kMostlyZero, Distribution::kAllEqual}) {
        std::vector<float> v = MakeVector(d, n, seed + n);
        v[0] = 0.0f;  // zeros carry exponent code 0 and do not move the window
        if (n > 2) v[1] = std::numeric_limits<float>::max();  // rounds to the largest fp16 kept
        std::vector<float> expected = v;
        uint32_t emax = 0, emin = 255;
        for (float& x : expected) {
          uint32_t bits = std::bit_cast<uint32_t>(x);
          if (mantissa == 10) {
            const uint32_t rounded = bits + 0xFFFu + ((bits >> 13) & 1u);
            bits = rounded & ~0x1FFFu;
            if (((bits >> 23) & 0xFFu) == 0xFFu) bits = (bits & 0x80000000u) | 0x7F7FE000u;
            x = std::bit_cast<float>(bits);
          }
          const uint32_t e = (bits >> 23) & 0xFFu;
          emax = std::max(emax, e);
          if (e != 0) emin = std::min(emin, e);
        }
        const ValueFormat f = QuantizeFloats(v, mantissa);
        const std::string what = "mantissa " + std::to_string(mantissa) +
                                 " n=" + std::to_string(n) + " " +
                                 std::string(testing::DistributionName(d));
        uint32_t base = emin == 255 ? 0 : emin - 1;  // only zeros: base 0, nothing flushed
        const uint32_t width_limit = mantissa == 10 ? 5 : 8;
        if (emin != 255 && static_cast<uint32_t>(std::bit_width(emax - base)) > width_limit) {
          base = emax - ((1u << width_limit) - 1);
        }
        EXPECT_EQ(f.exponent_base, base) << what;
        for (size_t i = 0; i < n; ++i) {
          const uint32_t e = (std::bit_cast<uint32_t>(expected[i]) >> 23) & 0xFFu;
          const float want = e != 0 && e <= base ? std::copysign(0.0f, expected[i]) : expected[i];
          ASSERT_EQ(std::bit_cast<uint32_t>(v[i]), std::bit_cast<uint32_t>(want))
              << what << " i=" << i;
        }
      }
    }
  }
}

// Dense fp16 on the wire is one little-endian 16-bit code per value: sign, 5 bits of exponent
// above the base, the top 10 mantissa bits.
TEST(UpdateCodecTest, DenseFp16BytesAreSixteenBitCodes) {
  const uint64_t seed = 13;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::vector<std::byte> bytes;
  Update update, decoded;
  for (size_t n : {size_t{2}, size_t{7}, size_t{33}, size_t{1001}, size_t{1} << 20}) {
    for (const Distribution d :
         {Distribution::kNormal, Distribution::kHeavyTailed, Distribution::kMostlyZero}) {
      std::vector<float> v = MakeVector(d, n, seed + n);
      v[0] = -1e-12f;  // a range wider than 5 bits of exponent: the full window, small ones flushed
      v[n - 1] = 1e12f;
      auto compressor = Compressor::Create(*ParseCompressorSpec("fp16"), n);
      ASSERT_TRUE(compressor.ok());
      ASSERT_TRUE(compressor->Compress(v, update).ok());
      const std::string what =
          "n=" + std::to_string(n) + " " + std::string(testing::DistributionName(d));
      ASSERT_EQ(update.format.exponent_bits, 5) << what << " (a narrower window packs fewer bits)";
      EncodeUpdate(update, bytes);
      ASSERT_EQ(bytes.size(), kUpdateHeaderBytes + 2 * n) << what;
      for (size_t i = 0; i < n; ++i) {
        const uint32_t bits = std::bit_cast<uint32_t>(update.values[i]);
        const uint32_t e = (bits >> 23) & 0xFFu;
        const uint32_t code = ((bits >> 31) << 15) |
                              ((e == 0 ? 0 : e - update.format.exponent_base) << 10) |
                              ((bits >> 13) & 0x3FFu);
        uint16_t got;
        std::memcpy(&got, bytes.data() + kUpdateHeaderBytes + 2 * i, 2);
        ASSERT_EQ(got, code) << what << " i=" << i;
      }
      ASSERT_TRUE(DecodeUpdate(bytes, static_cast<uint32_t>(n), decoded).ok()) << what;
      ExpectSameUpdate(update, decoded, what);
    }
  }
}

// --- Corrupt input: each check has its own failure. ---

struct Header {
  uint16_t magic = 0x4D55;
  uint8_t version = 1;
  uint8_t op = 2;
  uint8_t index_coding = 1;
  uint8_t value_coding = 0;
  uint8_t mantissa_bits = 23;
  uint8_t exponent_bits = 8;
  uint8_t exponent_base = 0;
  uint32_t dimension = 10;
  uint32_t count = 0;
  float scale = 0;
  uint32_t levels = 0;
  uint32_t index_bytes = 0;
};

// Raw bytes with a valid checksum, so each test reaches the check it aims at.
std::vector<std::byte> Craft(const Header& h, const std::vector<uint8_t>& index,
                             const std::vector<uint8_t>& values) {
  std::vector<std::byte> b(kUpdateHeaderBytes + index.size() + values.size());
  auto put = [&](size_t at, const auto& x) { std::memcpy(b.data() + at, &x, sizeof(x)); };
  put(0, h.magic);
  put(2, h.version);
  put(3, h.op);
  put(4, h.index_coding);
  put(5, h.value_coding);
  put(6, h.mantissa_bits);
  put(7, h.exponent_bits);
  put(8, h.exponent_base);
  put(12, h.dimension);
  put(16, h.count);
  put(20, h.scale);
  put(24, h.levels);
  put(28, h.index_bytes);
  std::memcpy(b.data() + kUpdateHeaderBytes, index.data(), index.size());
  std::memcpy(b.data() + kUpdateHeaderBytes + index.size(), values.data(), values.size());
  RewriteChecksum(b);
  return b;
}

std::vector<uint8_t> Float32Bytes(std::initializer_list<float> values) {
  std::vector<uint8_t> out(values.size() * 4);
  std::memcpy(out.data(), values.begin(), out.size());
  return out;
}

DecodeFailure FailureOf(const std::vector<std::byte>& bytes, uint32_t dimension,
                        StatusCode* code = nullptr) {
  Update out;
  DecodeFailure failure = DecodeFailure::kNone;
  const Status status = DecodeUpdate(bytes, dimension, out, &failure);
  if (code != nullptr) *code = status.code();
  if (!status.ok()) {
    EXPECT_NE(status.message().find(DecodeFailureName(failure)), std::string_view::npos)
        << status;
    std::printf("  %s\n", status.ToString().c_str());
  }
  return failure;
}

TEST(UpdateCodecTest, AWellFormedCraftedUpdateDecodes) {
  Header h;
  h.count = 2;
  h.index_bytes = 2;
  const auto bytes = Craft(h, {3, 4}, Float32Bytes({1.0f, -2.0f}));
  Update out;
  ASSERT_TRUE(DecodeUpdate(bytes, 10, out).ok());
  EXPECT_EQ(out.indices, (std::vector<uint32_t>{3, 7}));
  EXPECT_EQ(out.values, (std::vector<float>{1.0f, -2.0f}));
}

TEST(UpdateCodecTest, RejectsTruncatedAndTrailingBytes) {
  Header h;
  h.count = 2;
  h.index_bytes = 2;
  const auto good = Craft(h, {3, 4}, Float32Bytes({1.0f, -2.0f}));
  for (size_t len = 0; len < good.size(); ++len) {
    std::vector<std::byte> cut(good.begin(), good.begin() + static_cast<ptrdiff_t>(len));
    EXPECT_EQ(FailureOf(cut, 10), DecodeFailure::kTruncated) << len;
  }
  auto longer = good;
  longer.push_back(std::byte{0});
  EXPECT_EQ(FailureOf(longer, 10), DecodeFailure::kTrailingBytes);
}

TEST(UpdateCodecTest, RejectsBadHeaders) {
  const auto values = Float32Bytes({1.0f});
  auto with = [&](auto edit) {
    Header h;
    h.count = 1;
    h.index_bytes = 1;
    edit(h);
    return Craft(h, {2}, values);
  };
  const std::pair<const char*, std::vector<std::byte>> cases[] = {
      {"magic", with([](Header& h) { h.magic = 0x1234; })},
      {"version", with([](Header& h) { h.version = 2; })},
      {"operator", with([](Header& h) { h.op = 99; })},
      {"index coding", with([](Header& h) { h.index_coding = 7; })},
      {"value coding", with([](Header& h) { h.value_coding = 9; })},
      {"mantissa", with([](Header& h) { h.mantissa_bits = 11; })},
      {"exponent bits", with([](Header& h) { h.exponent_bits = 0; })},
      {"scale on floats", with([](Header& h) { h.scale = 1; })},
      {"count > dimension", with([](Header& h) { h.count = 11; })},
      {"dense with a short count", with([](Header& h) { h.index_coding = 0; })},
      {"bitmap size", with([](Header& h) { h.index_coding = 2; })},
  };
  for (const auto& [what, bytes] : cases) {
    EXPECT_EQ(FailureOf(bytes, 10), DecodeFailure::kBadHeader) << what;
  }
  Header levels;
  levels.value_coding = 2;
  levels.mantissa_bits = levels.exponent_bits = 0;
  levels.levels = 0;
  levels.scale = 1;
  EXPECT_EQ(FailureOf(Craft(levels, {}, {}), 10), DecodeFailure::kBadHeader) << "zero levels";
  Header negative = levels;
  negative.levels = 4;
  negative.scale = -1;
  EXPECT_EQ(FailureOf(Craft(negative, {}, {}), 10), DecodeFailure::kBadHeader);
}

TEST(UpdateCodecTest, RejectsAnotherDimension) {
  Header h;
  h.count = 1;
  h.index_bytes = 1;
  const auto bytes = Craft(h, {2}, Float32Bytes({1.0f}));
  EXPECT_EQ(FailureOf(bytes, 11), DecodeFailure::kWrongDimension);
}

TEST(UpdateCodecTest, RejectsAChecksumMismatchAsDataLoss) {
  Header h;
  h.count = 1;
  h.index_bytes = 1;
  auto bytes = Craft(h, {2}, Float32Bytes({1.0f}));
  bytes.back() ^= std::byte{0x01};
  StatusCode code;
  EXPECT_EQ(FailureOf(bytes, 10, &code), DecodeFailure::kChecksumMismatch);
  EXPECT_EQ(code, StatusCode::kDataLoss);
}

TEST(UpdateCodecTest, RejectsBadIndices) {
  Header h;
  h.count = 2;
  h.index_bytes = 2;
  const auto two = Float32Bytes({1.0f, 2.0f});
  EXPECT_EQ(FailureOf(Craft(h, {3, 7}, two), 10), DecodeFailure::kIndexOutOfRange);
  EXPECT_EQ(FailureOf(Craft(h, {10, 1}, two), 10), DecodeFailure::kIndexOutOfRange);
  EXPECT_EQ(FailureOf(Craft(h, {3, 0}, two), 10), DecodeFailure::kIndexNotIncreasing);
  // Varint running past its section, an overlong varint, bytes left over.
  EXPECT_EQ(FailureOf(Craft(h, {3, 0x81}, two), 10), DecodeFailure::kMalformedIndices);
  Header six = h;
  six.count = 1;
  six.index_bytes = 6;
  EXPECT_EQ(FailureOf(Craft(six, {0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, Float32Bytes({1.0f})), 10),
            DecodeFailure::kMalformedIndices);
  Header extra = h;
  extra.index_bytes = 3;
  EXPECT_EQ(FailureOf(Craft(extra, {3, 1, 1}, two), 10), DecodeFailure::kMalformedIndices);
  // A delta that would wrap a 32-bit index is out of range, not a small index.
  Header wrap = h;
  wrap.dimension = 0xFFFFFFFFu;
  wrap.index_bytes = 6;
  EXPECT_EQ(FailureOf(Craft(wrap, {0xFE, 0xFF, 0xFF, 0xFF, 0x0F, 0x02}, two), 0xFFFFFFFFu),
            DecodeFailure::kIndexOutOfRange);
  // Bitmaps: a set-bit count that disagrees with count, a bit past the dimension.
  Header bitmap = h;
  bitmap.index_coding = 2;
  bitmap.index_bytes = 2;
  EXPECT_EQ(FailureOf(Craft(bitmap, {0x07, 0x00}, two), 10), DecodeFailure::kMalformedIndices);
  EXPECT_EQ(FailureOf(Craft(bitmap, {0x01, 0x04}, two), 10), DecodeFailure::kIndexOutOfRange);
  EXPECT_EQ(FailureOf(Craft(bitmap, {0x01, 0x02}, two), 10), DecodeFailure::kNone);
}

TEST(UpdateCodecTest, RejectsNonFiniteValuesAndBadLevels) {
  Header h;
  h.count = 2;
  h.index_bytes = 2;
  EXPECT_EQ(FailureOf(Craft(h, {3, 1}, Float32Bytes({1.0f, NAN})), 10), DecodeFailure::kNonFinite);
  EXPECT_EQ(FailureOf(Craft(h, {3, 1}, Float32Bytes({INFINITY, 1.0f})), 10),
            DecodeFailure::kNonFinite);
  // Packed floats: base 250 + exponent code 5 = 255, the NaN/inf exponent.
  Header packed = h;
  packed.count = 1;
  packed.index_bytes = 1;
  packed.exponent_bits = 3;
  packed.exponent_base = 250;
  const uint32_t code = 5u << 23;  // 27 bits: mantissa 0, exponent code 5, sign 0
  std::vector<uint8_t> four(4);
  std::memcpy(four.data(), &code, 4);
  EXPECT_EQ(FailureOf(Craft(packed, {3}, four), 10), DecodeFailure::kNonFinite);
  // Dense 16-bit codes (the decoder's own loop for them): base 240 + exponent code 15 = 255 in
  // the third of four values; with base 239 the same bytes decode.
  Header fp16;
  fp16.op = 1;
  fp16.index_coding = 0;
  fp16.dimension = 4;
  fp16.count = 4;
  fp16.mantissa_bits = 10;
  fp16.exponent_bits = 5;
  fp16.exponent_base = 240;
  const std::vector<uint8_t> codes = {0x00, 0x04, 0x00, 0x38, 0x00, 0x3C, 0xFF, 0x83};
  Update decoded;
  DecodeFailure failure = DecodeFailure::kNone;
  const Status status = DecodeUpdate(Craft(fp16, {}, codes), 4, decoded, &failure);
  EXPECT_EQ(failure, DecodeFailure::kNonFinite) << status;
  EXPECT_NE(status.message().find("value 2 has exponent 255"), std::string_view::npos) << status;
  fp16.exponent_base = 239;
  EXPECT_EQ(FailureOf(Craft(fp16, {}, codes), 4), DecodeFailure::kNone);
  // Sign values with a NaN magnitude.
  Header sign = h;
  sign.value_coding = 1;
  sign.mantissa_bits = sign.exponent_bits = 0;
  sign.scale = NAN;
  EXPECT_EQ(FailureOf(Craft(sign, {3, 1}, {0x01}), 10), DecodeFailure::kNonFinite);
  // Levels: s = 2 needs 2 level bits; level 3 is above s.
  Header levels = sign;
  levels.value_coding = 2;
  levels.scale = 1.0f;
  levels.levels = 2;
  EXPECT_EQ(FailureOf(Craft(levels, {3, 1}, {0x03}), 10), DecodeFailure::kBadValue);
  EXPECT_EQ(FailureOf(Craft(levels, {3, 1}, {0x02 | (0x06 << 3)}), 10), DecodeFailure::kNone);
}

TEST(UpdateCodecTest, RandomCorruptionNeverCrashesAndNeverYieldsAnInvalidUpdate) {
  // Flip bytes of real encodings (with and without fixing the checksum) and truncate them: the
  // decoder either rejects or returns an update whose every index and value is usable.
  const uint64_t seed = 99;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  const uint32_t n = 3000;
  const std::vector<float> v = MakeVector(Distribution::kHeavyTailed, n, seed);
  int rejected = 0;
  int accepted = 0;
  for (const char* spec : kSpecs) {
    auto compressor = Compressor::Create(*ParseCompressorSpec(spec), n);
    Update update;
    ASSERT_TRUE(compressor->Compress(v, update).ok());
    std::vector<std::byte> good;
    EncodeUpdate(update, good);
    for (int trial = 0; trial < 300; ++trial) {
      std::vector<std::byte> bad = good;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) bad[rng() % bad.size()] ^= static_cast<std::byte>(1 + rng() % 255);
      if (trial % 3 == 0) bad.resize(rng() % (bad.size() + 1));
      if (trial % 2 == 0 && bad.size() >= kUpdateHeaderBytes) RewriteChecksum(bad);
      Update out;
      DecodeFailure failure;
      if (!DecodeUpdate(bad, n, out, &failure).ok()) {
        EXPECT_NE(failure, DecodeFailure::kNone);
        ++rejected;
        continue;
      }
      ++accepted;
      ASSERT_EQ(out.dimension, n);
      if (out.dense) {
        ASSERT_EQ(out.values.size(), n);
      } else {
        ASSERT_EQ(out.indices.size(), out.values.size());
        for (size_t i = 0; i < out.indices.size(); ++i) {
          ASSERT_LT(out.indices[i], n);
          if (i > 0) {
            ASSERT_GT(out.indices[i], out.indices[i - 1]);
          }
        }
      }
      for (float x : out.values) ASSERT_TRUE(std::isfinite(x));
      std::vector<float> target(n, 0.0f);
      AddTo(out, 1.0f, target);
    }
  }
  std::printf("rejected %d, accepted %d corrupted updates\n", rejected, accepted);
  EXPECT_GT(rejected, 0);
}

// The rule both compressors use to send a quantized update sparse: below d (1 - 1/b) nonzero
// values, and then the sparse form holds exactly the nonzero values in order.
TEST(UpdateCodecTest, SparsifyIfSmallerSwitchesAtTheBitmapBreakEven) {
  for (const uint32_t levels : {127u, 16u, 300u}) {
    for (const size_t d : {size_t{1}, size_t{8}, size_t{9}, size_t{1000}, size_t{4097}}) {
      ValueFormat format;
      format.coding = ValueCoding::kLevels;
      format.levels = levels;
      format.scale = 1;
      const size_t below = SparseBelow(d, format);
      EXPECT_EQ(below, d - d / static_cast<size_t>(format.BitsPerValue())) << levels << " " << d;
      for (const size_t nonzero : {size_t{0}, below > 0 ? below - 1 : 0, below, d}) {
        if (nonzero > d) continue;
        Update u;
        u.dimension = static_cast<uint32_t>(d);
        u.format = format;
        u.dense = true;
        u.values.assign(d, 0.0f);
        std::vector<uint32_t> where;
        for (size_t k = 0; k < nonzero; ++k) {
          const size_t i = (k * 7919) % d;
          if (u.values[i] != 0) continue;
          u.values[i] = static_cast<float>(k + 1);
          where.push_back(static_cast<uint32_t>(i));
        }
        std::sort(where.begin(), where.end());
        const std::vector<float> dense = u.values;
        const bool sparse = SparsifyIfSmaller(u, where.size());
        EXPECT_EQ(sparse, where.size() < below) << levels << " " << d << " " << nonzero;
        if (!sparse) {
          EXPECT_TRUE(u.dense);
          EXPECT_EQ(u.values, dense);
          continue;
        }
        EXPECT_FALSE(u.dense);
        EXPECT_EQ(u.indices, where);
        ASSERT_EQ(u.values.size(), where.size());
        for (size_t k = 0; k < where.size(); ++k) EXPECT_EQ(u.values[k], dense[where[k]]);
      }
    }
  }
}

}  // namespace
}  // namespace murmur::coding
