// coding/stream_store.h: StreamCopy against memcpy at every alignment of the destination and
// sizes around the 64-byte lines, nothing written outside the destination; and `none`'s dense
// pass with its outputs streamed (forced at small sizes) against Compress + EncodeUpdate.
#include "coding/stream_store.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "coding/compressor.h"
#include "coding/update_codec.h"
#include "tests/testing/test_vectors.h"

namespace murmur::coding {
namespace {

using testing::Bits;

constexpr uint64_t kSeed = 20261127;

TEST(StreamStoreTest, StreamCopyIsMemcpyAtEveryAlignment) {
  std::printf("seed %llu\n", static_cast<unsigned long long>(kSeed));
  std::mt19937_64 rng(kSeed);
  const size_t sizes[] = {0, 1, 3, 63, 64, 65, 127, 128, 129, 191, 1000, 4096, 16385};
  std::vector<std::byte> source(16385 + 64);
  for (auto& b : source) b = static_cast<std::byte>(rng());
  for (size_t offset = 0; offset < 64; ++offset) {
    for (size_t size : sizes) {
      SCOPED_TRACE(::testing::Message() << "destination offset " << offset << ", " << size
                                        << " bytes");
      // 64-byte aligned storage with guard bytes on both sides of the destination.
      std::vector<std::byte> storage(size + 256, std::byte{0xA5});
      auto* base = reinterpret_cast<std::byte*>(
          (reinterpret_cast<uintptr_t>(storage.data()) + 63) / 64 * 64);
      std::byte* dst = base + 64 + offset;
      const std::byte* src = source.data() + (offset * 7) % 64;  // any alignment
      internal::StreamCopy(dst, src, size);
      internal::StreamFence();
      EXPECT_EQ(std::memcmp(dst, src, size), 0);
      for (std::byte* p = storage.data(); p < dst; ++p) ASSERT_EQ(*p, std::byte{0xA5});
      for (std::byte* p = dst + size; p < storage.data() + storage.size(); ++p) {
        ASSERT_EQ(*p, std::byte{0xA5});
      }
    }
  }
}

// The scalar lead before a pass's stores from registers: to the next line, never a whole one.
TEST(StreamStoreTest, FloatsToLineReachesTheNextLine) {
  alignas(64) float line[32];
  for (size_t offset = 0; offset < 16; ++offset) {
    const size_t lead = internal::FloatsToLine(line + offset);
    EXPECT_EQ(lead, (16 - offset) % 16) << "offset " << offset;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(line + offset + lead) % 64, 0u) << "offset " << offset;
  }
}

TEST(StreamStoreTest, ForcedThresholdDecides) {
  {
    const internal::ScopedStreamThresholdForTesting at_1000(1000);
    EXPECT_FALSE(internal::ShouldStream(999));
#if defined(__SSE2__)
    EXPECT_TRUE(internal::ShouldStream(1000));
#endif
  }
  EXPECT_FALSE(internal::ShouldStream(1000));  // the last-level cache is larger
}

// `none` writes its values and payload through the stage when they exceed the threshold; the
// results must be the definition's at every size around the blocks and vector tails.
TEST(StreamStoreTest, StreamedNoneIsBitIdenticalToCompressThenEncode) {
  const internal::ScopedStreamThresholdForTesting stream_everything(1);
  const size_t sizes[] = {0, 1, 15, 16, 17, 4095, 4096, 4097, 8193, 100003};
  for (const char* spec : {"none", "none,ef=off"}) {
    for (size_t n : sizes) {
      CompressorOptions options = *ParseCompressorSpec(spec);
      Compressor two_step = *Compressor::Create(options, n);
      Compressor streamed = *Compressor::Create(options, n);
      Update expected, got;
      std::vector<std::byte> expected_bytes, got_bytes;
      for (uint64_t step = 1; step <= 2; ++step) {
        SCOPED_TRACE(::testing::Message() << spec << " n=" << n << " step " << step);
        std::vector<float> input =
            testing::MakeVector(testing::Distribution::kNormal, n, kSeed + step);
        if (n > 3) input[3] = -0.0f;
        ASSERT_TRUE(two_step.Compress(input, expected).ok());
        ASSERT_TRUE(streamed.Compress(input, got, got_bytes).ok());
        EncodeUpdate(expected, expected_bytes);
        EXPECT_EQ(Bits(got.values), Bits(expected.values));
        EXPECT_EQ(got_bytes, expected_bytes);
      }
    }
  }
  // A non-finite value is still refused when streamed.
  Compressor c = *Compressor::Create(*ParseCompressorSpec("none"), 5000);
  std::vector<float> input(5000, 1.0f);
  input[4097] = std::numeric_limits<float>::infinity();
  Update update;
  std::vector<std::byte> bytes;
  EXPECT_FALSE(c.Compress(input, update, bytes).ok());
}

}  // namespace
}  // namespace murmur::coding
