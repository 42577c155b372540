// The simulator's state and the steps it takes, shared by simulator.cc (the run: starts,
// crashes, partitions, the event loop, the result) and simulator_driver.cc (one node's turn, as the
// real driver's loop takes it: deliveries, ticks, computations, the machine's actions). Internal
// to node/sim: nothing outside includes it.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "node/sim/event.h"
#include "node/sim/simulator.h"
#include "node/sim/wire.h"

namespace murmur::sim {

struct Simulator::Impl {
  struct Queued {
    gossip::Envelope envelope;
    std::shared_ptr<Wire> wire;
  };
  // A machine's refusals by reason, as its metrics count them (the observer of both machines).
  struct Refusals : gossip::GossipNodeObserver, gossip::SyncNodeObserver {
    std::map<std::string, uint64_t, std::less<>> by_reason;
    uint64_t total = 0;  // of the current process's machine
    void Rejected(std::string_view reason) override {
      auto it = by_reason.find(reason);
      if (it == by_reason.end()) it = by_reason.emplace(std::string(reason), 0).first;
      ++it->second;
      ++total;
    }
  };
  struct Node {
    bool running = false;  // the process exists (started, not crashed, its run not over)
    uint64_t generation = 0;
    std::unique_ptr<gossip::Membership> membership;
    std::unique_ptr<gossip::GossipNode> gossip;
    std::unique_ptr<gossip::SyncNode> sync;
    std::vector<float> partial;  // sync: the partial gradient computed
    uint64_t step_clock = 0;
    uint64_t sequence = 0;
    bool computing = false;
    Duration eval_debt{0};  // evaluations not yet paid for by a computation
    gossip::StepComputed step_done;
    uint64_t gradient_iteration = 0;
    std::deque<Queued> queued;  // machine messages that arrived while it computed
    node::StragglerOptions straggle;
    std::optional<node::StragglerInjector> injector;
    TimePoint next_view{};
    TimePoint wake_at{};       // the pending kWake's time (a later Wait replaces it)
    TimePoint cpu_started{};   // on shared cores: when its computation began
    double sample_share = 1;   // ... and the part of it that computes the batch
    Duration clock_offset{0};  // what its clock reads beyond the run's (SimClockJump)
    SimNodeResult r;
    Refusals refusals;
  };

  Impl(SimOptions options, Workload* w)
      : o(std::move(options)),
        workload(w),
        net(o.nodes, o.link, o.seed ^ 0x5EEDULL),
        cpu(o.cores),
        nodes(o.nodes),
        rng(o.seed) {}

  SimOptions o;
  Workload* workload;
  NetworkModel net;
  SharedCpu cpu;
  std::vector<Node> nodes;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue;
  uint64_t order = 0;
  TimePoint now{};
  std::mt19937_64 rng;
  std::vector<float> x0;
  SimResult result;
  std::function<void(const SimMessage&)>* on_message = nullptr;
  int pending_starts = 0;  // starts and restarts scheduled, not run yet

  // Node `i`'s clock: what its machines are handed as `now`.
  TimePoint Now(size_t i) const { return now + nodes[i].clock_offset; }
  void Push(Event e);
  void Schedule(EventKind kind, TimePoint at, size_t node, std::shared_ptr<Wire> wire = nullptr);

  void Start(size_t i);

  // The process is gone (a crash, or its run is over and it exited).
  void Stop(size_t i, bool crashed);

  void Send(size_t i, size_t to, gossip::Payload payload,
            std::shared_ptr<const std::vector<std::byte>> frame);

  void CollectMembership(size_t i);

  void Arrive(const std::shared_ptr<Wire>& wire);

  void Deliver(const std::shared_ptr<Wire>& wire);

  void HandOver(size_t i, const gossip::Envelope& e, const Wire& wire);

  // The machine's refusals so far.
  static uint64_t Rejected(const Node& n);
  // The model node `i` trains (gossip) or holds (sync: the root's and the ring's).
  std::span<const float> ModelOf(size_t i);
  // Node `i`'s model and, in gossip, CHOCO's public copy and every copy it tracks with its
  // version: what a refused message must leave as it was.
  uint64_t StateDigest(size_t i);
  void Violation(std::string what);
  // Node `i`'s hostile copy of the message it is about to send (SimAttack), if it attacks now.
  void SendHostile(size_t i, size_t to, const gossip::Envelope& e,
                   const std::shared_ptr<const std::vector<std::byte>>& frame);
  void CheckFinite(size_t i, std::string_view after);

  void Tick(size_t i);

  // The membership view, every view_interval (the drivers' 20 ms), checked between computations.
  void RefreshView(size_t i);

  // What the real driver's loop does between computations: the membership view when
  // view_interval passed, the machine's Tick, its outputs.
  void DriverTurn(size_t i);

  void StartCompute(size_t i, int64_t rows);

  // The step took `compute` (of which `samples` computing the batch, what the real driver times
  // and the injection scales) and ends `left` from now; the injection follows (a sleep: no CPU).
  void AfterCompute(size_t i, Duration compute, Duration samples, Duration left);

  void ScheduleCpu();

  void CpuDone(uint64_t version);

  void ComputeDone(size_t i);

  void Process(size_t i);

  void Sample(const std::function<void(const SimProgress&)>& progress);

  // The run's first events: every node's start (late joiners at their time), the crashes, the
  // partitions and the first progress sample.
  void ScheduleStarts(TimePoint start);

  // A node's crash, and its restart if the crash has a down time.
  void Crash(size_t node, TimePoint start);

  // One event at `now`. A progress sample that finds every node over empties the queue.
  void Handle(const Event& e, TimePoint start,
              const std::function<void(const SimProgress&)>& progress, bool& started);

  bool AllOver() const;

  void Finalize();
};

}  // namespace murmur::sim
