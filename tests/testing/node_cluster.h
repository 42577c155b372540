#pragma once
// N nodes, each a real membership machine and a node machine (gossip::GossipNode or
// gossip::SyncNode), on the shared fake network (fake_network.h) under a manual clock: the
// deterministic counterpart of node/driver/. Computing is modeled: a ComputeStep takes the
// node's `step_time` and moves its model a tenth of the way toward a target of its own (so
// models differ by node and an adopted model is recognisable); a ComputeGradient takes
// `step_time` and returns `gradient(i, request)` (or `device_gradient`'s, a real computation).
// Evaluations return `accuracy(i)` at once.
// With `compute` set, a ComputeStep is real instead: the hook runs it (a Trainer's step at the
// asked learning rate) and returns its loss and rows. Node i has id i + 1 and membership address "sim://i"; every envelope carries the node's
// announced step clock, as PeerNode stamps it.

#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gossip/membership.h"
#include "gossip/node_io.h"
#include "tests/testing/fake_network.h"

namespace murmur::testing {

// A message on the fake network: the envelope and its tensor frame (null for none).
// Membership timing for machine tests: a 100 ms protocol period, so failures and joins play out
// in a few simulated seconds.
inline gossip::MembershipOptions FastMembership() {
  gossip::MembershipOptions m;
  m.probe_interval = std::chrono::milliseconds(100);
  m.probe_timeout = std::chrono::milliseconds(40);
  m.join_retry = std::chrono::milliseconds(200);
  m.dead_gossip = std::chrono::milliseconds(500);
  return m;
}

struct Packet {
  gossip::Envelope envelope;
  std::shared_ptr<const std::vector<std::byte>> frame;
};

template <typename Machine>
class NodeCluster {
 public:
  static constexpr Duration kTick = std::chrono::milliseconds(1);

  struct Node {
    std::unique_ptr<gossip::Membership> membership;
    std::unique_ptr<Machine> machine;
    std::vector<float> x;  // GossipNode: the model (the trainer's parameters)
    Duration step_time = std::chrono::milliseconds(2);
    std::optional<TimePoint> compute_done;
    std::optional<double> compute_lr;  // of the ComputeStep in progress
    std::optional<gossip::ComputeGradient> gradient_request;
    uint64_t announced_step = 0;
    uint64_t announced_samples = 0;
    std::optional<std::string> finished;
    TimePoint finished_at{};
    std::optional<Status> over;
    TimePoint over_at{};
    uint64_t resets = 0;
    uint64_t computed = 0;
    std::vector<TimePoint> step_ends;
  };
  // Builds node i's machine (its membership exists already).
  using Factory = std::function<std::unique_ptr<Machine>(size_t i, Node& node, TimePoint now)>;

  NodeCluster(size_t n, gossip::MembershipOptions membership, uint64_t seed, Factory factory)
      : base_(std::move(membership)), net_(n, seed), factory_(std::move(factory)), nodes_(n) {
    for (size_t i = 0; i < n; ++i) base_.seeds.push_back(Address(i));
  }

  static std::string Address(size_t i) { return "sim://" + std::to_string(i); }
  static gossip::NodeId Id(size_t i) { return i + 1; }
  size_t size() const { return nodes_.size(); }
  TimePoint now() const { return now_; }
  FakeNetwork<Packet>& net() { return net_; }
  Node& node(size_t i) { return nodes_[i]; }
  Machine& machine(size_t i) { return *nodes_[i].machine; }
  bool up(size_t i) const { return nodes_[i].membership != nullptr; }
  bool running(size_t i) const { return up(i) && !nodes_[i].over.has_value(); }

