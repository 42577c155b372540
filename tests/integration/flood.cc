// murmur_flood: sends a running node what an attacker with invented identities would — for each
// of N sender ids a Join (advertising a closed port on 127.0.0.0/8, so nothing leaves the host),
// a sparse update of the node's dimension and a model snapshot request — over real ZeroMQ, in
// plaintext. The memory test (flood_test.py) watches the node's size meanwhile.
// Usage: murmur_flood ENDPOINT CLUSTER SENDERS DIMENSION
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "coding/update.h"
#include "coding/update_codec.h"
#include "gossip/envelope.h"
#include "gossip/transport/zmq_transport.h"
#include "proto/envelope_codec.h"

using namespace murmur;

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: murmur_flood ENDPOINT CLUSTER SENDERS DIMENSION\n");
    return 2;
  }
  const std::string to = argv[1], cluster = argv[2];
  const uint64_t senders = std::strtoull(argv[3], nullptr, 10);
  const uint32_t dimension = static_cast<uint32_t>(std::strtoul(argv[4], nullptr, 10));
  transport::TransportOptions options;
  options.max_queued_messages = 1 << 20;
  auto t = transport::CreateZmqTransport(options);
  if (!t.ok()) {
    std::fprintf(stderr, "murmur_flood: %s\n", t.status().ToString().c_str());
    return 1;
  }
  coding::Update q;
  q.Clear(coding::Operator::kTopK, dimension);
  for (uint32_t i = 0; i < 8 && i < dimension; ++i) {
    q.indices.push_back(i * (dimension / 8));
    q.values.push_back(0.01f);
  }
  std::vector<std::byte> frame;
  coding::EncodeUpdate(q, frame);
  for (uint64_t i = 0; i < senders; ++i) {
    const gossip::NodeId id = 1000000 + i;
    const std::string address = "tcp://127." + std::to_string(1 + i / 65536 % 250) + "." +
                                std::to_string(i / 256 % 256) + "." + std::to_string(i % 256) + ":9";
    auto send = [&](gossip::Payload payload, bool with_frame, uint64_t sequence) {
      gossip::Envelope e;
      e.cluster_id = cluster;
      e.sender_id = id;
      e.incarnation = 1;
      e.step_clock = 10;
      e.sequence = sequence;
      e.payload = std::move(payload);
      e.payload_frames = with_frame ? 1 : 0;
      transport::Message m;
      m.header = transport::Frame::FromString(proto::EncodeEnvelope(e));
      if (with_frame) m.frames.push_back(transport::Frame::Copy(frame));
      (*t)->Send(to, std::move(m));
    };
    send(gossip::Join{gossip::MemberEntry{id, address, 1, gossip::MemberState::kAlive, 10, 640, 0, false}},
         false, 1);
    send(gossip::UpdateHeader{1, 0, dimension, false, true}, true, 2);
    send(gossip::SnapshotRequest{0, true}, false, 3);
    if (i % 500 == 499) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Let the I/O thread drain its queue before the process exits.
  for (int i = 0; i < 500 && (*t)->Stats().sent_messages < 3 * senders; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::printf("sent %llu messages from %llu invented senders\n",
              static_cast<unsigned long long>((*t)->Stats().sent_messages),
              static_cast<unsigned long long>(senders));
  return 0;
}
