// libFuzzer target: membership (gossip/membership.h) fed decoded envelopes — digests, joins,
// pings, leaves — from a hostile peer. The input is a sequence of messages, each a 2-byte length
// and that many bytes of envelope; time advances 50 ms per message. Properties: the member table
// stays within max_members (plus this node), and this node never sees itself dead or left.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "base/check.h"
#include "gossip/membership.h"
#include "proto/envelope_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace murmur;
  gossip::MembershipOptions o;
  o.id = 1;
  o.address = "tcp://10.0.0.1:7000";
  o.incarnation = 1000;
  o.seeds = {"tcp://10.0.0.2:7000"};
  o.max_members = 64;
  TimePoint now{};
  gossip::Membership membership(o, now);
  size_t at = 0;
  while (size - at >= 2) {
    uint16_t length = 0;
    std::memcpy(&length, data + at, 2);
    at += 2;
    length = static_cast<uint16_t>(std::min<size_t>(length, size - at));
    auto envelope = proto::DecodeEnvelope(std::as_bytes(std::span(data + at, length)), "");
    at += length;
    now += std::chrono::milliseconds(50);
    if (envelope.ok()) membership.Step(*envelope, now);
    membership.Tick(now);
    membership.TakeOutput();
  }
  const auto members = membership.Members();
  MURMUR_CHECK_LE(members.size(), o.max_members + 1);
  for (const auto& m : members) {
    if (m.id == o.id) MURMUR_CHECK(m.state == gossip::MemberState::kAlive);
  }
  return 0;
}
