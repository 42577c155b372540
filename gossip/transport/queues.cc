#include "gossip/transport/queues.h"

#include "base/check.h"

namespace murmur::transport {

size_t Message::bytes() const {
  size_t total = header.size();
  for (const Frame& f : frames) total += f.size();
  return total;
}

Frame Frame::FromString(std::string s) {
  auto owner = std::make_shared<const std::string>(std::move(s));
  return Frame(owner, std::as_bytes(std::span<const char>(owner->data(), owner->size())));
}

Frame Frame::FromBytes(std::vector<std::byte> v) {
  auto owner = std::make_shared<const std::vector<std::byte>>(std::move(v));
  return Frame(owner, std::span<const std::byte>(owner->data(), owner->size()));
}

Frame Frame::Copy(std::span<const std::byte> bytes) {
  return FromBytes(std::vector<std::byte>(bytes.begin(), bytes.end()));
}

Status ValidateEndpoint(std::string_view endpoint) {
  if (endpoint.starts_with("ipc://")) {
    if (endpoint.size() == 6) return InvalidArgumentError("endpoint 'ipc://' has no path");
    return OkStatus();
  }
  if (endpoint.starts_with("tcp://")) {
    const std::string_view rest = endpoint.substr(6);
    const size_t colon = rest.rfind(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 == rest.size()) {
      return InvalidArgumentError("endpoint '" + std::string(endpoint) +
                                  "' needs a host and a port (tcp://HOST:PORT)");
    }
    const std::string_view port = rest.substr(colon + 1);
    if (port != "*") {
      int value = 0;
      for (char c : port) {
        if (c < '0' || c > '9' || value > 65535) {
          return InvalidArgumentError("endpoint '" + std::string(endpoint) + "' has port '" +
                                      std::string(port) + "' (allowed: 0-65535 or *)");
        }
        value = value * 10 + (c - '0');
      }
      if (value > 65535) {
        return InvalidArgumentError("endpoint '" + std::string(endpoint) +
                                    "' has a port above 65535");
      }
    }
    return OkStatus();
  }
  return InvalidArgumentError("endpoint '" + std::string(endpoint) +
                              "' is neither tcp://HOST:PORT nor ipc://PATH");
}

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
    while (queue_.size() > max_messages_) {
      DropOldest(queue_, bytes_);
      ++dropped_;
    }
  }
  cv_.notify_one();
}

std::optional<Message> Inbox::Pop(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return !queue_.empty() || closed_; });
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
}

void Inbox::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

}  // namespace murmur::transport
