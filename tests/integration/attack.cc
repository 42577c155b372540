// murmur_attack: what an attacker with nothing but the cluster name and one node's address sends
//, over real ZeroMQ. Used by attack_test.py (every attack against a live cluster,
// keys off and on) and flood_test.py (memory under invented senders).
//
//   murmur_attack [--cluster-public KEY | --cluster-key-file F [--node-key-file F]]
//                 ENDPOINT CLUSTER DIMENSION ATTACK...
//
// The attacker listens on a loopback port of its own and answers every Ping there, so with keys
// off it can become a real member (it owns the address it claims). With --cluster-public it runs
// CURVE with a keypair of its own against the cluster's public key (refused by the ZAP handler);
// without it, against a CURVE node, it speaks plaintext (refused at the handshake). With
// --cluster-key-file it holds the cluster's keypair (an insider: admitted like any member), and
// with --node-key-file too it presents that node's key (bound to that node's id by the allowlist).
//
// ATTACK, run in order:
//   join         Join as member 424242 and answer the verification Ping (admitted: the node's
//                join reply, a digest, arrives)
//   dense        a dense update adding +10 to every parameter (the first attack)
//   finished     its own entry claiming the cluster's budget is spent
//   accuse:ID    member ID declared dead at 2^64-1, just under 2^62, two days in the future
//                (all refused), and one above its incarnation (refuted by ID)
//   clock        envelopes at step clocks 1e9 and 2^64-1
//   leave-snapshot  a Leave, then a request for the node's model
//   invented:N   N invented ids (closed ports on 127.0.0.0/8), each a Join, a sparse update and
//                a model snapshot request
//   pose:ID      posing as live member ID: zero updates "from the initial model" under ID's id at
//                its next incarnation (which would reset ID's public copy at the receiver)
//   inflate      its own entry announcing a clock 90,000 steps ahead of the cluster's and samples
//                of clock x 256, kept in every answer from then on
// At the end one JSON line: what came back (admitted, model snapshots served after leaving,
// messages sent).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "coding/update.h"
#include "coding/update_codec.h"
#include "gossip/envelope.h"
#include "gossip/membership.h"
#include "gossip/transport/zmq_transport.h"
#include "proto/envelope_codec.h"

using namespace murmur;
using gossip::MemberEntry;
using gossip::MemberState;

namespace {

constexpr gossip::NodeId kAttacker = 424242;

// Incarnations are wall-clock milliseconds at a node's start.
uint64_t WallMilliseconds() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

class Attacker {
 public:
  Attacker(std::unique_ptr<transport::Transport> t, std::string to, std::string cluster,
           uint32_t dimension)
      : t_(std::move(t)), to_(std::move(to)), cluster_(std::move(cluster)), dimension_(dimension) {
    self_.id = kAttacker;
    self_.address = t_->endpoint();
    self_.incarnation = 1;
    listener_ = std::thread([this] { Listen(); });
  }
  ~Attacker() {
    stop_ = true;
    listener_.join();
  }

  void Send(gossip::NodeId sender, gossip::Payload payload, uint64_t clock,
            const std::vector<std::byte>* frame = nullptr, const std::string* address = nullptr,
            gossip::Incarnation incarnation = 1) {
    gossip::Envelope e;
    e.cluster_id = cluster_;
    e.sender_id = sender;
    e.incarnation = incarnation;
    e.step_clock = clock;
    e.sequence = ++sequence_;
    e.payload = std::move(payload);
    e.payload_frames = frame != nullptr ? 1 : 0;
    transport::Message m;
    m.header = transport::Frame::FromString(proto::EncodeEnvelope(e));
    if (frame != nullptr) m.frames.push_back(transport::Frame::Copy(*frame));
    t_->Send(address != nullptr ? *address : to_, std::move(m));
  }
  uint64_t Clock() const { return clock_.load(); }