  int64_t samples_per_step = 10;
  std::function<std::vector<float>(size_t i, const gossip::ComputeGradient&)> gradient;
  // Instead of `gradient`: a partial in the node's device memory (a real model's computation),
  // valid until the node is stepped with it.
  std::function<std::span<const float>(size_t i, const gossip::ComputeGradient&)> device_gradient;
  std::function<double(size_t i)> accuracy = [](size_t) { return 0.5; };
  // Real computing (see the header comment): (loss, rows) of node i's step at `lr`.
  std::function<std::pair<double, int64_t>(size_t i, std::optional<double> lr)> compute;
  // Called for every output a node takes, before the cluster acts on it (which may rewrite it:
  // a peer that says something else).
  std::function<void(size_t i, gossip::NodeAction&)> on_output;
  // Extra delay for a message that carries a tensor frame (an update, a model): a thin link,
  // where a model takes longer than a clock or a probe.
  Duration frame_delay{0};
  // Membership messages node i sends to an address outside the cluster (an attacker's).
  std::function<void(size_t i, const gossip::Outgoing&)> on_outside;

  void Start(size_t i, gossip::Incarnation incarnation = 1, size_t dimension = 16) {
    gossip::MembershipOptions o = base_;
    o.id = Id(i);
    o.address = Address(i);
    o.incarnation = incarnation;
    o.rng_seed = net_.rng()();
    Node& n = nodes_[i];
    const Duration step_time = n.step_time;
    n = Node{};
    n.step_time = step_time;
    n.membership = std::make_unique<gossip::Membership>(o, now_);
    n.x.assign(dimension, 0.0f);
    n.machine = factory_(i, n, now_);
    net_.SetDown(i, false);
    net_.SetHeld(i, false);
  }
  // Gone at once (SIGKILL): nothing it had is kept.
  void Crash(size_t i) {
    nodes_[i].membership.reset();
    nodes_[i].machine.reset();
    net_.SetDown(i, true);
  }
  // SIGSTOP / SIGCONT: a held node neither ticks nor receives; what is sent to it waits.
  void Hold(size_t i, bool held) { net_.SetHeld(i, held); }

  // Delivers a crafted message to node i now, as if it came off the wire (hostile-input tests).
  void Inject(size_t to, gossip::Envelope envelope,
              std::shared_ptr<const std::vector<std::byte>> frame = nullptr) {
    Packet p{std::move(envelope), std::move(frame)};
    Receive(to, to, p);
  }

  bool RunFor(Duration d, const std::function<bool()>& until = nullptr) {
    const TimePoint end = now_ + d;
    while (now_ < end) {
      now_ += kTick;
      net_.DeliverDue(now_, [&](size_t to, size_t from, Packet& p, TimePoint) { Receive(to, from, p); });
      for (size_t i = 0; i < size(); ++i) {
        if (!up(i) || net_.held(i)) continue;
        Node& n = nodes_[i];
        n.membership->Tick(now_);
        CollectMembership(i);
        if (!n.machine || n.over.has_value()) continue;
        n.machine->Step(gossip::MemberView{n.membership->Members()}, now_);
        if (n.compute_done.has_value() && now_ >= *n.compute_done) Complete(i);
        n.machine->Tick(now_);
        Process(i);
      }
      if (until && until()) return true;
    }
    return false;
  }

 private:
  void Receive(size_t to, size_t from, Packet& p) {
    Node& n = nodes_[to];
    if (!up(to)) return;
    if (n.membership->Step(p.envelope, now_)) {
      CollectMembership(to);
      return;
    }
    if (!n.machine || n.over.has_value()) return;
    gossip::Incoming in{p.envelope.sender_id, p.envelope.incarnation, p.envelope.step_clock,
                        p.envelope.payload, {}, p.frame ? size_t{1} : size_t{0}};
    if (p.frame) in.frame = *p.frame;
    n.machine->Step(in, now_);
    Process(to);
    (void)from;
  }

