// CURVE identities over real ZeroMQ (curve_keys.h "Identity"): a key bound to a member by the
// allowlist makes every message of its connection carry that member as its speaker; the cluster
// key and unbound keys carry none; keys not admitted deliver nothing and are counted.

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gossip/transport/curve_keys.h"
#include "gossip/transport/zmq_transport.h"

namespace murmur::transport {
namespace {

using std::chrono::milliseconds;

CurveKeyPair NewPair() {
  auto pair = GenerateCurveKeyPair();
  EXPECT_TRUE(pair.ok()) << pair.status();
  return *pair;
}

struct Cluster {
  CurveKeyPair cluster = NewPair();
  CurveKeyPair node3 = NewPair();
  CurveKeyPair unbound = NewPair();
  CurveKeyPair stranger = NewPair();

  // A node presenting `client`; its allowlist binds node3's key to member 3 and admits `unbound`
  // for any member (only_allowed unless `cluster_key_admitted`).
  std::unique_ptr<Transport> Make(const CurveKeyPair& client, bool cluster_key_admitted) const {
    TransportOptions o;
    o.listen = "tcp://127.0.0.1:0";
    o.curve.server = cluster;
    o.curve.client = client;
    o.curve.allowed_clients = {{node3.public_key, 3}, {unbound.public_key, std::nullopt}};
    o.curve.only_allowed = !cluster_key_admitted;
    auto t = CreateZmqTransport(o);
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? std::move(*t) : nullptr;
  }
};

// Sends numbered messages until one arrives (a connection's handshake takes a moment); returns
// the first received, or nullopt after 5 s.
std::optional<Message> SendUntilReceived(Transport& from, Transport& to) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    from.Send(to.endpoint(),
              Message{Frame::FromString("hello"), {}, Traffic::kControl, std::nullopt});
    if (auto m = to.Receive(milliseconds(50))) return m;
  }
  return std::nullopt;
}

TEST(TransportIdentityTest, ABoundKeyNamesItsMemberOnEveryMessage) {
  Cluster c;
  auto receiver = c.Make(c.cluster, false);
  auto sender = c.Make(c.node3, false);
  auto m = SendUntilReceived(*sender, *receiver);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->header.view(), "hello");
  ASSERT_TRUE(m->speaker.has_value());
  EXPECT_EQ(*m->speaker, 3u);
  // A second message on the same connection carries it too.
  sender->Send(
      receiver->endpoint(),
      Message{
          Frame::FromString("again"), {Frame::FromString("x")}, Traffic::kUpdate, std::nullopt});
  std::optional<Message> again;
  for (int i = 0; i < 100 && !(again && again->header.view() == "again"); ++i) {
    again = receiver->Receive(milliseconds(50));
  }
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->speaker, std::optional<uint64_t>(3));
}

TEST(TransportIdentityTest, UnboundKeysAndTheClusterKeySpeakForAnyMember) {
  Cluster c;
  auto receiver = c.Make(c.cluster, true);
  for (const CurveKeyPair* client : {&c.unbound, &c.cluster}) {
    auto sender = c.Make(*client, true);
    auto m = SendUntilReceived(*sender, *receiver);
    ASSERT_TRUE(m.has_value());
    EXPECT_FALSE(m->speaker.has_value());
  }
}

TEST(TransportIdentityTest, KeysNotAdmittedDeliverNothingAndAreCounted) {
  Cluster c;
  auto receiver = c.Make(c.cluster, false);  // node keys only: the cluster key is refused too
  for (const CurveKeyPair* client : {&c.stranger, &c.cluster}) {
    const uint64_t before = receiver->Stats().refused_auth;
    auto sender = c.Make(*client, true);
    sender->Send(receiver->endpoint(),
                 Message{Frame::FromString("x"), {}, Traffic::kControl, std::nullopt});
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (receiver->Stats().refused_auth == before &&
           std::chrono::steady_clock::now() < deadline) {
      EXPECT_FALSE(receiver->Receive(milliseconds(20)).has_value());
    }
    EXPECT_GT(receiver->Stats().refused_auth, before);
  }
  EXPECT_FALSE(receiver->Receive(milliseconds(100)).has_value());
}

TEST(TransportIdentityTest, TheAllowlistBindsIdsAndRefusesAKeyListedTwice) {
  const CurveKeyPair a = NewPair(), b = NewPair();
  auto keys = ParseAllowedKeys("# members\n3 " + a.public_key + "\n" + b.public_key + "\n");
  ASSERT_TRUE(keys.ok()) << keys.status();
  ASSERT_EQ(keys->size(), 2u);
  EXPECT_EQ((*keys)[0], (AllowedKey{a.public_key, 3}));
  EXPECT_EQ((*keys)[1], (AllowedKey{b.public_key, std::nullopt}));
  // One member, two keys (rotation): both bound to it.
  auto rotation = ParseAllowedKeys("7 " + a.public_key + "\n7\t" + b.public_key);
  ASSERT_TRUE(rotation.ok()) << rotation.status();
  EXPECT_EQ((*rotation)[1].member, std::optional<uint64_t>(7));
  for (const std::string& bad :
       {"3 " + a.public_key + "\n4 " + a.public_key, "0 " + a.public_key, "-3 " + a.public_key,
        "x " + a.public_key, "18446744073709551616 " + a.public_key, "3 " + a.public_key + "z",
        std::string("3")}) {
    auto parsed = ParseAllowedKeys(bad);
    EXPECT_FALSE(parsed.ok()) << bad;
    EXPECT_NE(parsed.status().message().find("line"), std::string::npos) << parsed.status();
  }
  CurveOptions o;
  o.server = NewPair();
  o.allowed_clients = *keys;
  o.only_allowed = true;
  EXPECT_EQ(o.Admit(a.public_key), std::optional<uint64_t>(3));
  EXPECT_EQ(o.Admit(b.public_key), std::optional<uint64_t>(0));
  EXPECT_EQ(o.Admit(o.server.public_key), std::nullopt);
  EXPECT_FALSE(o.identities_bound());
  o.allowed_clients.pop_back();
  EXPECT_TRUE(o.identities_bound());
  o.only_allowed = false;  // the cluster key is admitted, and speaks for anyone
  EXPECT_EQ(o.Admit(o.server.public_key), std::optional<uint64_t>(0));
  EXPECT_FALSE(o.identities_bound());
}

}  // namespace
}  // namespace murmur::transport