  bool Join() {
    Send(kAttacker, gossip::Join{Self()}, 0);
    for (int i = 0; i < 40 && !admitted_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return admitted_;
  }
  void Dense() {
    std::vector<float> plus_ten(dimension_, 10.0f);
    std::vector<std::byte> frame;
    coding::EncodeDense(plus_ten, frame);
    Send(kAttacker, gossip::UpdateHeader{1, 0, dimension_, true, true}, Clock(), &frame);
  }
  // `count` updates from invented senders, each with a frame of `mb` megabytes (garbage: what
  // matters is what the receiver holds before it looks).
  void Huge(int count, double mb) {
    const std::vector<std::byte> frame(static_cast<size_t>(mb * (1 << 20)), std::byte{7});
    for (int i = 0; i < count; ++i) {
      Send(kAttacker + 1000 + static_cast<gossip::NodeId>(i), gossip::UpdateHeader{1, 0, dimension_, true, true},
           Clock(), &frame);
    }
  }
  void Finished() {
    std::lock_guard lock(mu_);
    self_.finished = true;
    self_.samples = uint64_t{1} << 40;
    Send(kAttacker, gossip::Digest{{self_}, false}, Clock());
  }
  void Accuse(gossip::NodeId id) {
    MemberEntry target;
    {
      std::lock_guard lock(mu_);
      auto it = members_.find(id);
      if (it == members_.end()) {
        target.id = id;
        target.address = "tcp://127.0.0.1:9";
        target.incarnation = 1;
      } else {
        target = it->second;
      }
    }
    target.state = MemberState::kDead;
    // Refused, refused, refused, and one the target refutes (SWIM's own remedy).
    for (gossip::Incarnation inc : std::initializer_list<gossip::Incarnation>{
             ~uint64_t{0}, gossip::kMaxIncarnation - 2,
                                    WallMilliseconds() + uint64_t{2} * 24 * 3600 * 1000,
                                    target.incarnation + 1}) {
      MemberEntry e = target;
      e.incarnation = inc;
      Send(kAttacker, gossip::Digest{{e}, false}, Clock());
    }
  }
  void Pose(gossip::NodeId id) {
    gossip::Incarnation incarnation = WallMilliseconds();
    {
      std::lock_guard lock(mu_);
      if (auto it = members_.find(id); it != members_.end())
        incarnation = it->second.incarnation + 1;
    }
    std::vector<std::byte> frame;
    coding::EncodeDense(std::vector<float>(dimension_, 0.0f), frame);
    for (int i = 0; i < 10; ++i) {
      Send(id, gossip::UpdateHeader{1, 0, dimension_, true, true}, Clock(), &frame, nullptr,
           incarnation);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  void Inflate() {
    inflate_ = true;
    Send(kAttacker, gossip::Digest{{Self()}, false}, Clock());
  }
  void ClockJump() {
    Send(kAttacker, gossip::SnapshotRequest{0, false}, 1000000000);
    Send(kAttacker, gossip::SnapshotRequest{0, false}, ~uint64_t{0});
  }
  void LeaveThenAskForTheModel() {
    Send(kAttacker, gossip::Leave{}, Clock());
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    left_ = true;
    Send(kAttacker, gossip::SnapshotRequest{0, true}, Clock());
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  }
  void Invented(uint64_t senders) {
    coding::Update q;
    q.Clear(coding::Operator::kTopK, dimension_);
    for (uint32_t i = 0; i < 8 && i < dimension_; ++i) {
      q.indices.push_back(i * (dimension_ / 8));
      q.values.push_back(0.01f);
    }
    std::vector<std::byte> frame;
    coding::EncodeUpdate(q, frame);
    for (uint64_t i = 0; i < senders; ++i) {
      const gossip::NodeId id = 1000000 + i;
      MemberEntry e;
      e.id = id;
      e.address = "tcp://127." + std::to_string(1 + i / 65536 % 250) + "." +
                  std::to_string(i / 256 % 256) + "." + std::to_string(i % 256) + ":9";
      e.incarnation = 1;
      e.step_clock = 10;
      e.samples = 640;
      Send(id, gossip::Join{e}, 10);
      Send(id, gossip::UpdateHeader{1, 0, dimension_, false, true}, 10, &frame);
      Send(id, gossip::SnapshotRequest{0, true}, 10);
      if (i % 500 == 499) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  // Lets the I/O thread drain its queue (at most 2 s: refused at the handshake, it never does).
  void Drain() {
    for (int i = 0; i < 200 && t_->Stats().sent_messages < sequence_; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  void Report() {
    std::printf("{\"admitted\": %s, \"models_served_after_leave\": %d, \"sent\": %llu}\n",
                admitted_ ? "true" : "false", served_after_leave_.load(),
                static_cast<unsigned long long>(t_->Stats().sent_messages));
  }

 private:
  MemberEntry Self() {
    std::lock_guard lock(mu_);
    self_.step_clock = Clock();
    if (inflate_) {
      self_.step_clock += 90000;
      self_.samples = self_.step_clock * 256;
    }
    ++self_.heartbeat;
    return self_;
  }
  // Answers every Ping (so it stays a member while it attacks), learns the members and the
  // cluster's clock from what it is told, and watches for model snapshots.
  void Listen() {
    while (!stop_) {
      auto m = t_->Receive(std::chrono::milliseconds(50));
      if (!m.has_value()) continue;
      auto e = proto::DecodeEnvelope(m->header.bytes(), cluster_);
      if (!e.ok()) continue;
      uint64_t c = clock_.load();
      while (e->step_clock > c && !clock_.compare_exchange_weak(c, e->step_clock)) {
      }
      auto learn = [&](const std::vector<MemberEntry>& entries) {
        std::lock_guard lock(mu_);
        for (const MemberEntry& x : entries) {
          if (x.id != kAttacker) members_[x.id] = x;
        }
      };
      if (const auto* p = std::get_if<gossip::Ping>(&e->payload)) {
        learn(p->gossip);
        // The answer goes to the pinger (its own entry leads its gossip).
        const std::string* back = nullptr;
        for (const MemberEntry& x : p->gossip) {
          if (x.id == e->sender_id) back = &x.address;
        }
        if (!left_) Send(kAttacker, gossip::Ack{p->probe_id, {Self()}}, Clock(), nullptr, back);
      } else if (const auto* d = std::get_if<gossip::Digest>(&e->payload)) {
        learn(d->members);
        admitted_ = true;  // the join reply: a digest comes only to an admitted member
      } else if (const auto* a = std::get_if<gossip::Ack>(&e->payload)) {
        learn(a->gossip);
      } else if (const auto* r = std::get_if<gossip::SnapshotReply>(&e->payload)) {
        if (left_ && r->model) ++served_after_leave_;
      }
    }
  }

  std::unique_ptr<transport::Transport> t_;
  const std::string to_, cluster_;
  const uint32_t dimension_;
  std::mutex mu_;
  MemberEntry self_;
  std::map<gossip::NodeId, MemberEntry> members_;
  std::atomic<uint64_t> clock_{0};
  std::atomic<bool> stop_{false}, admitted_{false}, left_{false}, inflate_{false};
  std::atomic<int> served_after_leave_{0};
  std::atomic<uint64_t> sequence_{0};
  std::thread listener_;
};

int Usage() {
  std::fprintf(
      stderr,
      "usage: murmur_attack [--cluster-public KEY | --cluster-key-file F [--node-key-file F]] "
      "ENDPOINT CLUSTER DIMENSION ATTACK...\n"
      "ATTACK: join | dense | finished | accuse:ID | clock | leave-snapshot | invented:N | "
      "huge:N:MB | pose:ID | inflate\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int at = 1;
  transport::TransportOptions options;
  options.listen = "tcp://127.0.0.1:0";
  options.max_queued_messages = 1 << 20;
  if (at + 1 < argc && std::string(argv[at]) == "--cluster-public") {
    // Its own keys, dialing the cluster's public key: the handshake completes and the node's
    // ZAP handler refuses the unknown client key.
    auto server = transport::GenerateCurveKeyPair();
    auto client = transport::GenerateCurveKeyPair();
    if (!server.ok() || !client.ok()) return 1;
    options.curve.server = {argv[at + 1], server->secret_key};
    options.curve.client = *client;
    at += 2;
  }
  // An insider's keys: the cluster's keypair (it serves with it, so nodes can verify its
  // address), and as a client either that or one node's own key.
  auto read_key = [](const char* path) -> std::optional<transport::CurveKeyPair> {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    auto pair = transport::ParseKeyFile(text.str());
    if (!pair.ok()) {
      std::fprintf(stderr, "murmur_attack: %s: %s\n", path, pair.status().ToString().c_str());
      return std::nullopt;
    }
    return *pair;
  };
  if (at + 1 < argc && std::string(argv[at]) == "--cluster-key-file") {
    auto cluster_key = read_key(argv[at + 1]);
    if (!cluster_key) return 2;
    options.curve.server = *cluster_key;
    options.curve.client = *cluster_key;
    at += 2;
    if (at + 1 < argc && std::string(argv[at]) == "--node-key-file") {
      auto node_key = read_key(argv[at + 1]);
      if (!node_key) return 2;
      options.curve.client = *node_key;
      at += 2;
    }
  }
  if (argc - at < 4) return Usage();
  const std::string to = argv[at], cluster = argv[at + 1];
  const uint32_t dimension = static_cast<uint32_t>(std::strtoul(argv[at + 2], nullptr, 10));
  auto t = transport::CreateZmqTransport(options);
  if (!t.ok()) {
    std::fprintf(stderr, "murmur_attack: %s\n", t.status().ToString().c_str());
    return 1;
  }
  Attacker attacker(std::move(*t), to, cluster, dimension);
  for (int i = at + 3; i < argc; ++i) {
    const std::string attack = argv[i];
    if (attack == "join") {
      std::fprintf(stderr, "join: %s\n", attacker.Join() ? "admitted" : "not admitted");
    } else if (attack == "dense") {
      attacker.Dense();
    } else if (attack == "finished") {
      attacker.Finished();
    } else if (attack.starts_with("accuse:")) {
      attacker.Accuse(std::strtoull(attack.c_str() + 7, nullptr, 10));
    } else if (attack == "clock") {
      attacker.ClockJump();
    } else if (attack == "leave-snapshot") {
      attacker.LeaveThenAskForTheModel();
    } else if (attack.starts_with("huge:")) {
      char* end = nullptr;
      const long count = std::strtol(attack.c_str() + 5, &end, 10);
      if (*end != ':') return Usage();
      attacker.Huge(static_cast<int>(count), std::strtod(end + 1, nullptr));
    } else if (attack.starts_with("pose:")) {
      attacker.Pose(std::strtoull(attack.c_str() + 5, nullptr, 10));
    } else if (attack == "inflate") {
      attacker.Inflate();
    } else if (attack.starts_with("invented:")) {
      attacker.Invented(std::strtoull(attack.c_str() + 9, nullptr, 10));
    } else {
      return Usage();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  attacker.Drain();
  attacker.Report();
  return 0;
}
