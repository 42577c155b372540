#pragma once
// Moving messages between nodes: a header frame (the encoded Envelope) plus tensor frames, to a
// peer named by its endpoint. Two implementations share this interface and one conformance
// suite (tests/gossip/transport/transport_conformance_test.cc): ZeroMQ (zmq_transport.h; tcp:// and
// ipc://) and in-process (inproc_transport.h; for tests).
//
// Contract, for both:
// - Send() never blocks and never fails: the message joins the peer's bounded send queue.
//   When the queue is full (max_queued_messages or max_queued_bytes), the oldest *update*
//   message in it is dropped and counted; if it holds only control messages, the oldest of
//   those goes. Training never waits for a slow or dead peer.
// - Messages from one sender to one receiver arrive whole (all frames or none) and in send order
//   within their lane: membership messages (Traffic::kMembership) have a lane of their own
//   (ZeroMQ: a connection of their own), so they may overtake other messages sent before them;
//   a probe does not wait behind a model on a thin link. Everything else is one lane. (The
//   in-process transport keeps one order for all.)
// - A peer that is not there yet, or vanished, is retried with backoff; what is queued (up to the
//   bound) is delivered when it comes back. Messages already handed to a connection that then
//   breaks may be lost: protocols above use sequence numbers and snapshots, not retransmission.
// - What is queued when the transport is destroyed (a final model, a Leave) still goes out, on
//   every lane, to peers that are reachable: ZeroMQ waits up to 0.5 s for a lane still
//   connecting to take it, then each connection's linger bounds its delivery.
// - Received messages wait in a bounded inbox (oldest update dropped and counted when full).
//   ZeroMQ: Receive moves what the socket holds into the inbox on the caller's thread; while
//   nobody receives, messages wait in ZeroMQ's bounded pipes and then hold back the sender.
// Thread safety: every method may be called from any thread.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "gossip/transport/curve_keys.h"

namespace murmur::transport {

// Immutable bytes with shared ownership, so a tensor is handed to the socket without a copy and
// a received frame is read in place.
class Frame {
 public:
  Frame() = default;
  Frame(std::shared_ptr<const void> owner, std::span<const std::byte> bytes)
      : owner_(std::move(owner)), bytes_(bytes) {}
  static Frame FromString(std::string s);
  static Frame FromBytes(std::vector<std::byte> v);
  static Frame Copy(std::span<const std::byte> bytes);

  std::span<const std::byte> bytes() const { return bytes_; }
  const std::byte* data() const { return bytes_.data(); }
  size_t size() const { return bytes_.size(); }
  std::string_view view() const {
    return {reinterpret_cast<const char*>(bytes_.data()), bytes_.size()};
  }
  // Keeps the bytes alive (for zero-copy hand-off).
  const std::shared_ptr<const void>& owner() const { return owner_; }

 private:
  std::shared_ptr<const void> owner_;
  std::span<const std::byte> bytes_;
};

// What the drop policy may discard first (kUpdate), and what travels on a lane of its own
// (kMembership: SWIM's probes, acks and digests; dropped as control).
enum class Traffic : uint8_t { kControl = 0, kUpdate = 1, kMembership = 2 };

struct Message {
  Frame header;
  std::vector<Frame> frames;
  Traffic traffic = Traffic::kControl;
  // Received only: the member the sender's authenticated CURVE key is bound to (curve_keys.h
  // "Identity"); nullopt when the link is plaintext or the key speaks for any member.
  std::optional<uint64_t> speaker;
  size_t bytes() const;
};

struct TransportOptions {
  // Where this node listens: "tcp://127.0.0.1:7070", "tcp://0.0.0.0:0" (any free port),
  // "ipc:///run/murmur/n1.sock".
  std::string listen = "tcp://127.0.0.1:0";
  size_t max_queued_messages = 256;          // per peer
  size_t max_queued_bytes = size_t{512} << 20;  // per peer
  size_t max_inbox_messages = 4096;
  // Received bytes held for the consumer; beyond it the oldest messages are dropped (counted
  // as dropped_inbox), so a flood of large frames holds at most this much.
  size_t max_inbox_bytes = size_t{1} << 30;
  // Outgoing connections kept at once; a new peer beyond it closes the least recently used one
  // (its queue is dropped and counted). Memberships full of invented members cannot exhaust
  // file descriptors or memory.
  size_t max_peers = 256;
  size_t max_frames = 16;                     // tensor frames per message; more is refused
  size_t max_frame_bytes = size_t{1} << 31;   // larger frames are refused by the socket
  std::chrono::milliseconds reconnect_min{50};   // ZeroMQ backoff doubles up to the max
  std::chrono::milliseconds reconnect_max{2000};
  // CURVE authentication and encryption on every socket (curve_keys.h); plaintext when
  // !curve.enabled(). The in-process transport ignores it.
  CurveOptions curve;
};

struct TransportStats {
  uint64_t sent_messages = 0;
  uint64_t sent_bytes = 0;
  uint64_t received_messages = 0;
  uint64_t received_bytes = 0;
  uint64_t dropped_updates = 0;       // send queue full
  uint64_t dropped_control = 0;       // send queue full and no update to drop
  uint64_t dropped_inbox = 0;         // inbox full
  uint64_t dropped_no_socket = 0;     // no socket could be made for the peer (e.g. out of fds)
  uint64_t evicted_peers = 0;         // connections closed to make room (max_peers)
  uint64_t refused_malformed = 0;     // too many frames or an empty header (the two below)
  uint64_t refused_empty_header = 0;
  uint64_t refused_too_many_frames = 0;
  uint64_t refused_auth = 0;          // CURVE clients whose key is not admitted (ZAP)
  uint64_t handshake_failures = 0;    // connections that failed their handshake (no key, wrong key)
  // Inbound connections that ended: the peer closed, or ZeroMQ closed it on a frame beyond
  // max_frame_bytes (ZeroMQ reports no reason, so the two are one count).
  uint64_t inbound_disconnects = 0;
  uint64_t peers = 0;                 // peers with a connection or a queue
  uint64_t inbox_bytes = 0;           // received bytes waiting in the inbox now
};

class Transport {
 public:
  virtual ~Transport() = default;
  // The endpoint peers use to reach this node (port resolved when 0 was asked for).
  virtual std::string endpoint() const = 0;
  virtual void Send(std::string_view peer, Message message) = 0;
  // Waits up to `timeout` for a message.
  virtual std::optional<Message> Receive(std::chrono::milliseconds timeout) = 0;
  // Drops the connection and queue to `peer` (a member that left or was forgotten).
  virtual void Forget(std::string_view peer) = 0;
  virtual TransportStats Stats() const = 0;
};

// Checks a "tcp://host:port" or "ipc://path" endpoint (kInvalidArgument saying what is wrong).
Status ValidateEndpoint(std::string_view endpoint);

}  // namespace murmur::transport
