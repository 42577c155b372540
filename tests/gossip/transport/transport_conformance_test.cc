// One conformance suite, run against every Transport implementation (transport.h's contract).

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <thread>

#include "gossip/transport/inproc_transport.h"
#include "gossip/transport/zmq_transport.h"

namespace murmur::transport {
namespace {

using std::chrono::milliseconds;

class TransportConformanceTest : public ::testing::TestWithParam<std::string> {
 protected:
  // A listen address no one else uses in this process.
  std::string FreshListen() {
    static std::atomic<int> counter{0};
    const int n = counter++;
    if (GetParam() == "tcp") return "tcp://127.0.0.1:0";
    if (GetParam() == "ipc") {
      return "ipc:///tmp/murmur-conformance-" + std::to_string(::getpid()) + "-" +
             std::to_string(n) + ".sock";
    }
    return "inproc://node-" + std::to_string(n);
  }
  // An endpoint nobody listens on.
  std::string Nowhere() {
    if (GetParam() == "tcp") {
      // Bind then free a port, so nothing listens there.
      auto t = Make(FreshListen());
      return t->endpoint();
    }
    return FreshListen();
  }
  std::unique_ptr<Transport> Make(const std::string& listen, TransportOptions o = {}) {
    o.listen = listen;
    auto t = GetParam() == "inproc" ? CreateInProcTransport(network_, o) : CreateZmqTransport(o);
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? std::move(*t) : nullptr;
  }

  // Bounds above any test's message count and bytes: for tests of order and delivery, not of
  // the drop policy.
  static TransportOptions Roomy() {
    TransportOptions o;
    o.max_queued_messages = 100000;
    o.max_queued_bytes = size_t{1} << 40;
    o.max_inbox_messages = 100000;
    return o;
  }

  static Message Numbered(uint64_t n, Traffic traffic = Traffic::kUpdate,
                          std::vector<Frame> frames = {}) {
    std::string header(8, '\0');
    std::memcpy(header.data(), &n, 8);
    return {Frame::FromString(header), std::move(frames), traffic, std::nullopt};
  }
  static uint64_t NumberOf(const Message& m) {
    uint64_t n = 0;
    EXPECT_EQ(m.header.size(), 8u);
    std::memcpy(&n, m.header.data(), std::min<size_t>(8, m.header.size()));
    return n;
  }
  // Receives until `count` messages arrived or `wait` passed.
  static std::vector<Message> ReceiveN(Transport& t, size_t count,
                                       milliseconds wait = milliseconds(10000)) {
    std::vector<Message> out;
    const auto end = std::chrono::steady_clock::now() + wait;
    while (out.size() < count && std::chrono::steady_clock::now() < end) {
      if (auto m = t.Receive(milliseconds(50))) out.push_back(std::move(*m));
    }
    return out;
  }

  // Messages numbered source * stride + i (i = 0, 1, ...): each source's arrive in order.
  static void ExpectOrderPerSource(const std::vector<Message>& got, size_t sources,
                                   uint64_t stride) {
    std::vector<int64_t> last(sources, -1);
    for (const Message& m : got) {
      const uint64_t n = NumberOf(m);
      const size_t source = n / stride;
      ASSERT_LT(source, sources);
      EXPECT_EQ(static_cast<int64_t>(n % stride), last[source] + 1) << "source " << source;
      last[source] = static_cast<int64_t>(n % stride);
    }
  }

