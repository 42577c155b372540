#include "proto/envelope_codec.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

namespace murmur::proto {
namespace {

std::span<const std::byte> Bytes(const std::string& s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

gossip::Envelope Sample() {
  gossip::Envelope e;
  e.cluster_id = "lab-7";
  e.sender_id = 0xfeedbeefcafe;
  e.incarnation = 3;
  e.step_clock = 12345;
  e.sequence = 99;
  e.payload_frames = 2;
  e.payload = gossip::Heartbeat{41};
  return e;
}

TEST(EnvelopeCodecTest, RoundTripsEveryPayload) {
  gossip::Envelope e = Sample();
  const std::string wire = EncodeEnvelope(e);
  EXPECT_EQ(wire.size() % 8, 0u);
  auto decoded = DecodeEnvelope(Bytes(wire), "lab-7");
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, e);

  e.payload = gossip::NoPayload{};
  decoded = DecodeEnvelope(Bytes(EncodeEnvelope(e)), "");
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, e);
}

TEST(EnvelopeCodecTest, DecodesFromUnalignedMemory) {
  const std::string wire = EncodeEnvelope(Sample());
  std::string shifted = "x" + wire;
  auto decoded = DecodeEnvelope(Bytes(shifted).subspan(1), "lab-7");
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->step_clock, 12345u);
}

TEST(EnvelopeCodecTest, RejectsOtherClusterAndVersion) {
  const std::string wire = EncodeEnvelope(Sample());
  auto other = DecodeEnvelope(Bytes(wire), "lab-8");
  EXPECT_EQ(other.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(other.status().message().find("lab-7"), std::string_view::npos);

  gossip::Envelope future = Sample();
  future.schema_version = gossip::kSchemaVersion + 1;
  auto version = DecodeEnvelope(Bytes(EncodeEnvelope(future)), "lab-7");
  EXPECT_EQ(version.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(version.status().message().find("schema version"), std::string_view::npos);
}

TEST(EnvelopeCodecTest, RejectsOversizedAndMisshapenFrames) {
  const std::string wire = EncodeEnvelope(Sample());
  DecodeLimits tight;
  tight.max_header_bytes = wire.size() - 8;
  EXPECT_EQ(DecodeEnvelope(Bytes(wire), "", tight).status().code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(DecodeEnvelope({}, "").status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(DecodeEnvelope(Bytes(wire).first(wire.size() - 3), "").status().code(),
            StatusCode::kDataLoss);
}

TEST(EnvelopeCodecTest, EveryTruncationIsAnErrorNotACrash) {
  const std::string wire = EncodeEnvelope(Sample());
  for (size_t words = 0; words < wire.size() / 8; ++words) {
    auto r = DecodeEnvelope(Bytes(wire).first(words * 8), "lab-7");
    EXPECT_FALSE(r.ok()) << "prefix of " << words << " words decoded";
  }
}

TEST(EnvelopeCodecTest, RandomCorruptionNeverCrashes) {
  const uint64_t seed = 7;
  std::mt19937_64 rng(seed);
  const std::string wire = EncodeEnvelope(Sample());
  int rejected = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string bad = wire;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) bad[rng() % bad.size()] = static_cast<char>(rng());
    auto r = DecodeEnvelope(Bytes(bad), "lab-7");
    if (!r.ok()) ++rejected;
  }
  // Many flips land in data fields and still decode; the point is that none crashed and the
  // structural ones were caught.
  EXPECT_GT(rejected, 0) << "seed " << seed;
}

}  // namespace
}  // namespace murmur::proto
