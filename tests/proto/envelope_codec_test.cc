#include "proto/envelope_codec.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>
#include <vector>

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
  e.payload_frames = 0;
  e.payload = gossip::Heartbeat{41};
  return e;
}

gossip::MemberEntry Entry(uint64_t id, gossip::MemberState state) {
  return {id,     "tcp://10.0.0." + std::to_string(id) + ":7070", id * 3, state, id * 100, id * 7,
          id * 64, id % 2 == 1};
}

// One value of every payload kind, with non-default fields so a dropped field shows.
std::vector<gossip::Payload> EveryPayload() {
  using gossip::MemberState;
  std::vector<gossip::MemberEntry> gossip = {Entry(1, MemberState::kAlive),
                                             Entry(2, MemberState::kSuspect),
                                             Entry(3, MemberState::kDead),
                                             Entry(4, MemberState::kLeft)};
  return {gossip::NoPayload{},
          gossip::Heartbeat{41},
          gossip::Ping{17, gossip},
          gossip::Ack{18, {gossip[0]}},
          gossip::PingReq{19, 42, "ipc:///tmp/x.sock", gossip},
          gossip::Join{Entry(9, MemberState::kAlive)},
          gossip::Digest{gossip, true},
          gossip::Leave{},
          gossip::UpdateHeader{5, 6, 7850, true, true, 0.0375f},
          gossip::SnapshotRequest{77, true, true},
          gossip::SnapshotReply{8, 1000, true},
          gossip::CodedMessage{gossip::CodedMessage::Kind::kPartialGradient, 11, 4, 3000},
          gossip::FinishMessage{gossip::FinishMessage::Kind::kResult, 3000, 7, 5}};
}

TEST(EnvelopeCodecTest, RoundTripsEveryPayload) {
  const auto payloads = EveryPayload();
  ASSERT_EQ(payloads.size(), std::variant_size_v<gossip::Payload>) << "a payload kind is untested";
  for (const auto& payload : payloads) {
    gossip::Envelope e = Sample();
    e.payload = payload;
    e.payload_frames = gossip::RequiredPayloadFrames(payload);
    const std::string wire = EncodeEnvelope(e);
    EXPECT_EQ(wire.size() % 8, 0u);
    Rejection why = Rejection::kCount;
    auto decoded = DecodeEnvelope(Bytes(wire), "lab-7", DecodeLimits(), &why);
    ASSERT_TRUE(decoded.ok()) << "kind " << payload.index() << ": " << decoded.status();
    EXPECT_EQ(why, Rejection::kNone);
    EXPECT_EQ(*decoded, e) << "kind " << payload.index();
    EXPECT_TRUE(CheckPayloadFrames(*decoded, e.payload_frames).ok());
  }
}

// A finish receipt is a header alone: a frame after it is refused, as one missing after a result.
TEST(EnvelopeCodecTest, AFinishReceiptCarriesNoFrame) {
  gossip::Envelope e = Sample();
  e.payload = gossip::FinishMessage{gossip::FinishMessage::Kind::kReceipt, 3000, 7, 5};
  e.payload_frames = gossip::RequiredPayloadFrames(e.payload);
  EXPECT_EQ(e.payload_frames, 0u);
  Rejection why = Rejection::kCount;
  auto decoded = DecodeEnvelope(Bytes(EncodeEnvelope(e)), "lab-7", DecodeLimits(), &why);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, e);
  EXPECT_FALSE(CheckPayloadFrames(*decoded, 1).ok());
  e.payload_frames = 1;
  EXPECT_FALSE(DecodeEnvelope(Bytes(EncodeEnvelope(e)), "lab-7", DecodeLimits(), &why).ok());
  EXPECT_EQ(why, Rejection::kInvalidField);
  e.payload = gossip::FinishMessage{gossip::FinishMessage::Kind::kResult, 3000, 7, 5};
  EXPECT_EQ(gossip::RequiredPayloadFrames(e.payload), 1u);
}