  std::shared_ptr<InProcNetwork> network_ = MakeInProcNetwork();
};

TEST_P(TransportConformanceTest, DeliversInOrderPerPeer) {
  auto b = Make(FreshListen(), Roomy());
  auto a = Make(FreshListen(), Roomy());
  const size_t n = 5000;
  for (uint64_t i = 0; i < n; ++i) a->Send(b->endpoint(), Numbered(i));
  auto got = ReceiveN(*b, n);
  ASSERT_EQ(got.size(), n);
  for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(NumberOf(got[i]), i);
  EXPECT_EQ(a->Stats().sent_messages, n);
  EXPECT_EQ(b->Stats().received_messages, n);
}

TEST_P(TransportConformanceTest, CarriesLargeAndEmptyFramesIntact) {
  auto b = Make(FreshListen());
  auto a = Make(FreshListen());
  for (size_t size : {size_t{0}, size_t{1}, size_t{4097}, size_t{64} << 20}) {
    std::vector<std::byte> big(size);
    for (size_t i = 0; i < size; ++i) big[i] = static_cast<std::byte>((i * 2654435761u) >> 13);
    Frame frame = Frame::FromBytes(big);
    a->Send(b->endpoint(), Numbered(size, Traffic::kUpdate, {frame, Frame::FromString("tail")}));
    auto got = ReceiveN(*b, 1);
    ASSERT_EQ(got.size(), 1u) << "size " << size;
    ASSERT_EQ(got[0].frames.size(), 2u);
    EXPECT_EQ(NumberOf(got[0]), size);
    ASSERT_EQ(got[0].frames[0].size(), size);
    EXPECT_EQ(std::memcmp(got[0].frames[0].data(), big.data(), size), 0) << "size " << size;
    EXPECT_EQ(got[0].frames[1].view(), "tail");
  }
}

TEST_P(TransportConformanceTest, ManyPeersEachKeepTheirOrder) {
  auto sink = Make(FreshListen());
  const size_t peers = 24, each = 100;
  std::vector<std::unique_ptr<Transport>> senders;
  for (size_t p = 0; p < peers; ++p) senders.push_back(Make(FreshListen()));
  std::vector<std::thread> threads;
  for (size_t p = 0; p < peers; ++p) {
    threads.emplace_back([&, p] {
      for (uint64_t i = 0; i < each; ++i)
        senders[p]->Send(sink->endpoint(), Numbered(p * 1000 + i));
    });
  }
  for (auto& t : threads) t.join();
  auto got = ReceiveN(*sink, peers * each);
  ASSERT_EQ(got.size(), peers * each);
  ExpectOrderPerSource(got, peers, 1000);
}

// Several threads of one node sending to one peer at once (the training thread's rounds, the
// peer's membership messages): nothing is lost and each thread's messages keep their order,
// also while the socket is at its high-water mark (large frames every so often), where sends
// alternate between the caller's thread and the transport's queue.
TEST_P(TransportConformanceTest, ConcurrentSendersThroughOneTransportKeepEachThreadsOrder) {
  auto b = Make(FreshListen(), Roomy());
  auto a = Make(FreshListen(), Roomy());
  const size_t threads = 4, each = 1500;
  const Frame big = Frame::FromBytes(std::vector<std::byte>(256 << 10, std::byte{7}));
  std::vector<std::thread> senders;
  for (size_t t = 0; t < threads; ++t) {
    senders.emplace_back([&, t] {
      for (uint64_t i = 0; i < each; ++i) {
        std::vector<Frame> frames;
        if (i % 50 == 0) frames.push_back(big);
        a->Send(b->endpoint(), Numbered(t * 100000 + i, Traffic::kUpdate, std::move(frames)));
      }
    });
  }
  for (auto& t : senders) t.join();
  auto got = ReceiveN(*b, threads * each, milliseconds(30000));
  ASSERT_EQ(got.size(), threads * each);
  ExpectOrderPerSource(got, threads, 100000);
  for (const Message& m : got) EXPECT_EQ(m.frames.size(), NumberOf(m) % 50 == 0 ? 1u : 0u);
  EXPECT_EQ(a->Stats().sent_messages, threads * each);
}

// The ZeroMQ transport reads its socket on the receiving caller's thread: two threads receiving
// at once must each get whole messages, every message exactly once, each sender's in order.
TEST_P(TransportConformanceTest, ConcurrentReceiversGetEveryMessageOnce) {
  auto b = Make(FreshListen(), Roomy());
  auto a = Make(FreshListen(), Roomy());
  const size_t n = 4000;
  std::atomic<size_t> received{0};
  std::vector<std::vector<uint64_t>> seen(2);
  std::vector<std::thread> receivers;
  for (size_t r = 0; r < 2; ++r) {
    receivers.emplace_back([&, r] {
      const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (received.load() < n && std::chrono::steady_clock::now() < end) {
        // Alternate blocking and non-blocking calls: both must read the socket.
        auto m = b->Receive(milliseconds(seen[r].size() % 2 == 0 ? 20 : 0));
        if (!m.has_value()) continue;
        EXPECT_EQ(m->frames.size(), 1u);
        if (m->frames.size() == 1) {
          EXPECT_EQ(m->frames[0].view(), std::to_string(NumberOf(*m)));
        }
        seen[r].push_back(NumberOf(*m));
        ++received;
      }
    });
  }
  for (uint64_t i = 0; i < n; ++i) {
    a->Send(b->endpoint(), Numbered(i, Traffic::kUpdate, {Frame::FromString(std::to_string(i))}));
  }
  for (auto& t : receivers) t.join();
  std::vector<uint64_t> all;
  for (const auto& s : seen) {
    EXPECT_TRUE(std::is_sorted(s.begin(), s.end()));  // one thread's takes keep the send order
    all.insert(all.end(), s.begin(), s.end());
  }
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), n);
  for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(all[i], i);
  std::printf("receiver 0 took %zu, receiver 1 took %zu\n", seen[0].size(), seen[1].size());
}

