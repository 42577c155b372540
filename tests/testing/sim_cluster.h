#pragma once
// N membership state machines on the shared fake network (fake_network.h): a manual clock,
// per-message delay, drop and duplication drawn from a seeded generator, partitions, crashes
// and restarts. Every node is node i with id i + 1 and address "sim://i".

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gossip/membership.h"
#include "tests/testing/fake_network.h"

namespace murmur::gossip::testing {

using murmur::testing::FakeNetwork;

using SimFaults = murmur::testing::Faults;

// The nodes every member joins through (the first `seed_nodes`) and the incarnation the nodes
// start with.
struct SimClusterLayout {
  size_t seed_nodes = SIZE_MAX;
  Incarnation incarnation = 0;
};

class SimCluster {
 public:
  static constexpr Duration kStep = std::chrono::milliseconds(5);

  SimCluster(size_t n, MembershipOptions base, uint64_t seed, SimClusterLayout layout = {})
      : base_(std::move(base)), rng_(seed), net_(n, seed ^ 0x5EEDULL) {
    for (size_t i = 0; i < std::min(n, layout.seed_nodes); ++i) base_.seeds.push_back(Address(i));
    nodes_.resize(n);
    for (size_t i = 0; i < n; ++i) Start(i, layout.incarnation);
  }

  static std::string Address(size_t i) { return "sim://" + std::to_string(i); }
  static NodeId Id(size_t i) { return i + 1; }
  size_t size() const { return nodes_.size(); }
  TimePoint now() const { return now_; }
  SimFaults& faults() { return net_.faults(); }
  bool up(size_t i) const { return nodes_[i] != nullptr; }
  Membership& node(size_t i) { return *nodes_[i]; }

  void Crash(size_t i) {
    nodes_[i].reset();
    net_.SetDown(i, true);
  }
  void Start(size_t i, Incarnation incarnation) {
    MembershipOptions o = base_;
    o.id = Id(i);
    o.address = Address(i);
    o.incarnation = incarnation;
    o.rng_seed = rng_();
    nodes_[i] = std::make_unique<Membership>(o, now_);
    net_.SetDown(i, false);
  }
  // Nodes in different groups cannot reach each other.
  void Partition(std::vector<int> group) { net_.Partition(std::move(group)); }
  void Heal() { net_.Heal(); }

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
      net_.Send(i, to, std::move(e), now_);
    }
  }

  void Deliver() {
    net_.DeliverDue(now_, [&](size_t to, size_t, Envelope& e, TimePoint) {
      if (!nodes_[to]) return;
      nodes_[to]->Step(e, now_);
      Collect(to);
    });
  }

  MembershipOptions base_;
  std::mt19937_64 rng_;
  FakeNetwork<Envelope> net_;
  std::vector<std::unique_ptr<Membership>> nodes_;
  TimePoint now_{};
  std::vector<Event> events_;
};

}  // namespace murmur::gossip::testing