TEST(EnvelopeCodecTest, EachRejectionHasItsReason) {
  Rejection why = Rejection::kNone;
  gossip::Envelope e = Sample();
  e.payload_frames = 3;  // a heartbeat carries none
  EXPECT_EQ(DecodeEnvelope(Bytes(EncodeEnvelope(e)), "lab-7", {}, &why).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(why, Rejection::kInvalidField);

  e = Sample();
  e.payload = gossip::UpdateHeader{1, 0, 10, false};
  e.payload_frames = 1;
  auto decoded = DecodeEnvelope(Bytes(EncodeEnvelope(e)), "lab-7", {}, &why);
  ASSERT_TRUE(decoded.ok());
  Status frames = CheckPayloadFrames(*decoded, 0, &why);
  EXPECT_EQ(frames.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(why, Rejection::kFramesMissing);
  EXPECT_NE(frames.message().find("1 payload frames but 0 arrived"), std::string_view::npos);

  e = Sample();
  e.payload = gossip::Digest{std::vector<gossip::MemberEntry>(20, Entry(1, gossip::MemberState::kAlive)), false};
  DecodeLimits few;
  few.max_members = 19;
  EXPECT_EQ(DecodeEnvelope(Bytes(EncodeEnvelope(e)), "lab-7", few, &why).status().code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(why, Rejection::kOversized);

  e = Sample();
  e.cluster_id = std::string(300, 'c');
  EXPECT_FALSE(DecodeEnvelope(Bytes(EncodeEnvelope(e)), "", {}, &why).ok());
  EXPECT_EQ(why, Rejection::kOversized);

  e = Sample();
  EXPECT_FALSE(DecodeEnvelope(Bytes(EncodeEnvelope(e)), "lab-8", {}, &why).ok());
  EXPECT_EQ(why, Rejection::kCluster);
  e.schema_version = 9;
  EXPECT_FALSE(DecodeEnvelope(Bytes(EncodeEnvelope(e)), "lab-7", {}, &why).ok());
  EXPECT_EQ(why, Rejection::kVersion);
  EXPECT_FALSE(DecodeEnvelope(Bytes(std::string(13, 'x')), "lab-7", {}, &why).ok());
  EXPECT_EQ(why, Rejection::kMalformed);
  for (int r = 0; r < static_cast<int>(Rejection::kCount); ++r) {
    EXPECT_NE(RejectionName(static_cast<Rejection>(r)), "unknown") << r;
  }
}

TEST(EnvelopeCodecTest, UnknownMemberStateIsRefused) {
  gossip::Envelope e = Sample();
  auto entry = Entry(5, gossip::MemberState::kAlive);
  e.payload = gossip::Join{entry};
  std::string wire = EncodeEnvelope(e);
  // The state enum is a 16-bit field; find it by encoding each state and diffing.
  e.payload = gossip::Join{Entry(5, gossip::MemberState::kLeft)};
  const std::string left = EncodeEnvelope(e);
  ASSERT_EQ(left.size(), wire.size());
  size_t at = 0;
  while (at < wire.size() && wire[at] == left[at]) ++at;
  ASSERT_LT(at, wire.size());
  wire[at] = 9;
  Rejection why = Rejection::kNone;
  auto r = DecodeEnvelope(Bytes(wire), "lab-7", {}, &why);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status();
  EXPECT_EQ(why, Rejection::kInvalidField);
}

TEST(EnvelopeCodecTest, NonFiniteConsensusIsRefused) {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    gossip::Envelope e = Sample();
    e.payload = gossip::UpdateHeader{1, 0, 10, false, false, bad};
    e.payload_frames = 1;
    Rejection why = Rejection::kNone;
    auto r = DecodeEnvelope(Bytes(EncodeEnvelope(e)), "lab-7", {}, &why);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(why, Rejection::kInvalidField) << bad;
  }
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
  gossip::Envelope digest = Sample();
  digest.payload = EveryPayload()[6];
  const std::string wire = EncodeEnvelope(digest);
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
