// A real node on loopback ZeroMQ, fed every kind of malformed or foreign message over a real
// socket: each is rejected and counted, and the node keeps serving its peer.

#include "node/peer/peer_node.h"

#include <gtest/gtest.h>

#include <thread>

#include "gossip/transport/zmq_transport.h"
#include "proto/envelope_codec.h"

namespace murmur::node {
namespace {

using std::chrono::milliseconds;
using transport::Frame;
using transport::Message;

PeerNodeOptions Options(gossip::NodeId id, std::vector<std::string> seeds) {
  PeerNodeOptions o;
  o.id = id;
  o.listen = "tcp://127.0.0.1:0";
  o.seeds = std::move(seeds);
  o.cluster_id = "test-cluster";
  o.membership.probe_interval = milliseconds(100);
  o.membership.probe_timeout = milliseconds(40);
  o.membership.join_retry = milliseconds(200);
  return o;
}

std::optional<gossip::MemberEntry> Sees(const PeerSnapshot& s, gossip::NodeId id) {
  for (const auto& m : s.members) {
    if (m.id == id) return m;
  }
  return std::nullopt;
}

bool WaitFor(const std::function<bool()>& cond, milliseconds limit = milliseconds(5000)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return cond();
}

Message Header(const std::string& bytes, std::vector<Frame> frames = {}) {
  return {Frame::FromString(bytes), std::move(frames), transport::Traffic::kControl, std::nullopt};
}

TEST(PeerNodeTest, RejectsEveryMalformedOrForeignMessageAndKeepsServing) {
  auto a = PeerNode::Start(Options(1, {}));
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = PeerNode::Start(Options(2, {(*a)->endpoint()}));
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_TRUE(WaitFor([&] {
    auto s = Sees((*a)->Snapshot(), 2);
    return s && s->state == gossip::MemberState::kAlive;
  })) << "nodes never met";

  transport::TransportOptions o;
  auto attacker = transport::CreateZmqTransport(o);
  ASSERT_TRUE(attacker.ok());
  const std::string target = (*a)->endpoint();

  gossip::Envelope good;
  good.cluster_id = "test-cluster";
  good.sender_id = 99;
  good.payload = gossip::NoPayload{};
  using R = proto::Rejection;
  std::map<R, int> expected;

  (*attacker)->Send(target, Header("not capnp at all"));  // 16 bytes of text
  (*attacker)->Send(target, Header(std::string(24, '\xff')));
  expected[R::kMalformed] = 2;

  gossip::Envelope e = good;
  e.schema_version = 2;
  (*attacker)->Send(target, Header(proto::EncodeEnvelope(e)));
  expected[R::kVersion] = 1;

  e = good;
  e.cluster_id = "someone-else";
  (*attacker)->Send(target, Header(proto::EncodeEnvelope(e)));
  expected[R::kCluster] = 1;

  // An unknown payload kind: patch the union discriminant of a `none` payload. It is the first
  // byte where a `none` and a `leave` encoding differ.
  std::string none = proto::EncodeEnvelope(good);
  e = good;
  e.payload = gossip::Leave{};
  const std::string leave = proto::EncodeEnvelope(e);
  size_t at = 0;
  while (at < none.size() && none[at] == leave[at]) ++at;
  ASSERT_LT(at, none.size());
  none[at] = static_cast<char>(200);
  (*attacker)->Send(target, Header(none));
  expected[R::kUnknownPayload] = 1;

  e = good;
  e.payload = gossip::UpdateHeader{1, 0, 10, true};
  e.payload_frames = 1;
  (*attacker)->Send(target, Header(proto::EncodeEnvelope(e)));  // its tensor frame is missing
  expected[R::kFramesMissing] = 1;

  e.payload_frames = 0;  // a kind that needs a frame announcing none
  (*attacker)->Send(target, Header(proto::EncodeEnvelope(e)));
  expected[R::kInvalidField] = 1;

  e = good;
  e.payload = gossip::Digest{std::vector<gossip::MemberEntry>(
                                 5000, {7, "tcp://127.0.0.1:1", 1, gossip::MemberState::kAlive, 0, 0}),
                             false};
  (*attacker)->Send(target, Header(proto::EncodeEnvelope(e)));
  expected[R::kOversized] = 1;

  // Transport-level garbage: an empty header and too many frames never reach the decoder.
  (*attacker)->Send(target, Header(""));
  (*attacker)->Send(target, Header(proto::EncodeEnvelope(good), std::vector<Frame>(40, Frame::FromString("x"))));

  ASSERT_TRUE(WaitFor([&] {
    const PeerSnapshot s = (*a)->Snapshot();
    for (auto [why, count] : expected) {
      if (s.rejected[static_cast<size_t>(why)] < static_cast<uint64_t>(count)) return false;
    }
    return s.transport.refused_malformed >= 2;
  })) << "not every bad message was counted";
  const PeerSnapshot s = (*a)->Snapshot();
  for (auto [why, count] : expected) {
    EXPECT_EQ(s.rejected[static_cast<size_t>(why)], static_cast<uint64_t>(count))
        << proto::RejectionName(why);
  }
  EXPECT_EQ(s.transport.refused_malformed, 2u);
  EXPECT_FALSE(Sees(s, 99).has_value()) << "a rejected sender entered the view";

  // And the node still serves its peer: B keeps seeing A alive with a growing heartbeat.
  const uint64_t beat = Sees((*b)->Snapshot(), 1)->heartbeat;
  EXPECT_TRUE(WaitFor([&] {
    auto m = Sees((*b)->Snapshot(), 1);
    return m && m->state == gossip::MemberState::kAlive && m->heartbeat >= beat + 3;
  }));
}

TEST(PeerNodeTest, LeaveIsSeenByThePeerAndBadOptionsAreRefused) {
  auto a = PeerNode::Start(Options(1, {}));
  ASSERT_TRUE(a.ok());
  auto b = PeerNode::Start(Options(2, {(*a)->endpoint()}));
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(WaitFor([&] { return Sees((*a)->Snapshot(), 2).has_value(); }));
  // A Leave goes to the members the leaver knows: until b has learned of a (not only its seed
  // address) it would tell no one, and a would find b dead instead (seen once under a loaded CI).
  ASSERT_TRUE(WaitFor([&] { return Sees((*b)->Snapshot(), 1).has_value(); }));
  (*b)->Leave();
  EXPECT_TRUE(WaitFor([&] {
    auto m = Sees((*a)->Snapshot(), 2);
    return m && m->state == gossip::MemberState::kLeft;
  }));

  PeerNodeOptions wildcard = Options(3, {});
  wildcard.listen = "tcp://0.0.0.0:0";
  EXPECT_EQ(PeerNode::Start(wildcard).status().code(), StatusCode::kInvalidArgument);
  PeerNodeOptions taken = Options(4, {});
  taken.listen = (*a)->endpoint();  // a port in use: the caller's to change
  const Status in_use = PeerNode::Start(taken).status();
  EXPECT_EQ(in_use.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(in_use.message().find("Address already in use"), std::string::npos) << in_use;
}

// Training messages wait for the training thread in a queue bounded in bytes as well as in
// count: the oldest go first.
TEST(PeerNodeTest, TheTrainingQueueIsBoundedInBytes) {
  PeerNodeOptions options = Options(1, {});
  options.max_training_queue_bytes = 3 * 10000;
  auto a = PeerNode::Start(options);
  ASSERT_TRUE(a.ok()) << a.status();
  auto sender = transport::CreateZmqTransport(transport::TransportOptions{});
  ASSERT_TRUE(sender.ok());
  for (uint64_t round = 1; round <= 10; ++round) {
    gossip::Envelope e;
    e.cluster_id = "test-cluster";
    e.sender_id = 7;
    e.sequence = round;
    e.payload = gossip::UpdateHeader{round, round - 1, 2500, false, true};
    e.payload_frames = 1;
    (*sender)->Send((*a)->endpoint(),
                    Header(proto::EncodeEnvelope(e), {Frame::FromString(std::string(10000, 'x'))}));
  }
  ASSERT_TRUE(WaitFor([&] { return (*a)->Snapshot().training_received == 10; }));
  EXPECT_EQ((*a)->Snapshot().training_dropped, 7u);
  for (uint64_t round = 8; round <= 10; ++round) {
    auto m = (*a)->TakeTraining(Duration(0));
    ASSERT_TRUE(m.has_value());
    EXPECT_EQ(std::get<gossip::UpdateHeader>(m->envelope.payload).round, round);
  }
  EXPECT_FALSE((*a)->TakeTraining(Duration(0)).has_value());
}

// With node keys bound to ids, a message over member 2's link that names another sender is
// refused and counted; one in its own name is taken.
TEST(PeerNodeTest, ABoundKeySpeaksOnlyForItsMember) {
  auto cluster = transport::GenerateCurveKeyPair();
  auto k1 = transport::GenerateCurveKeyPair();
  auto k2 = transport::GenerateCurveKeyPair();
  ASSERT_TRUE(cluster.ok() && k1.ok() && k2.ok());
  PeerNodeOptions options = Options(1, {});
  options.transport.curve = {*cluster, *k1, {{k1->public_key, 1}, {k2->public_key, 2}}, true};
  auto a = PeerNode::Start(options);
  ASSERT_TRUE(a.ok()) << a.status();
  transport::TransportOptions o;
  o.curve = {*cluster, *k2, {}, true};
  auto member2 = transport::CreateZmqTransport(o);
  ASSERT_TRUE(member2.ok()) << member2.status();
  for (gossip::NodeId sender : {gossip::NodeId{7}, gossip::NodeId{2}}) {
    gossip::Envelope e;
    e.cluster_id = "test-cluster";
    e.sender_id = sender;
    e.payload = gossip::NoPayload{};  // a clock announcement: training traffic
    (*member2)->Send((*a)->endpoint(), Header(proto::EncodeEnvelope(e)));
  }
  ASSERT_TRUE(WaitFor([&] { return (*a)->Snapshot().training_received == 1; }));
  EXPECT_EQ((*a)->Snapshot().sender_key_mismatch, 1u);
  auto m = (*a)->TakeTraining(Duration(0));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->envelope.sender_id, 2u);
}

}  // namespace
}  // namespace murmur::node
