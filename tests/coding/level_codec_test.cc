// coding/level_codec.h against the scalar definition (kernels::StochasticLevel over LevelDraw,
// LevelValue): both forms, every level count class (1, few, int8's 127, a gathered 255, an
// untabled 70,000; 31/32 and 63/64 where the 16-wide lookup needs more table registers), sizes
// around the 8-, 16-, 32- and 64-wide steps and the 4096-value blocks, and inputs
// with zeros, -0, subnormals and huge values. Then the Compressor that picks between the forms,
// against DeviceCompressor's host kernels while the density swings from step to step.
#include "coding/level_codec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <random>

#include "coding/compressor.h"
#include "coding/device_compressor.h"
#include "coding/stream_store.h"
#include "coding/update_codec.h"
#include "coding/vector_ops.h"
#include "kernels/device.h"
#include "tests/testing/test_vectors.h"

namespace murmur::coding {
namespace {

using testing::Bits;

constexpr uint64_t kSeed = 77;

enum class Input { kNormal, kEdges, kMostlyZero, kTiny, kFlat };

std::vector<float> Make(Input kind, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    const float x = normal(rng);
    switch (kind) {
      case Input::kNormal:
        v[i] = x;
        break;
      case Input::kEdges: {
        const float edges[] = {0.0f, -0.0f, 1e-45f, -1e-40f, 3e38f, -1.0f, 0.5f, x};
        v[i] = edges[rng() % 8];
        break;
      }
      case Input::kMostlyZero:
        v[i] = rng() % 50 == 0 ? x : 0.0f;
        break;
      case Input::kTiny:
        v[i] = x * 1e-38f;
        break;  // per_level beyond float: a pre-scale
      case Input::kFlat:
        v[i] = x < 0 ? -1.0f : 1.0f;
        break;
    }
  }
  return v;
}

struct Reference {
  std::vector<float> values;
  std::vector<uint8_t> codes;
  std::vector<uint32_t> levels;
  size_t nonzero = 0;
};

Reference Scalar(const internal::LevelPass& pass) {
  Reference r;
  for (size_t i = 0; i < pass.source.size(); ++i) {
    const uint32_t bits = std::bit_cast<uint32_t>(pass.source[i]);
    const uint32_t sign = bits & 0x80000000u;
    const uint32_t level =
        kernels::StochasticLevel(std::bit_cast<float>(bits ^ sign), pass.scale, pass.levels,
                                 kernels::LevelDraw(pass.seed32, static_cast<uint32_t>(i)));
    const float magnitude = LevelValue(pass.scale_f, pass.levels, level);
    r.values.push_back(std::bit_cast<float>(std::bit_cast<uint32_t>(magnitude) | sign));
    r.codes.push_back(static_cast<uint8_t>(level | (sign >> 24)));
    r.levels.push_back(level);
    r.nonzero += level != 0 ? 1 : 0;
  }
  return r;
}

// QuantizeDense into `values` (and one-byte codes, up to 127 levels) against the reference.
void ExpectDenseIsTheDefinition(const internal::LevelPass& pass, std::span<float> values,
                                const Reference& want) {
  std::fill(values.begin(), values.end(), -1.0f);
  std::vector<uint8_t> codes(values.size(), 0xAA);
  const bool with_codes = pass.levels <= 127;
  EXPECT_EQ(internal::QuantizeDense(pass, values, with_codes ? codes.data() : nullptr, nullptr,
                                    nullptr),
            want.nonzero);
  EXPECT_EQ(Bits(values), Bits(want.values));
  if (with_codes) {
    EXPECT_EQ(codes, want.codes);
  }
}

TEST(LevelCodecTest, BothFormsMatchTheScalarDefinition) {
  std::printf("seed %llu\n", static_cast<unsigned long long>(kSeed));
  const size_t sizes[] = {0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 4095, 4096, 4097, 8200, 40003};
  for (const Input kind : {Input::kNormal, Input::kEdges, Input::kMostlyZero, Input::kTiny}) {
    for (const uint32_t levels : {1u, 4u, 16u, 31u, 32u, 63u, 64u, 127u, 255u, 70000u}) {
      for (const size_t n : sizes) {
        SCOPED_TRACE(::testing::Message()
                     << "input " << static_cast<int>(kind) << " levels " << levels << " n " << n);
        const std::vector<float> source = Make(kind, n, kSeed + n);
        // The scale as QSGD picks it (the norm), or int8 (the largest magnitude).
        double scale = levels == 127 ? 0.0 : std::sqrt(SquaredL2Norm(source));
        for (float x : source) {
          if (levels == 127) scale = std::max<double>(scale, std::fabs(x));
        }
        if (scale == 0) scale = 1;
        scale = std::min(scale, double{std::numeric_limits<float>::max()});
        const auto scale_f = static_cast<float>(scale);
        std::vector<float> table;
        if (levels <= kMaxLevelTable) FillLevelTable(scale_f, levels, table);
        const internal::LevelPass pass{source,
                                       levels,
                                       kernels::MakeLevelScale(levels / scale),
                                       static_cast<uint32_t>(kSeed * 2654435761u + n),
                                       scale_f,
                                       table.empty() ? nullptr : table.data()};
        const Reference want = Scalar(pass);

        std::vector<float> values(n);
        ExpectDenseIsTheDefinition(pass, values, want);

        // With a residual: the pass writes source - value over the source.
        std::vector<float> residual = source;
        internal::LevelPass in_place = pass;
        in_place.source = residual;
        EXPECT_EQ(internal::QuantizeDense(in_place, values, nullptr, nullptr, residual.data()),
                  want.nonzero);
        EXPECT_EQ(Bits(values), Bits(want.values));
        for (size_t i = 0; i < n; ++i) {
          ASSERT_EQ(std::bit_cast<uint32_t>(residual[i]),
                    std::bit_cast<uint32_t>(source[i] - want.values[i]))
              << "i " << i;
        }

        std::vector<uint32_t> want_indices, got_indices;
        std::vector<float> want_values, got_values;
        for (size_t i = 0; i < n; ++i) {
          if (want.levels[i] == 0) continue;
          want_indices.push_back(static_cast<uint32_t>(i));
          want_values.push_back(want.values[i]);
        }
        ASSERT_TRUE(internal::QuantizeSparse(pass, want.nonzero + 1, got_indices, got_values));
        EXPECT_EQ(got_indices, want_indices);
        EXPECT_EQ(Bits(got_values), Bits(want_values));
        // One entry fewer allowed than there are: the sparse form gives up.
        EXPECT_FALSE(internal::QuantizeSparse(pass, want.nonzero, got_indices, got_values));
      }
    }
  }
}

// Above the last-level cache the dense pass stores the values past the caches, each block's
// first entries up to a 64-byte line taking the scalar loop. Forced at small sizes, and at every
// float offset of the values within a line, the results stay the definition's.
TEST(LevelCodecTest, StreamedDensePassMatchesTheScalarDefinitionAtEveryAlignment) {
  const internal::ScopedStreamThresholdForTesting stream_everything(1);
  for (const uint32_t levels : {16u, 127u, 255u}) {
    for (const size_t n : {size_t{0}, size_t{1}, size_t{17}, size_t{4095}, size_t{4097},
                           size_t{8200}, size_t{40003}}) {
      const std::vector<float> source = Make(Input::kNormal, n, kSeed + n);
      double scale = levels == 127 ? 0.0 : std::sqrt(SquaredL2Norm(source));
      for (float x : source) {
        if (levels == 127) scale = std::max<double>(scale, std::fabs(x));
      }
      if (scale == 0) scale = 1;
      const auto scale_f = static_cast<float>(scale);
      std::vector<float> table;
      FillLevelTable(scale_f, levels, table);
      const internal::LevelPass pass{source,
                                     levels,
                                     kernels::MakeLevelScale(levels / scale),
                                     static_cast<uint32_t>(kSeed * 2654435761u + n),
                                     scale_f,
                                     table.data()};
      const Reference want = Scalar(pass);
      // A 64-byte-aligned buffer, the values starting `offset` floats into it.
      std::vector<float> storage(n + 32);
      const auto base = reinterpret_cast<uintptr_t>(storage.data());
      const size_t aligned = ((64 - (base & 63)) & 63) / sizeof(float);
      for (size_t offset = 0; offset < 16; ++offset) {
        SCOPED_TRACE(::testing::Message()
                     << "levels " << levels << " n " << n << " offset " << offset);
        ExpectDenseIsTheDefinition(pass, std::span(storage.data() + aligned + offset, n), want);
      }
    }
  }
}

// With error feedback the sparse form quantizes source + addend and writes each sum into the
// source's storage in the same pass (the 16-wide pass up to 127 levels, the sums first beyond).
// On success every sum is written; when it gives up, exactly the first `summed` are.
TEST(LevelCodecTest, SparseFormWritesTheSumsItQuantizes) {
  for (const uint32_t levels : {16u, 100u, 255u}) {
    for (const size_t n : {size_t{1}, size_t{17}, size_t{4097}, size_t{12289}}) {
      SCOPED_TRACE(::testing::Message() << "levels " << levels << " n " << n);
      const std::vector<float> residual = Make(Input::kNormal, n, kSeed + 3 * n);
      const std::vector<float> input = Make(Input::kMostlyZero, n, kSeed + 3 * n + 1);
      std::vector<float> sums(n);
      for (size_t i = 0; i < n; ++i) sums[i] = residual[i] + input[i];
      const auto scale = static_cast<float>(std::sqrt(SquaredL2Norm(sums)));
      std::vector<float> table;
      FillLevelTable(scale, levels, table);
      internal::LevelPass pass{sums,   levels, kernels::MakeLevelScale(levels / double{scale}),
                               12345u, scale,  table.data()};
      const Reference want = Scalar(pass);  // the levels of the sums themselves
      std::vector<uint32_t> want_indices;
      std::vector<float> want_values;
      for (size_t i = 0; i < n; ++i) {
        if (want.levels[i] == 0) continue;
        want_indices.push_back(static_cast<uint32_t>(i));
        want_values.push_back(want.values[i]);
      }
      std::vector<float> storage = residual;
      pass.source = storage;
      pass.addend = input.data();
      std::vector<uint32_t> indices;
      std::vector<float> values;
      size_t summed = 0;
      ASSERT_TRUE(internal::QuantizeSparse(pass, want.nonzero + 1, indices, values, storage.data(),
                                           &summed));
      EXPECT_EQ(summed, n);
      EXPECT_EQ(Bits(storage), Bits(sums));
      EXPECT_EQ(indices, want_indices);
      EXPECT_EQ(Bits(values), Bits(want_values));
      if (want.nonzero == 0) continue;
      storage = residual;
      ASSERT_FALSE(internal::QuantizeSparse(pass, want.nonzero / 2, indices, values, storage.data(),
                                            &summed));
      ASSERT_LE(summed, n);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(storage[i]),
                  std::bit_cast<uint32_t>(i < summed ? sums[i] : residual[i]))
            << "i " << i << " summed " << summed;
      }
    }
  }
  // The compressor after a sparse attempt that gave up partway: it completes the sums and sends
  // the dense form, and the residual is still sums - sent, bit for bit.
  const size_t d = 12289;
  struct Case {
    const char* spec;
    bool dense;  // 100 levels put a level on nearly every flat value: the attempt gives up
  };
  for (const auto [spec, dense] :
       {Case{"qsgd:100,rescale=on,ef=on", true}, Case{"qsgd:16,rescale=on,ef=on", false}}) {
    SCOPED_TRACE(spec);
    auto c = Compressor::Create(*ParseCompressorSpec(spec), d);
    ASSERT_TRUE(c.ok()) << c.status();
    std::vector<float> sparse_step(d, 0.0f);
    sparse_step[5] = 1.0f;
    Update update;
    ASSERT_TRUE(c->Compress(sparse_step, update).ok());
    ASSERT_FALSE(update.dense);  // so the next step tries the sparse form first
    const std::vector<float> flat = Make(Input::kFlat, d, kSeed + 5);
    std::vector<float> sums(d);
    for (size_t i = 0; i < d; ++i) sums[i] = c->residual()[i] + flat[i];
    ASSERT_TRUE(c->Compress(flat, update).ok());
    EXPECT_EQ(update.dense, dense);
    std::vector<float> sent(d, 0.0f);
    AddTo(update, 1.0f, std::span<float>(sent));
    for (size_t i = 0; i < d; ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(c->residual()[i]),
                std::bit_cast<uint32_t>(sums[i] - sent[i]))
          << "i " << i;
    }
  }
}