TEST_P(TransportConformanceTest, ZeroTimeoutReceiveTakesWhatHasArrived) {
  auto b = Make(FreshListen());
  auto a = Make(FreshListen());
  a->Send(b->endpoint(), Numbered(7));
  // Only non-blocking calls: the message must be read from wherever it waits.
  std::optional<Message> m;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!m.has_value() && std::chrono::steady_clock::now() < end) {
    m = b->Receive(milliseconds(0));
    if (!m.has_value()) std::this_thread::yield();
  }
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(NumberOf(*m), 7u);
  EXPECT_FALSE(b->Receive(milliseconds(0)).has_value());
}

TEST_P(TransportConformanceTest, VanishedPeerNeverBlocksAndDropsOldestUpdatesFirst) {
  const std::string nowhere = Nowhere();
  TransportOptions small;
  small.max_queued_messages = 64;
  auto a = Make(FreshListen(), small);
  const uint64_t updates = 10000;
  for (uint64_t i = 0; i < updates; ++i) {
    if (i % 1000 == 0) a->Send(nowhere, Numbered(1'000'000 + i, Traffic::kControl));
    a->Send(nowhere, Numbered(i));
  }
  // Everything beyond the bound is dropped, updates only: the 10 control messages stay.
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (a->Stats().dropped_updates < updates + 10 - 64 && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_EQ(a->Stats().dropped_updates, updates + 10 - 64);
  EXPECT_EQ(a->Stats().dropped_control, 0u);

  // When the peer appears, the survivors arrive: the 10 control messages and the newest updates.
  auto b = Make(nowhere);
  ASSERT_NE(b, nullptr);
  auto got = ReceiveN(*b, 64);
  ASSERT_EQ(got.size(), 64u);
  int control = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const uint64_t n = NumberOf(got[i]);
    if (n >= 1'000'000) {
      ++control;
    } else {
      EXPECT_GE(n, updates - 54) << "an old update survived";
    }
  }
  EXPECT_EQ(control, 10);
}

