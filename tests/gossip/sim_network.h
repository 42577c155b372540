#pragma once
// A deterministic fake network for the membership state machine: a manual clock, per-message
// delay, drop and duplication drawn from a seeded generator, partitions, crashes and restarts.
// Every node is node i with id i + 1 and address "sim://i".

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gossip/membership.h"

namespace murmur::gossip::testing {

struct SimFaults {
  Duration min_delay = std::chrono::milliseconds(1);
  Duration max_delay = std::chrono::milliseconds(5);
  double drop = 0.0;
  double duplicate = 0.0;
};

class SimCluster {
 public:
  static constexpr Duration kStep = std::chrono::milliseconds(5);

  SimCluster(size_t n, MembershipOptions base, uint64_t seed)
      : base_(std::move(base)), rng_(seed), group_(n, 0) {
    for (size_t i = 0; i < n; ++i) base_.seeds.push_back(Address(i));
    nodes_.resize(n);
    for (size_t i = 0; i < n; ++i) Start(i, 0);
  }

  static std::string Address(size_t i) { return "sim://" + std::to_string(i); }
  static NodeId Id(size_t i) { return i + 1; }
  size_t size() const { return nodes_.size(); }
  TimePoint now() const { return now_; }
  SimFaults& faults() { return faults_; }
  bool up(size_t i) const { return nodes_[i] != nullptr; }
  Membership& node(size_t i) { return *nodes_[i]; }

  void Crash(size_t i) { nodes_[i].reset(); }
  void Start(size_t i, Incarnation incarnation) {
    MembershipOptions o = base_;
    o.id = Id(i);
    o.address = Address(i);
    o.incarnation = incarnation;
    o.rng_seed = rng_();
    nodes_[i] = std::make_unique<Membership>(o, now_);
  }
  // Nodes in different groups cannot reach each other.
  void Partition(std::vector<int> group) { group_ = std::move(group); }
  void Heal() { std::fill(group_.begin(), group_.end(), 0); }

  // Called after every step; return true to stop early.
  using Until = std::function<bool()>;
  bool RunFor(Duration d, const Until& until = nullptr) {
    const TimePoint end = now_ + d;
    while (now_ < end) {
      now_ += kStep;
      Deliver();
      for (size_t i = 0; i < nodes_.size(); ++i) {
        if (!nodes_[i]) continue;
        nodes_[i]->Tick(now_);
        Collect(i);
        for (const MemberEvent& e : nodes_[i]->TakeEvents()) events_.push_back({now_, i, e});
      }
      if (until && until()) return true;
    }
    return false;
  }

  // What node i believes about node j (nullopt: unknown or forgotten).
  std::optional<MemberState> View(size_t i, size_t j) const {
    auto entry = nodes_[i]->Find(Id(j));
    if (!entry.has_value()) return std::nullopt;
    return entry->state;
  }
  // Every up node sees every other up node alive.
  bool AllUpSeeAllUpAlive() const {
    for (size_t i = 0; i < size(); ++i) {
      for (size_t j = 0; j < size(); ++j) {
        if (i == j || !up(i) || !up(j)) continue;
        if (View(i, j) != MemberState::kAlive) return false;
      }
    }
    return true;
  }
  // Every up node holds `j` dead, left or forgotten.
  bool AllUpSeeGone(size_t j) const {
    for (size_t i = 0; i < size(); ++i) {
      if (i == j || !up(i)) continue;
      auto s = View(i, j);
      if (s == MemberState::kAlive || s == MemberState::kSuspect) return false;
    }
    return true;
  }
  std::string Describe() const {
    std::string out;
    for (size_t i = 0; i < size(); ++i) {
      out += "node " + std::to_string(i) + (up(i) ? "" : " (down)") + ":";
      if (!up(i)) {
        out += "\n";
        continue;
      }
      for (size_t j = 0; j < size(); ++j) {
        auto s = View(i, j);
        out += " ";
        out += s.has_value() ? MemberStateName(*s) : "-";
      }
      out += " inc=" + std::to_string(nodes_[i]->incarnation()) + "\n";
    }
    return out;
  }

  struct Event {
    TimePoint at;
    size_t observer;
    MemberEvent event;
  };
  const std::vector<Event>& events() const { return events_; }
  // Called for every message a node sends (before loss and duplication), for tests that count
  // traffic.
  struct Delivery {
    size_t from;
    size_t to;
    Payload payload;
  };
  std::function<void(const Delivery&)> on_send;

 private:
  struct InFlight {
    TimePoint at;
    uint64_t order;
    size_t from;
    size_t to;
    Envelope envelope;
    bool operator>(const InFlight& o) const {
      return at != o.at ? at > o.at : order > o.order;
    }
  };

  void Collect(size_t i) {
    for (Outgoing& out : nodes_[i]->TakeOutput()) {
      if (!out.address.starts_with("sim://")) continue;
      const size_t to = std::stoul(out.address.substr(6));
      if (to >= size()) continue;
      Envelope e;
      e.cluster_id = "sim";
      e.sender_id = Id(i);
      e.incarnation = nodes_[i]->incarnation();
      e.payload = std::move(out.payload);
      if (on_send) on_send({i, to, e.payload});
      const int copies = Chance(faults_.duplicate) ? 2 : 1;
      for (int c = 0; c < copies; ++c) {
        if (Chance(faults_.drop)) continue;
        const auto span = (faults_.max_delay - faults_.min_delay).count();
        const Duration delay = faults_.min_delay + Duration(span > 0 ? rng_() % span : 0);
        queue_.push({now_ + delay, order_++, i, to, e});
      }
    }
  }

  void Deliver() {
    while (!queue_.empty() && queue_.top().at <= now_) {
      InFlight m = queue_.top();
      queue_.pop();
      if (!nodes_[m.to] || group_[m.from] != group_[m.to]) continue;
      nodes_[m.to]->Step(m.envelope, now_);
      Collect(m.to);
    }
  }

  bool Chance(double p) {
    return p > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < p;
  }

  MembershipOptions base_;
  std::mt19937_64 rng_;
  std::vector<std::unique_ptr<Membership>> nodes_;
  std::vector<int> group_;
  SimFaults faults_;
  TimePoint now_{};
  uint64_t order_ = 0;
  std::priority_queue<InFlight, std::vector<InFlight>, std::greater<>> queue_;
  std::vector<Event> events_;
};

}  // namespace murmur::gossip::testing