// int8's receive side: one-byte codes to values, against LevelValue, at sizes around the 8-wide
// step; a level above `levels` anywhere (vector part or tail) refuses the codes, and
// DecodeUpdate then names the first such value.
TEST(LevelCodecTest, ByteCodesDecodeToTheScalarValuesAndRefuseALevelAboveTheTop) {
  std::mt19937_64 rng(kSeed);
  for (const uint32_t levels : {1u, 5u, 100u, 127u}) {
    for (const size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{4099}}) {
      for (const float scale : {1.0f, 3.7e-3f, 2.5e30f, 1e-40f}) {
        SCOPED_TRACE(::testing::Message()
                     << "levels " << levels << " n " << n << " scale " << scale);
        std::vector<std::byte> codes(n);
        std::vector<float> want(n);
        for (size_t i = 0; i < n; ++i) {
          const auto level = static_cast<uint32_t>(rng() % (levels + 1));
          const uint32_t sign = rng() % 2;
          codes[i] = static_cast<std::byte>(level | sign << 7);
          want[i] = std::bit_cast<float>(std::bit_cast<uint32_t>(LevelValue(scale, levels, level)) |
                                         sign << 31);
        }
        std::vector<float> got(n, -1.0f);
        ASSERT_TRUE(internal::DecodeByteLevels(codes.data(), n, scale, levels, got.data()));
        EXPECT_EQ(Bits(got), Bits(want));
        if (levels == 127) continue;  // 7 bits hold nothing above it
        for (const size_t at : {size_t{0}, n / 2, n - 1}) {
          if (n == 0) break;
          std::vector<std::byte> bad = codes;
          bad[at] = static_cast<std::byte>(levels + 1);
          EXPECT_FALSE(internal::DecodeByteLevels(bad.data(), n, scale, levels, got.data()))
              << "at " << at;
        }
      }
    }
  }
  // Through DecodeUpdate: one-byte codes of 100 levels, value 4001 tampered to level 127 (and
  // the checksum made to match, as a hostile sender would).
  Update update;
  update.Clear(Operator::kInt8, 4099);
  update.dense = true;
  update.format.coding = ValueCoding::kLevels;
  update.format.levels = 100;
  update.format.scale = 2.0f;
  for (uint32_t i = 0; i < 4099; ++i) {
    update.values.push_back((i % 2 ? -1 : 1) * LevelValue(2.0f, 100, i % 101));
  }
  ASSERT_EQ(update.format.BitsPerValue(), 8);
  std::vector<std::byte> bytes;
  EncodeUpdate(update, bytes);
  Update decoded;
  ASSERT_TRUE(DecodeUpdate(bytes, 4099, decoded).ok());
  EXPECT_EQ(decoded.values, update.values);
  bytes[kUpdateHeaderBytes + 4001] = static_cast<std::byte>(0x7F);
  RewriteChecksum(bytes);
  DecodeFailure failure{};
  const Status refused = DecodeUpdate(bytes, 4099, decoded, &failure);
  EXPECT_EQ(failure, DecodeFailure::kBadValue);
  EXPECT_NE(refused.message().find("value 4001 has level 127 above 100"), std::string_view::npos)
      << refused;
}

