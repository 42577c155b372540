// The model server (gossip/model_server.h): dense snapshots under a token bucket.

#include "gossip/model_server.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "coding/update_codec.h"

namespace murmur::gossip {
namespace {

TEST(ModelServerTest, ServesABurstThenTheRateAndAnswersTheRestWithARefusal) {
  ModelServer server(/*per_second=*/1, /*burst=*/2);
  std::vector<float> model = {0.5f, -1.0f, 2.0f};
  int reads = 0;
  auto read = [&]() -> std::span<const float> {
    ++reads;
    return model;
  };
  const TimePoint t0{};
  for (int i = 0; i < 2; ++i) {
    const auto a = server.Serve(7, 40, read, t0);
    EXPECT_FALSE(a.refused);
    const auto& reply = std::get<SnapshotReply>(a.send.payload);
    EXPECT_EQ(reply.dimension, 3u);
    EXPECT_EQ(reply.round, 40u);
    coding::Update u;
    ASSERT_TRUE(coding::DecodeUpdate(*a.send.frame, 3, u).ok());
    EXPECT_TRUE(u.dense);
    EXPECT_EQ(u.values, model);
  }
  const auto refused = server.Serve(8, 40, read, t0 + std::chrono::milliseconds(500));
  EXPECT_TRUE(refused.refused);
  EXPECT_EQ(refused.send.to, 8u);
  EXPECT_EQ(std::get<SnapshotReply>(refused.send.payload).dimension, 0u);
  EXPECT_EQ(refused.send.frame, nullptr) << "a refusal carries no frame";
  EXPECT_EQ(reads, 2) << "a refused request does not read the model";
  EXPECT_FALSE(server.Serve(8, 41, read, t0 + std::chrono::milliseconds(1600)).refused);
  EXPECT_EQ(server.served(), 3u);
  EXPECT_EQ(server.refused(), 1u);
}

// A model holding a NaN (a library user's own buffer) is never encoded nor served: the request is
// refused by that reason, as one over the rate is, and the token goes back to the bucket.
TEST(ModelServerTest, ANonFiniteModelIsRefusedNotServed) {
  ModelServer server(/*per_second=*/1, /*burst=*/1);
  std::vector<float> model = {0.5f, std::numeric_limits<float>::quiet_NaN(), 2.0f};
  auto read = [&]() -> std::span<const float> { return model; };
  const TimePoint t0{};
  const auto a = server.Serve(7, 40, read, t0);
  EXPECT_TRUE(a.refused);
  EXPECT_EQ(a.reason, kRejectOwnModelNonFinite);
  EXPECT_EQ(a.send.frame, nullptr);
  EXPECT_EQ(std::get<SnapshotReply>(a.send.payload).dimension, 0u);
  model[1] = 1.0f;  // repaired: the token given back serves it at once
  const auto b = server.Serve(7, 41, read, t0);
  EXPECT_FALSE(b.refused);
  EXPECT_TRUE(b.reason.empty());
  EXPECT_EQ(server.served(), 1u);
  EXPECT_EQ(server.refused(), 1u);
}

}  // namespace
}  // namespace murmur::gossip
