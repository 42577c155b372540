#pragma once
// The deterministic fake network every protocol test shares: messages of any type between
// endpoints 0..n-1, delivered in time order (ties in sending order) after a delay drawn from a
// seeded generator; loss, duplication, partitions, endpoints that are down (messages to them are
// lost) or held (messages to them wait until released, as for a SIGSTOPped process), and a
// per-message filter for targeted loss. No wall clock: the caller passes `now`.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <queue>
#include <random>
#include <vector>

#include "base/clock.h"

namespace murmur::testing {

struct Faults {
  Duration min_delay = std::chrono::milliseconds(1);
  Duration max_delay = std::chrono::milliseconds(5);
  double drop = 0.0;
  double duplicate = 0.0;
};

template <typename Message>
class FakeNetwork {
 public:
  FakeNetwork(size_t n, uint64_t seed) : rng_(seed), group_(n, 0), down_(n, false), held_(n, false) {}

  size_t size() const { return group_.size(); }
  Faults& faults() { return faults_; }
  std::mt19937_64& rng() { return rng_; }
  bool Chance(double p) { return p > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  // Endpoints in different groups cannot reach each other.
  void Partition(std::vector<int> group) { group_ = std::move(group); }
  void Heal() { std::fill(group_.begin(), group_.end(), 0); }
  // A down endpoint loses what is sent to it; a held one gets it once released.
  void SetDown(size_t i, bool down) { down_[i] = down; }
  void SetHeld(size_t i, bool held) { held_[i] = held; }
  bool held(size_t i) const { return held_[i]; }
  // True: this message is lost (a test's targeted loss), checked when it is sent.
  std::function<bool(size_t from, size_t to, const Message&)> drop_if;
  // Called for every message sent (before loss), for tests that count traffic.
  std::function<void(size_t from, size_t to, const Message&)> on_send;

  void Send(size_t from, size_t to, Message message, TimePoint now, Duration extra_delay = Duration(0)) {
    if (to >= size()) return;
    if (on_send) on_send(from, to, message);
    if (drop_if && drop_if(from, to, message)) return;
    const int copies = Chance(faults_.duplicate) ? 2 : 1;
    for (int c = 0; c < copies; ++c) {
      if (Chance(faults_.drop)) continue;
      const auto span = (faults_.max_delay - faults_.min_delay).count();
      const Duration delay = faults_.min_delay + Duration(span > 0 ? static_cast<int64_t>(rng_() % static_cast<uint64_t>(span)) : 0);
      queue_.push({now + delay + extra_delay, order_++, from, to, c + 1 < copies ? message : std::move(message)});
    }
  }

  using Deliver = std::function<void(size_t to, size_t from, Message& message, TimePoint at)>;
  // Every message due by `now` (in time order); messages to held endpoints stay queued.
  void DeliverDue(TimePoint now, const Deliver& deliver) {
    std::vector<InFlight> kept;
    while (!queue_.empty() && queue_.top().at <= now) {
      InFlight m = queue_.top();
      queue_.pop();
      if (held_[m.to]) {
        kept.push_back(std::move(m));
        continue;
      }
      if (down_[m.to] || group_[m.from] != group_[m.to]) continue;
      deliver(m.to, m.from, m.message, std::max(now, m.at));
    }
    for (InFlight& m : kept) queue_.push(std::move(m));
  }
  // The next message whatever its time (a synchronous simulation jumps to it); false when none.
  bool DeliverNext(const Deliver& deliver) {
    while (!queue_.empty()) {
      InFlight m = queue_.top();
      queue_.pop();
      if (down_[m.to] || group_[m.from] != group_[m.to]) continue;
      deliver(m.to, m.from, m.message, m.at);
      return true;
    }
    return false;
  }
  // Until nothing is queued (deliveries may send more).
  void DeliverAll(const Deliver& deliver) {
    while (DeliverNext(deliver)) {
    }
  }
  bool empty() const { return queue_.empty(); }

 private:
  struct InFlight {
    TimePoint at;
    uint64_t order;
    size_t from;
    size_t to;
    Message message;
    bool operator>(const InFlight& o) const { return at != o.at ? at > o.at : order > o.order; }
  };

  std::mt19937_64 rng_;
  std::vector<int> group_;
  std::vector<bool> down_;
  std::vector<bool> held_;
  Faults faults_;
  uint64_t order_ = 0;
  std::priority_queue<InFlight, std::vector<InFlight>, std::greater<>> queue_;
};

}  // namespace murmur::testing