// The Compressor tries the last step's form first. Swinging the density between steps (sparse
// after dense and back) must change nothing but the speed: every step equals DeviceCompressor's
// on the CPU (the scalar kernels), and the bytes equal EncodeUpdate's.
TEST(LevelCodecTest, CompressorFollowsTheDensityFromStepToStep) {
  const size_t d = 9001;
  const Input schedule[] = {Input::kNormal, Input::kMostlyZero, Input::kMostlyZero,
                            Input::kFlat,   Input::kEdges,      Input::kMostlyZero,
                            Input::kTiny,   Input::kFlat,       Input::kNormal};
  // A flat vector of d values makes s/sqrt(d) of a level each: dense from s ~ sqrt(d) = 95.
  struct Spec {
    const char* spec;
    bool crosses;
  };
  for (const auto [spec, crosses] :
       {Spec{"qsgd:4,ef=off", false}, Spec{"qsgd:1,ef=off", false}, Spec{"qsgd:128,ef=off", true},
        Spec{"qsgd:8,rescale=on,ef=on", false}, Spec{"qsgd:200,rescale=on,ef=on", true},
        Spec{"qsgd:100,rescale=on,ef=on", true}, Spec{"int8", true}, Spec{"int8,ef=off", true}}) {
    SCOPED_TRACE(spec);
    auto options = ParseCompressorSpec(spec);
    ASSERT_TRUE(options.ok()) << options.status();
    auto host = Compressor::Create(*options, d);
    auto reference = DeviceCompressor::Create(*options, d, kernels::Device::Cpu());
    ASSERT_TRUE(host.ok() && reference.ok()) << reference.status();
    size_t sparse_steps = 0, dense_steps = 0, to_dense = 0, to_sparse = 0;
    std::optional<bool> was_dense;
    for (size_t step = 0; step < std::size(schedule); ++step) {
      SCOPED_TRACE(::testing::Message() << "step " << step);
      const std::vector<float> input = Make(schedule[step], d, kSeed + 100 + step);
      Update got, want;
      std::vector<std::byte> bytes, want_bytes;
      const Status got_status = host->Compress(input, got, bytes);
      const Status want_status = reference->Compress(input, want);
      ASSERT_EQ(got_status.ok(), want_status.ok()) << got_status << " / " << want_status;
      if (!got_status.ok()) continue;  // the edges' huge values overflow some residual sums
      EXPECT_EQ(got.dense, want.dense);
      EXPECT_EQ(got.indices, want.indices);
      // Equal as numbers: a negative value's zero level is -0 here and +0 there (the device
      // kernels keep levels as signed integers, which have no -0).
      EXPECT_EQ(got.values, want.values);
      EXPECT_EQ(got.format, want.format);
      EncodeUpdate(got, want_bytes);
      EXPECT_EQ(bytes, want_bytes);
      if (options->error_feedback) {
        EXPECT_TRUE(std::equal(host->residual().begin(), host->residual().end(),
                               reference->residual().begin(), reference->residual().end()));
      }
      (got.dense ? dense_steps : sparse_steps) += 1;
      if (was_dense && *was_dense != got.dense) (got.dense ? to_dense : to_sparse) += 1;
      was_dense = got.dense;
    }
    std::printf("%s: %zu dense steps, %zu sparse; %zu turns to dense, %zu to sparse\n", spec,
                dense_steps, sparse_steps, to_dense, to_sparse);
    if (crosses) {  // both ways: a failed sparse attempt, and a dense pass that compacts
      EXPECT_GT(to_dense, 0u);
      EXPECT_GT(to_sparse, 0u);
    }
  }
}