TEST_P(TransportConformanceTest, PeerThatComesBackReceivesLaterMessagesInOrder) {
  auto b = Make(FreshListen());
  const std::string endpoint = b->endpoint();
  auto a = Make(FreshListen());
  a->Send(endpoint, Numbered(0));
  ASSERT_EQ(ReceiveN(*b, 1).size(), 1u);
  b.reset();  // the peer vanishes
  for (uint64_t i = 1; i <= 5; ++i) a->Send(endpoint, Numbered(i));
  b = Make(endpoint);  // and comes back at the same address
  ASSERT_NE(b, nullptr);
  // Keep sending until one arrives (reconnection backs off), then everything after it arrives in
  // order with no gap. Messages 1..5 may be delivered or lost, never reordered.
  uint64_t next = 6, first = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (first == 0 && std::chrono::steady_clock::now() < end) {
    a->Send(endpoint, Numbered(next++));
    if (auto m = b->Receive(milliseconds(20))) first = NumberOf(*m);
  }
  ASSERT_NE(first, 0u) << "the peer never came back";
  const uint64_t last = next + 50;
  for (uint64_t i = next; i < last; ++i) a->Send(endpoint, Numbered(i));
  uint64_t expect = first + 1;
  for (auto& m : ReceiveN(*b, last - first - 1)) {
    ASSERT_EQ(NumberOf(m), expect);
    ++expect;
  }
  EXPECT_EQ(expect, last);
}

