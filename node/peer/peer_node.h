#pragma once
// A running peer: the ZeroMQ transport, the membership state machine and the thread that drives
// it (receive -> decode -> Step; Tick; encode -> send). Every received header goes through
// proto::DecodeEnvelope with explicit limits; a rejected message is counted by reason and logged
// (first of each reason, then every 1000th), and the node carries on.
//
// Training traffic (CHOCO updates, snapshots, CodedReduce messages) is not for membership: the
// driver decodes its header and queues it for the training thread (TakeTraining), which applies
// it at a step boundary; the training thread sends through SendTo, which hands the frames to the
// transport's I/O thread, so communication overlaps computation.
// Thread safety: every public method may be called from any thread.

#include <array>
#include <condition_variable>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "gossip/membership.h"
#include "gossip/transport/transport.h"
#include "proto/envelope_codec.h"

namespace murmur::node {

struct PeerNodeOptions {
  gossip::NodeId id = 0;       // 0: derived from the advertised endpoint
  std::string listen = "tcp://127.0.0.1:0";
  std::string advertise;       // empty: the bound endpoint (must not be a wildcard host)
  std::vector<std::string> seeds;  // endpoints; tcp host names are re-resolved
  std::string cluster_id = "murmur";
  gossip::Incarnation incarnation = 0;  // 0: wall-clock milliseconds, so restarts count up
  gossip::MembershipOptions membership;  // timing; id/address/seeds are filled in
  transport::TransportOptions transport;  // listen is filled in
  std::chrono::seconds reresolve_seeds{5};
  size_t max_training_queue = 4096;  // training messages waiting for the training thread
  // Their frames' bytes; beyond it the oldest are dropped too (a flood of large frames from
  // members holds at most this much between the transport and the training thread).
  size_t max_training_queue_bytes = size_t{1} << 30;
};

// murmur_rejected_messages_total's reason for PeerSnapshot::sender_key_mismatch.
inline constexpr std::string_view kSenderKeyMismatch = "sender_key_mismatch";

// Message kinds for the traffic counters (a bounded metric label); every kind but kMembership goes
// to the node's machine (its training queue). kUpdate includes the step-clock announcements.
enum class MessageKind : uint8_t { kMembership, kUpdate, kSnapshot, kCoded, kFinish, kCount };
std::string_view MessageKindName(MessageKind kind);
MessageKind KindOf(const gossip::Payload& payload);

struct TrafficCount {
  uint64_t messages = 0;
  uint64_t bytes = 0;  // header and tensor frames
};
using TrafficByKind = std::array<TrafficCount, static_cast<size_t>(MessageKind::kCount)>;

struct PeerSnapshot {
  gossip::NodeId id = 0;
  std::string endpoint;
  gossip::Incarnation incarnation = 0;
  uint64_t view_epoch = 0;
  std::vector<gossip::MemberEntry> members;  // this node first
  std::array<uint64_t, static_cast<size_t>(proto::Rejection::kCount)> rejected{};
  // Messages whose envelope named another sender than the member their link's key is bound to.
  uint64_t sender_key_mismatch = 0;
  // Membership messages refused by their content (gossip::Membership::Check), by reason.
  std::map<std::string, uint64_t, std::less<>> membership_rejected;
  uint64_t received = 0;  // messages accepted
  uint64_t sent = 0;
  uint64_t id_conflicts = 0;  // another endpoint claimed this node's id
  uint64_t training_received = 0;
  uint64_t training_dropped = 0;     // training queue full (oldest dropped)
  uint64_t training_queue_bytes = 0;  // frames' bytes waiting for the training thread now
  uint64_t injected_drops = 0;       // outgoing messages lost by straggler injection
  uint64_t unknown_destination = 0;  // SendTo a member with no known address
  double injected_send_delay_s = 0;  // total hold time of messages delayed by injection
  TrafficByKind sent_by_kind{};      // emitted (injected drops excluded)
  TrafficByKind received_by_kind{};  // accepted (rejected ones excluded)
  transport::TransportStats transport;
};

// A training message as the training thread gets it: header decoded and checked, frames as
// they arrived.
struct TrainingMessage {
  gossip::Envelope envelope;
  std::vector<transport::Frame> frames;
};

class PeerNode {
 public:
  // Binds, then starts the driver thread. kInvalidArgument for a bad endpoint or option,
  // kUnavailable when the listen address cannot be bound.
  static StatusOr<std::unique_ptr<PeerNode>> Start(PeerNodeOptions options);
  ~PeerNode();  // leaves (if not done yet) and stops

