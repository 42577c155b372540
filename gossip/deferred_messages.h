#pragma once
// Messages that may pass once the membership view catches up: a member that just joined (or
// restarted) may send before this node's view has it, so its messages wait, a bounded few and
// briefly, instead of being refused (gossip_node.h "Trust").
//
// Invariants: at most `max_messages` held and `max_bytes` of their frames; a held message owns
// its frame's bytes (the transport's buffer is gone by then). Sans-IO. Thread safety: none.

#include <cstddef>
#include <deque>
#include <vector>

#include "base/clock.h"
#include "gossip/node_io.h"

namespace murmur::gossip {

class DeferredMessages {
 public:
  DeferredMessages(size_t max_messages, size_t max_bytes)
      : max_messages_(max_messages), max_bytes_(max_bytes) {}

  struct Held {
    Incoming message;  // its frame points into `bytes`
    std::vector<std::byte> bytes;
    TimePoint expires;
  };

  // Holds a copy of `m` until `expires`; false (nothing held) when it would exceed the bounds.
  bool Hold(const Incoming& m, TimePoint expires);
  // Every held message, oldest first; the caller puts back (Keep) those that still wait.
  std::deque<Held> TakeAll();
  // Puts back a message TakeAll gave (within the bounds it was held in).
  void Keep(Held held);

  size_t size() const { return held_.size(); }
  size_t bytes() const { return bytes_; }

 private:
  const size_t max_messages_;
  const size_t max_bytes_;
  std::deque<Held> held_;
  size_t bytes_ = 0;
};

}  // namespace murmur::gossip