// With error feedback the quantizers form residual + input inside their quantizing pass (the
// sums are only read before it, for the scale): the update quantizes the sums, the residual
// becomes sums - sent bit for bit, an input that cancels the residual leaves exact zeros and
// sends nothing, and a NaN or infinity is refused with the residual unchanged bit for bit.
// Sizes around the vector passes' tails.
TEST(LevelCodecTest, ErrorFeedbackQuantizesTheSumsInThePass) {
  for (const char* spec : {"int8", "int8,seed=3", "qsgd:100,rescale=on,ef=on"}) {
    for (size_t n : {size_t{1}, size_t{17}, size_t{4099}, size_t{70001}}) {
      SCOPED_TRACE(::testing::Message() << spec << " n=" << n);
      auto options = ParseCompressorSpec(spec);
      ASSERT_TRUE(options.ok()) << options.status();
      auto c = Compressor::Create(*options, n);
      ASSERT_TRUE(c.ok()) << c.status();
      Update update;
      for (int t = 0; t < 3; ++t) {
        const std::vector<float> g = Make(Input::kNormal, n, kSeed + 70 + t);
        std::vector<float> sums(n);
        for (size_t i = 0; i < n; ++i) sums[i] = c->residual()[i] + g[i];
        ASSERT_TRUE(c->Compress(g, update).ok());
        std::vector<float> sent(n, 0.0f);
        AddTo(update, 1.0f, std::span<float>(sent));
        std::vector<float> rest(n);
        for (size_t i = 0; i < n; ++i) rest[i] = sums[i] - sent[i];
        ASSERT_EQ(Bits(c->residual()), Bits(rest)) << "step " << t;
        if (options->op == Operator::kInt8) {  // the scale is the largest sum
          float largest = 0;
          for (float v : sums) largest = std::max(largest, std::fabs(v));
          EXPECT_EQ(update.format.scale, largest);
        }
      }
      std::vector<float> cancel(n);
      for (size_t i = 0; i < n; ++i) cancel[i] = -c->residual()[i];
      ASSERT_TRUE(c->Compress(cancel, update).ok());
      EXPECT_EQ(update.count(), 0u);
      for (float r : c->residual()) ASSERT_EQ(r, 0.0f);

      const std::vector<float> g = Make(Input::kNormal, n, kSeed + 90);
      ASSERT_TRUE(c->Compress(g, update).ok());
      const std::vector<uint32_t> before = Bits(c->residual());
      for (const float bad_value :
           {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity()}) {
        std::vector<float> bad = g;
        bad[n / 2] = bad_value;
        EXPECT_FALSE(c->Compress(bad, update).ok());
        EXPECT_EQ(Bits(c->residual()), before);
      }
    }
  }
}

}  // namespace
}  // namespace murmur::coding
