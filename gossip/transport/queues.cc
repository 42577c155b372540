#include "gossip/transport/queues.h"

#include "base/check.h"

namespace murmur::transport {

Traffic DropOldest(std::deque<Message>& queue, size_t& queued_bytes) {
  MURMUR_CHECK(!queue.empty());
  auto victim = queue.begin();
  for (auto it = queue.begin(); it != queue.end(); ++it) {
    if (it->traffic == Traffic::kUpdate) {
      victim = it;
      break;
    }
  }
  const Traffic traffic = victim->traffic;
  queued_bytes -= victim->bytes();
  queue.erase(victim);
  return traffic;
}

void SendQueue::Push(Message message, TransportStats& stats) {
  const size_t size = message.bytes();
  bytes_ += size;
  queue_.push_back(std::move(message));
  while (queue_.size() > max_messages_ || (bytes_ > max_bytes_ && queue_.size() > 1)) {
    const Traffic dropped = DropOldest(queue_, bytes_);
    ++(dropped == Traffic::kUpdate ? stats.dropped_updates : stats.dropped_control);
  }
}

void SendQueue::PopFront() {
  bytes_ -= queue_.front().bytes();
  queue_.pop_front();
}

void Inbox::Push(Message message) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    ++received_messages_;
    received_bytes_ += message.bytes();
    bytes_ += message.bytes();
    queue_.push_back(std::move(message));
    while (queue_.size() > max_messages_ || (bytes_ > max_bytes_ && queue_.size() > 1)) {
      DropOldest(queue_, bytes_);
      ++dropped_;
    }
  }
  cv_.notify_one();
}

std::optional<Message> Inbox::Pop(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  // A zero timeout takes what is there: wait_for would still make a futex call (and may
  // deschedule the caller) on an empty queue.
  if (timeout.count() > 0) cv_.wait_for(lock, timeout, [&] { return !queue_.empty() || closed_; });
  if (queue_.empty()) return std::nullopt;
  Message m = std::move(queue_.front());
  bytes_ -= m.bytes();
  queue_.pop_front();
  return m;
}

void Inbox::AddStats(TransportStats& stats) const {
  std::lock_guard<std::mutex> lock(mu_);
  stats.received_messages += received_messages_;
  stats.received_bytes += received_bytes_;
  stats.dropped_inbox += dropped_;
  stats.inbox_bytes += bytes_;
}

void Inbox::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

}  // namespace murmur::transport