  void Complete(size_t i) {
    Node& n = nodes_[i];
    n.compute_done.reset();
    ++n.computed;
    n.step_ends.push_back(now_);
    if constexpr (requires(Machine& m) { m.Step(gossip::GradientComputed{}, TimePoint{}); }) {
      gossip::ComputeGradient request = *std::move(n.gradient_request);
      n.gradient_request.reset();
      if (device_gradient) {
        n.machine->Step(gossip::GradientComputed{request.iteration, device_gradient(i, request)}, now_);
      } else {
        const std::vector<float> g = gradient(i, request);
        n.machine->Step(gossip::GradientComputed{request.iteration, g}, now_);
      }
    } else if (compute) {
      const auto [loss, rows] = compute(i, n.compute_lr);
      n.machine->Step(gossip::StepComputed{std::isfinite(loss), loss, rows}, now_);
    } else {
      double loss = 0;
      const float target = static_cast<float>(i + 1);
      for (float& v : n.x) {
        v += 0.1f * (target - v);
        loss += std::abs(static_cast<double>(target - v));
      }
      n.machine->Step(gossip::StepComputed{true, loss, samples_per_step}, now_);
    }
  }

  Packet Wrap(size_t i, gossip::Payload payload, std::shared_ptr<const std::vector<std::byte>> frame) {
    Packet p;
    p.envelope.cluster_id = "sim";
    p.envelope.sender_id = Id(i);
    p.envelope.incarnation = nodes_[i].membership->incarnation();
    p.envelope.step_clock = nodes_[i].announced_step;
    p.envelope.payload = std::move(payload);
    p.envelope.payload_frames = frame ? 1 : 0;
    p.frame = std::move(frame);
    return p;
  }

  void CollectMembership(size_t i) {
    for (gossip::Outgoing& out : nodes_[i].membership->TakeOutput()) {
      if (!out.address.starts_with("sim://")) {
        if (on_outside) on_outside(i, out);
        continue;
      }
      const size_t to = std::stoul(out.address.substr(6));
      net_.Send(i, to, Wrap(i, std::move(out.payload), nullptr), now_);
    }
  }

  void Process(size_t i) {
    Node& n = nodes_[i];
    for (auto actions = n.machine->TakeOutput(); !actions.empty(); actions = n.machine->TakeOutput()) {
      for (gossip::NodeAction& action : actions) {
        if (on_output) on_output(i, action);
        if (auto* send = std::get_if<gossip::SendTo>(&action)) {
          if (send->to >= 1 && send->to <= size()) {
            const Duration extra = send->frame != nullptr ? frame_delay : Duration(0);
            net_.Send(i, static_cast<size_t>(send->to - 1),
                      Wrap(i, std::move(send->payload), std::move(send->frame)), now_, extra);
          }
        } else if (auto* a = std::get_if<gossip::Announce>(&action)) {
          n.announced_step = a->step_clock;
          n.announced_samples = a->samples;
          n.membership->SetProgress(a->step_clock, a->samples, a->finished);
        } else if (auto* c = std::get_if<gossip::ComputeStep>(&action)) {
          n.compute_done = now_ + n.step_time;
          n.compute_lr = c->lr;
        } else if (auto* g = std::get_if<gossip::ComputeGradient>(&action)) {
          n.gradient_request = std::move(*g);
          n.compute_done = now_ + n.step_time;
        } else if (std::holds_alternative<gossip::ResetOptimizer>(action)) {
          ++n.resets;
        } else if (std::holds_alternative<gossip::Evaluate>(action)) {
          n.machine->Step(gossip::Evaluated{accuracy(i), 0}, now_);
        } else if (auto* f = std::get_if<gossip::Finished>(&action)) {
          n.finished = f->reason;
          n.finished_at = now_;
        } else if (auto* over = std::get_if<gossip::RunOver>(&action)) {
          n.over = over->status;
          n.over_at = now_;
          n.membership->Leave(now_);
          CollectMembership(i);
          return;
        }
      }
    }
  }

  gossip::MembershipOptions base_;
  FakeNetwork<Packet> net_;
  Factory factory_;
  std::vector<Node> nodes_;
  TimePoint now_{};
};

}  // namespace murmur::testing