TEST_P(TransportConformanceTest, RefusesMessagesWithTooManyFrames) {
  TransportOptions strict;
  strict.max_frames = 2;
  auto b = Make(FreshListen(), strict);
  auto a = Make(FreshListen());
  std::vector<Frame> three(3, Frame::FromString("x"));
  a->Send(b->endpoint(), Numbered(1, Traffic::kUpdate, three));
  a->Send(b->endpoint(), Numbered(2, Traffic::kUpdate, {three[0]}));
  auto got = ReceiveN(*b, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(NumberOf(got[0]), 2u);
  EXPECT_EQ(b->Stats().refused_malformed, 1u);
}

// A frame above max_frame_bytes never reaches the consumer (ZeroMQ's socket refuses it from its
// size, before reading it, and drops that connection); other senders are not affected.
TEST_P(TransportConformanceTest, RefusesFramesAboveTheFrameBound) {
  TransportOptions small = Roomy();
  small.max_frame_bytes = 4096;
  auto b = Make(FreshListen(), small);
  auto a = Make(FreshListen(), Roomy());
  auto c = Make(FreshListen(), Roomy());
  a->Send(b->endpoint(),
          Numbered(1, Traffic::kUpdate, {Frame::FromString(std::string(5000, 'x'))}));
  c->Send(b->endpoint(),
          Numbered(2, Traffic::kUpdate, {Frame::FromString(std::string(4096, 'y'))}));
  auto got = ReceiveN(*b, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(NumberOf(got[0]), 2u);
  EXPECT_TRUE(ReceiveN(*b, 1, milliseconds(300)).empty()) << "the oversized frame arrived";
}

// Lanes (transport.h): membership messages in their order, everything else in its order, each
// message whole, whatever the interleaving at the sender.
TEST_P(TransportConformanceTest, EachLaneKeepsItsOrder) {
  auto b = Make(FreshListen(), Roomy());
  auto a = Make(FreshListen(), Roomy());
  const uint64_t n = 3000;
  const uint64_t stride = 1'000'000;  // membership messages numbered from `stride` on
  for (uint64_t i = 0; i < n; ++i) {
    if (i % 3 == 0) {
      a->Send(b->endpoint(), Numbered(stride + i / 3, Traffic::kMembership));
    } else {
      a->Send(b->endpoint(), Numbered(i, i % 3 == 1 ? Traffic::kUpdate : Traffic::kControl,
                                      {Frame::FromString(std::string(100 + i, 'x'))}));
    }
  }
  auto got = ReceiveN(*b, n);
  ASSERT_EQ(got.size(), n);
  int64_t last_membership = -1;
  int64_t last_other = -1;
  for (const Message& m : got) {
    const auto k = static_cast<int64_t>(NumberOf(m));
    if (k >= static_cast<int64_t>(stride)) {
      EXPECT_TRUE(m.frames.empty());
      EXPECT_EQ(k - static_cast<int64_t>(stride), last_membership + 1);
      last_membership = k - static_cast<int64_t>(stride);
    } else {
      ASSERT_EQ(m.frames.size(), 1u);
      EXPECT_EQ(m.frames[0].size(), 100u + static_cast<size_t>(k));
      EXPECT_GT(k, last_other);
      EXPECT_NE(k % 3, 0);
      last_other = k;
    }
  }
}

// ZeroMQ: a membership message sent after 50 MB of models to the same peer does not wait behind
// them (on a thin link, the probe that waited behind a model made a live member look dead). In
// one lane it would arrive last.
TEST_P(TransportConformanceTest, AMembershipMessageOvertakesModelsSentBeforeIt) {
  if (GetParam() == "inproc") GTEST_SKIP() << "the in-process transport keeps one order";
  auto b = Make(FreshListen(), Roomy());
  auto a = Make(FreshListen(), Roomy());
  const uint64_t models = 400;
  const Frame model = Frame::FromString(std::string(size_t{128} << 10, 'm'));
  for (uint64_t i = 0; i < models; ++i)
    a->Send(b->endpoint(), Numbered(i, Traffic::kControl, {model}));
  a->Send(b->endpoint(), Numbered(models, Traffic::kMembership));
  auto got = ReceiveN(*b, models + 1);
  ASSERT_EQ(got.size(), models + 1);
  size_t at = 0;
  while (at < got.size() && NumberOf(got[at]) != models) ++at;
  std::printf("the membership message arrived %zu-th of %lu\n", at + 1,
              static_cast<unsigned long>(models + 1));
  EXPECT_LT(at, models) << "it waited behind every model";
}

// A node's last words: a final model to a peer it never sent a model to (a lane made at the
// end, still connecting) and its Leave, sent just before the transport closes, both arrive.
TEST_P(TransportConformanceTest, WhatIsSentJustBeforeCloseArrivesOnAFreshLane) {
  auto b = Make(FreshListen(), Roomy());
  auto a = Make(FreshListen(), Roomy());
  a->Send(b->endpoint(), Numbered(0, Traffic::kMembership));
  ASSERT_EQ(ReceiveN(*b, 1).size(), 1u);
  a->Send(b->endpoint(),
          Numbered(1, Traffic::kControl, {Frame::FromString(std::string(4096, 'm'))}));
  a->Send(b->endpoint(), Numbered(2, Traffic::kMembership));
  a.reset();
  auto got = ReceiveN(*b, 2);
  ASSERT_EQ(got.size(), 2u);
  std::vector<uint64_t> numbers{NumberOf(got[0]), NumberOf(got[1])};
  std::sort(numbers.begin(), numbers.end());
  EXPECT_EQ(numbers, (std::vector<uint64_t>{1, 2}));
}

INSTANTIATE_TEST_SUITE_P(AllTransports, TransportConformanceTest,
                         ::testing::Values("tcp", "ipc", "inproc"),
                         [](const auto& info) { return info.param; });

TEST(TransportEndpointTest, ValidatesEndpoints) {
  EXPECT_TRUE(ValidateEndpoint("tcp://127.0.0.1:7070").ok());
  EXPECT_TRUE(ValidateEndpoint("tcp://node-3.murmur:0").ok());
  EXPECT_TRUE(ValidateEndpoint("ipc:///tmp/a.sock").ok());
  for (const char* bad : {"udp://x:1", "tcp://x", "tcp://x:99999", "tcp://:80", "ipc://", "x"}) {
    EXPECT_EQ(ValidateEndpoint(bad).code(), StatusCode::kInvalidArgument) << bad;
  }
  TransportOptions o;
  o.listen = "tcp://127.0.0.1:banana";
  EXPECT_EQ(CreateZmqTransport(o).status().code(), StatusCode::kInvalidArgument);
  // An address not of this machine, or a port another process holds, is the caller's to change
  // (the commands exit 2), not a passing failure.
  o.listen = "tcp://192.0.2.1:0";  // TEST-NET: not a local address
  const Status not_local = CreateZmqTransport(o).status();
  EXPECT_EQ(not_local.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(not_local.message().find("give another --listen"), std::string::npos) << not_local;
}

}  // namespace
}  // namespace murmur::transport
