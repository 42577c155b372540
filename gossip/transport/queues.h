#pragma once
// The bounded queues and drop policy both transports share (transport.h states the contract).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>

#include "gossip/transport/transport.h"

namespace murmur::transport {

// Removes the message the policy sacrifices first: the oldest update, else the oldest message.
// Returns its traffic class. REQUIRES: !queue.empty()
Traffic DropOldest(std::deque<Message>& queue, size_t& queued_bytes);

// One peer's outgoing messages. Not thread-safe: its owner serializes access.
class SendQueue {
 public:
  SendQueue(size_t max_messages, size_t max_bytes)
      : max_messages_(max_messages), max_bytes_(max_bytes) {}
  // Appends, dropping old messages (counted in `stats`) until the bounds hold. A message larger
  // than max_bytes on its own replaces everything queued.
  void Push(Message message, TransportStats& stats);
  bool empty() const { return queue_.empty(); }
  size_t size() const { return queue_.size(); }
  Message& front() { return queue_.front(); }
  void PopFront();

 private:
  size_t max_messages_;
  size_t max_bytes_;
  size_t bytes_ = 0;
  std::deque<Message> queue_;
};

// Received messages waiting for the consumer. Thread-safe.
class Inbox {
 public:
  Inbox(size_t max_messages, size_t max_bytes) : max_messages_(max_messages), max_bytes_(max_bytes) {}
  void Push(Message message);
  std::optional<Message> Pop(std::chrono::milliseconds timeout);
  // Adds this inbox's counters to `stats`.
  void AddStats(TransportStats& stats) const;
  void Close();  // wakes waiters; later Pops return nothing once empty

 private:
  size_t max_messages_;
  size_t max_bytes_;  // the newest message stays even when it alone is larger
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Message> queue_;
  size_t bytes_ = 0;
  bool closed_ = false;
  uint64_t received_messages_ = 0;
  uint64_t received_bytes_ = 0;
  uint64_t dropped_ = 0;
};

}  // namespace murmur::transport
