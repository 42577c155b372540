// Deferred messages (gossip/deferred_messages.h): a bounded, owning holding area.

#include "gossip/deferred_messages.h"

#include <gtest/gtest.h>

#include <vector>

namespace murmur::gossip {
namespace {

Incoming WithFrame(NodeId from, const std::vector<std::byte>& frame) {
  Incoming m;
  m.from = from;
  m.payload = NoPayload{};
  m.frame = frame;
  return m;
}

TEST(DeferredMessagesTest, AHeldMessageOwnsItsBytesAfterTheTransportBufferIsGone) {
  DeferredMessages held(4, 1024);
  const TimePoint t0{};
  {
    std::vector<std::byte> transient(100, std::byte{7});
    ASSERT_TRUE(held.Hold(WithFrame(2, transient), t0 + std::chrono::seconds(1)));
    transient.assign(100, std::byte{0});  // the transport reuses its buffer
  }
  EXPECT_EQ(held.bytes(), 100u);
  auto all = held.TakeAll();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(held.size(), 0u);
  EXPECT_EQ(held.bytes(), 0u);
  ASSERT_EQ(all[0].message.frame.size(), 100u);
  EXPECT_EQ(all[0].message.frame[99], std::byte{7});
  EXPECT_EQ(all[0].message.frame.data(), all[0].bytes.data());
  EXPECT_EQ(all[0].expires, t0 + std::chrono::seconds(1));
}

TEST(DeferredMessagesTest, NeitherTheCountNorTheBytesExceedTheirBounds) {
  DeferredMessages held(3, 250);
  const std::vector<std::byte> frame(100);
  EXPECT_TRUE(held.Hold(WithFrame(2, frame), {}));
  EXPECT_TRUE(held.Hold(WithFrame(3, frame), {}));
  EXPECT_FALSE(held.Hold(WithFrame(4, frame), {})) << "300 bytes > 250";
  EXPECT_TRUE(held.Hold(WithFrame(4, {}), {}));
  EXPECT_FALSE(held.Hold(WithFrame(5, {}), {})) << "a fourth message";
  EXPECT_EQ(held.size(), 3u);
  EXPECT_EQ(held.bytes(), 200u);
}

TEST(DeferredMessagesTest, KeptMessagesStayInOrderAndPointAtTheirOwnBytes) {
  DeferredMessages held(8, 1 << 20);
  for (uint8_t i = 1; i <= 5; ++i) {
    ASSERT_TRUE(held.Hold(WithFrame(i, std::vector<std::byte>(i, std::byte{i})), {}));
  }
  for (auto& h : held.TakeAll()) {
    if (h.message.from % 2 == 1) held.Keep(std::move(h));
  }
  EXPECT_EQ(held.bytes(), 1u + 3u + 5u);
  const auto kept = held.TakeAll();
  ASSERT_EQ(kept.size(), 3u);
  for (size_t k = 0; k < kept.size(); ++k) {
    const auto id = static_cast<uint8_t>(2 * k + 1);
    EXPECT_EQ(kept[k].message.from, id);
    ASSERT_EQ(kept[k].message.frame.size(), id);
    EXPECT_EQ(kept[k].message.frame.data(), kept[k].bytes.data());
    EXPECT_EQ(kept[k].message.frame[0], std::byte{id});
  }
}

}  // namespace
}  // namespace murmur::gossip
