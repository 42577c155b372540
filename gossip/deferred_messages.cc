#include "gossip/deferred_messages.h"

#include <utility>

#include "base/check.h"

namespace murmur::gossip {

bool DeferredMessages::Hold(const Incoming& m, TimePoint expires) {
  if (held_.size() >= max_messages_ || bytes_ + m.frame.size() > max_bytes_) return false;
  Held h{m, std::vector<std::byte>(m.frame.begin(), m.frame.end()), expires};
  bytes_ += h.bytes.size();
  held_.push_back(std::move(h));
  // A vector's move keeps its buffer, so the frame may point into it once it is in place.
  held_.back().message.frame = held_.back().bytes;
  MURMUR_CHECK_LE(bytes_, max_bytes_);
  return true;
}

std::deque<DeferredMessages::Held> DeferredMessages::TakeAll() {
  bytes_ = 0;
  return std::exchange(held_, {});
}

void DeferredMessages::Keep(Held held) {
  bytes_ += held.bytes.size();
  held_.push_back(std::move(held));
  held_.back().message.frame = held_.back().bytes;
  MURMUR_CHECK(held_.size() <= max_messages_ && bytes_ <= max_bytes_)
      << "a kept message beyond the bounds it was held in";
}

}  // namespace murmur::gossip