  // Graceful leave: tells the live members, waits briefly for the messages to go out, stops.
  void Leave();
  PeerSnapshot Snapshot() const;

  // The next queued training message, waiting up to `timeout` (to the nanosecond: a driver's
  // sub-millisecond wait is a wait, not a poll).
  std::optional<TrainingMessage> TakeTraining(Duration timeout);
  // Sends a training payload to member `to` (its address from membership). False when the member
  // is unknown (counted). Never blocks.
  bool SendTo(gossip::NodeId to, gossip::Payload payload, std::vector<transport::Frame> frames);
  // This node's training progress: gossiped in its member entry and stamped on every envelope.
  void SetProgress(uint64_t step_clock, uint64_t samples, bool finished);
  std::vector<gossip::NodeId> LiveView() const;
  std::vector<gossip::MemberEntry> Members() const;
  // Straggler injection on outgoing messages (every kind): hold each for `delay`, lose each with
  // probability `drop`.
  void SetSendInjection(Duration delay, double drop, uint64_t seed);
  const std::string& endpoint() const { return endpoint_; }
  gossip::NodeId id() const { return id_; }

 private:
  PeerNode(PeerNodeOptions options, std::unique_ptr<transport::Transport> transport,
           std::string endpoint, gossip::NodeId id);
  void Run();
  void Handle(const transport::Message& message, TimePoint now);
  void Flush();
  void Reject(proto::Rejection why, const Status& status);
  // Encodes and sends (or holds, or drops, under injection). REQUIRES mu_ held.
  void Emit(const std::string& address, gossip::Payload payload,
            std::vector<transport::Frame> frames, transport::Traffic traffic);
  void ReleaseDelayed(TimePoint now);

  const PeerNodeOptions options_;
  std::unique_ptr<transport::Transport> transport_;
  const std::string endpoint_;
  const gossip::NodeId id_;
  RealClock clock_;
  std::atomic<bool> leave_{false};

  mutable std::mutex mu_;  // guards membership_ and the counters
  std::unique_ptr<gossip::Membership> membership_;
  std::array<uint64_t, static_cast<size_t>(proto::Rejection::kCount)> rejected_{};
  uint64_t sender_key_mismatch_ = 0;
  uint64_t received_ = 0;
  uint64_t sent_ = 0;
  uint64_t id_conflicts_ = 0;
  uint64_t sequence_ = 0;
  uint64_t step_clock_ = 0;
  uint64_t unknown_destination_ = 0;
  uint64_t injected_drops_ = 0;
  Duration injected_send_delay_{0};
  TrafficByKind sent_by_kind_{};
  TrafficByKind received_by_kind_{};
  Duration send_delay_{0};
  double send_drop_ = 0;
  std::mt19937_64 injection_rng_{1};
  struct Delayed {
    TimePoint due;
    std::string address;
    transport::Message message;
  };
  // Guarded by mu_. Released in order: after a run-time change of the delay a message never
  // overtakes an earlier one (it may wait up to the old delay).
  std::deque<Delayed> delayed_;

  mutable std::mutex training_mu_;
  std::condition_variable training_cv_;
  std::deque<TrainingMessage> training_;  // guarded by training_mu_
  uint64_t training_received_ = 0;
  uint64_t training_dropped_ = 0;
  size_t training_bytes_ = 0;  // frames' bytes in training_, guarded by training_mu_
  std::thread thread_;
};

// A frame that owns `bytes` (zero-copy hand-off to the transport).
transport::Frame SharedFrame(std::shared_ptr<const std::vector<std::byte>> bytes);

// The id a node takes when none is configured: a 63-bit hash of its advertised endpoint.
gossip::NodeId DeriveNodeId(const std::string& endpoint);

}  // namespace murmur::node
