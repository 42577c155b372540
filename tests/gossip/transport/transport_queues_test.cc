// The transport's receive-side inbox (gossip/transport/queues.h): bounded in messages and in
// bytes, dropping the oldest, the newest always kept.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "gossip/transport/queues.h"

namespace murmur::transport {
namespace {

Message Sized(size_t bytes, char tag) {
  return {Frame::FromString(std::string(bytes, tag)), {}, Traffic::kUpdate, std::nullopt};
}

TEST(InboxTest, HoldsAtMostItsBytesKeepingTheNewest) {
  for (size_t cap :
       {size_t{1}, size_t{999}, size_t{1000}, size_t{1001}, size_t{5500}, size_t{100000}}) {
    SCOPED_TRACE(cap);
    Inbox inbox(4096, cap);
    for (int i = 0; i < 20; ++i) inbox.Push(Sized(1000, static_cast<char>('a' + i)));
    TransportStats stats;
    inbox.AddStats(stats);
    const size_t kept = std::max<size_t>(1, std::min<size_t>(20, cap / 1000));
    EXPECT_EQ(stats.received_messages, 20u);
    EXPECT_EQ(stats.dropped_inbox, 20u - kept);
    for (size_t k = 0; k < kept; ++k) {
      auto m = inbox.Pop(std::chrono::milliseconds(0));
      ASSERT_TRUE(m.has_value());
      EXPECT_EQ(m->header.bytes()[0], static_cast<std::byte>('a' + 20 - kept + k));
    }
    EXPECT_FALSE(inbox.Pop(std::chrono::milliseconds(0)).has_value());
  }
}

TEST(InboxTest, ALargeMessageAloneIsKeptAndDisplacesTheRest) {
  Inbox inbox(4096, 3000);
  inbox.Push(Sized(1000, 'a'));
  inbox.Push(Sized(1000, 'b'));
  inbox.Push(Sized(50000, 'c'));
  auto m = inbox.Pop(std::chrono::milliseconds(0));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->header.size(), 50000u);
  EXPECT_FALSE(inbox.Pop(std::chrono::milliseconds(0)).has_value());
}

}  // namespace
}  // namespace murmur::transport
