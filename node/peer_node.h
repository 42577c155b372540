#pragma once
// A running peer: the ZeroMQ transport, the membership state machine and the thread that drives
// it (receive -> decode -> Step; Tick; encode -> send). Every received header goes through
// proto::DecodeEnvelope with explicit limits; a rejected message is counted by reason and logged
// (first of each reason, then every 1000th), and the node carries on.
//
// The training issues add their protocols to the same driver loop.
// Thread safety: Snapshot() and Leave() may be called from any thread.

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
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
};

struct PeerSnapshot {
  gossip::NodeId id = 0;
  std::string endpoint;
  gossip::Incarnation incarnation = 0;
  uint64_t view_epoch = 0;
  std::vector<gossip::MemberEntry> members;  // this node first
  std::array<uint64_t, static_cast<size_t>(proto::Rejection::kCount)> rejected{};
  uint64_t received = 0;  // messages accepted
  uint64_t sent = 0;
  uint64_t id_conflicts = 0;  // another endpoint claimed this node's id
  transport::TransportStats transport;
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
  const std::string& endpoint() const { return endpoint_; }
  gossip::NodeId id() const { return id_; }

 private:
  PeerNode(PeerNodeOptions options, std::unique_ptr<transport::Transport> transport,
           std::string endpoint, gossip::NodeId id);
  void Run();
  void Handle(const transport::Message& message, TimePoint now);
  void Flush();
  void Reject(proto::Rejection why, const Status& status);

  const PeerNodeOptions options_;
  std::unique_ptr<transport::Transport> transport_;
  const std::string endpoint_;
  const gossip::NodeId id_;
  RealClock clock_;
  std::atomic<bool> leave_{false};

  mutable std::mutex mu_;  // guards membership_ and the counters
  std::unique_ptr<gossip::Membership> membership_;
  std::array<uint64_t, static_cast<size_t>(proto::Rejection::kCount)> rejected_{};
  uint64_t received_ = 0;
  uint64_t sent_ = 0;
  uint64_t id_conflicts_ = 0;
  uint64_t sequence_ = 0;
  std::thread thread_;
};

// The id a node takes when none is configured: a 63-bit hash of its advertised endpoint.
gossip::NodeId DeriveNodeId(const std::string& endpoint);

}  // namespace murmur::node
