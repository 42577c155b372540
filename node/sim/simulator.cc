#include "node/sim/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <deque>
#include <queue>
#include <random>

#include "base/check.h"
#include "coding/update_codec.h"
#include "coding/vector_ops.h"
#include "node/peer/peer_node.h"
#include "node/sim/event.h"
#include "node/sim/wire.h"

namespace murmur::sim {
struct Simulator::Impl {
  struct Queued {
    gossip::Envelope envelope;
    std::shared_ptr<Wire> wire;
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
    TimePoint wake_at{};      // the pending kWake's time (a later Wait replaces it)
    TimePoint cpu_started{};  // on shared cores: when its computation began
    double sample_share = 1;  // ... and the part of it that computes the batch
    SimNodeResult r;
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

  void Push(Event e) {
    e.order = order++;
    queue.push(std::move(e));
  }
  void Schedule(EventKind kind, TimePoint at, size_t node, std::shared_ptr<Wire> wire = nullptr) {
    Event e{at, 0, kind, node, nodes[node].generation, std::move(wire)};
    if (kind == EventKind::kTick && o.lockstep_ticks) e.slot = node + 1;
    Push(std::move(e));
  }

  void Start(size_t i) {
    Node& n = nodes[i];
    ++n.generation;
    n.running = true;
    n.r.up = true;
    n.r.id = Id(i);
    n.computing = false;
    n.queued.clear();
    n.step_clock = 0;
    n.sequence = 0;  // a new process numbers its envelopes from the start
    net.SetDown(i, false);
    gossip::MembershipOptions m = o.membership;
    m.id = Id(i);
    m.address = Address(i);
    // Real incarnations are wall-clock milliseconds at start; a restart's is higher.
    m.incarnation =
        1 +
        static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count());
    m.rng_seed = rng();
    n.membership = std::make_unique<gossip::Membership>(m, now);
    n.straggle = o.straggle.contains(i) ? o.straggle.at(i) : node::StragglerOptions{};
    n.injector.emplace(n.straggle);
    n.next_view = now;
    if (o.kind == SimKind::kGossip) {
      gossip::GossipNodeOptions g = o.gossip;
      g.self = Id(i);
      g.incarnation = m.incarnation;
      g.shard_rows = workload->ShardRows(i);
      // init = per-node: the node's own model, as a real node of this id draws it; its public
      // copy's stream then starts from that model (receivers ask for a snapshot).
      workload->Reset(i, o.per_node_init ? workload->OwnInitialModel(Id(i)) : x0);
      auto machine =
          gossip::GossipNode::Create(g, workload->Params(i), x0, !o.per_node_init, now);
      MURMUR_CHECK(machine.ok()) << machine.status().ToString();
      n.gossip = *std::move(machine);
      if (n.straggle.pause_from >= 0) {
        n.gossip->Step(gossip::InjectedPause{n.straggle.pause_from, n.straggle.pause_to}, now);
      }
    } else if (o.kind == SimKind::kSync) {
      gossip::SyncNodeOptions s = o.sync;
      s.self = Id(i);
      auto machine = gossip::SyncNode::Create(*o.plan, s, x0, now);
      MURMUR_CHECK(machine.ok()) << machine.status().ToString();
      n.sync = *std::move(machine);
    }
    // Independent processes do not tick in lock-step: each at its own phase of the tick.
    const Duration phase =
        o.lockstep_ticks
            ? o.tick
            : Duration(static_cast<int64_t>(rng() % static_cast<uint64_t>(o.tick.count())));
    Schedule(EventKind::kTick, now + phase, i);
  }

  // The process is gone (a crash, or its run is over and it exited).
  void Stop(size_t i, bool crashed) {
    Node& n = nodes[i];
    n.running = false;
    ++n.generation;
    if (crashed) {
      n.r.up = false;
      n.membership.reset();
      n.gossip.reset();
      n.sync.reset();
    }
    n.queued.clear();
    net.SetDown(i, true);
    if (o.cores > 0) {
      cpu.Remove(i, now);
      ScheduleCpu();
    }
  }

  void Send(size_t i, size_t to, gossip::Payload payload,
            std::shared_ptr<const std::vector<std::byte>> frame) {
    Node& n = nodes[i];
    if (to >= nodes.size()) return;
    if (n.straggle.drop > 0 && net.Uniform() < n.straggle.drop) return;  // injected, as PeerNode
    gossip::Envelope e;
    e.sender_id = Id(i);
    e.incarnation = n.membership->incarnation();
    e.step_clock = n.step_clock;
    e.sequence = ++n.sequence;
    const node::MessageKind kind = node::KindOf(payload);
    e.payload = std::move(payload);
    auto wire = MakeWire(i, to, std::move(e), std::move(frame), o.wire_scale);
    wire->own_lane = kind == node::MessageKind::kMembership;
    ++n.r.messages_sent;
    n.r.bytes_sent += wire->bytes;
    ++result.messages;
    result.bytes += wire->bytes;
    result.bytes_by_kind[std::string(node::MessageKindName(kind))] += wire->bytes;
    ++result.messages_by_kind[std::string(node::MessageKindName(kind))];
    for (uint64_t v : {static_cast<uint64_t>(now.time_since_epoch().count()), uint64_t{i},
                       uint64_t{to}, wire->bytes}) {
      result.trace_hash = TraceMix(result.trace_hash, v);
    }
    if (on_message != nullptr && *on_message) {
      (*on_message)({Seconds(now.time_since_epoch()), i, to, wire->bytes,
                     std::string(node::MessageKindName(kind)), wire->header});
    }
    const auto arrival = net.Send(i, to, wire->bytes, now, n.straggle.send_delay, wire->own_lane);
    if (!arrival.has_value()) {
      ++n.r.lost;
      return;
    }
    if (o.link.corrupt > 0 && net.Uniform() < o.link.corrupt)
      wire = CorruptOneByte(*wire, [this] { return net.Uniform(); });
    if (o.link.duplicate > 0 && net.Uniform() < o.link.duplicate) {
      Push(Event{*arrival + net.Jitter(), 0, EventKind::kArrive, to, 0, wire});
    }
    Push(Event{*arrival, 0, EventKind::kArrive, to, 0, std::move(wire)});
  }

  void CollectMembership(size_t i) {
    Node& n = nodes[i];
    for (gossip::Outgoing& out : n.membership->TakeOutput()) {
      // An address no simulated node has (a corrupted or forged one) reaches no one, as a real
      // node's connection to it would fail.
      if (!out.address.starts_with("sim://")) continue;
      size_t to = 0;
      const char* first = out.address.data() + 6;
      const char* last = out.address.data() + out.address.size();
      if (auto [end, ec] = std::from_chars(first, last, to); ec != std::errc() || end != last) {
        continue;
      }
      Send(i, to, std::move(out.payload), nullptr);
    }
    for (gossip::MemberEvent& e : n.membership->TakeEvents()) {
      result.member_events.push_back({Seconds(now.time_since_epoch()), i, std::move(e)});
    }
  }

  void Arrive(const std::shared_ptr<Wire>& wire) {
    if (!net.Reachable(wire->from, wire->to)) {
      ++nodes[wire->from].r.lost;
      return;
    }
    Push(Event{net.Receive(wire->to, wire->bytes, now, wire->own_lane), 0, EventKind::kDeliver,
               wire->to, 0, wire});
  }

  void Deliver(const std::shared_ptr<Wire>& wire) {
    const size_t i = wire->to;
    Node& n = nodes[i];
    if (!n.running || !net.Reachable(wire->from, i)) {
      ++nodes[wire->from].r.lost;
      return;
    }
    auto envelope = OpenWire(*wire);
    if (!envelope.ok()) {
      ++n.r.rejected;
      return;
    }
    ++n.r.messages_received;
    n.r.bytes_received += wire->bytes;
    if (node::KindOf(envelope->payload) == node::MessageKind::kMembership) {
      n.membership->Step(*envelope, now);
      CollectMembership(i);
      return;
    }
    if (!n.gossip && !n.sync) return;
    if (n.computing) {
      n.queued.push_back({*std::move(envelope), wire});
      return;
    }
    // The real driver's loop: Drain hands the message over, then the machine ticks.
    HandOver(i, *envelope, *wire);
    Process(i);
    if (n.running && !n.computing) DriverTurn(i);
  }

  void HandOver(size_t i, const gossip::Envelope& e, const Wire& wire) {
    Node& n = nodes[i];
    gossip::Incoming in{
        e.sender_id, e.incarnation, e.step_clock, e.payload, {}, wire.frame ? size_t{1} : 0};
    if (wire.frame) in.frame = *wire.frame;
    const uint64_t rejected_before = Rejected(n);
    const uint64_t digest_before = o.check_invariants ? ModelDigest(ModelOf(i)) : 0;
    if (n.gossip) n.gossip->Step(in, now);
    if (n.sync) n.sync->Step(in, now);
    if (!o.check_invariants || !n.running) return;
    const std::string_view kind = node::MessageKindName(node::KindOf(e.payload));
    if (Rejected(n) > rejected_before && ModelDigest(ModelOf(i)) != digest_before) {
      Violation(fmt::format("node {}: a {} message from node {} that it refused changed its model",
                            Id(i), kind, e.sender_id));
    }
    CheckFinite(i, fmt::format("a {} message from node {}", kind, e.sender_id));
  }

  // The machine's refusals so far.
  static uint64_t Rejected(const Node& n) {
    if (n.gossip) return n.gossip->state().rejected_messages;
    if (n.sync) return n.sync->state().rejected_messages;
    return 0;
  }
  // The model node `i` trains (gossip) or holds (sync: the root's and the ring's).
  std::span<const float> ModelOf(size_t i) {
    Node& n = nodes[i];
    if (n.gossip) return workload->Params(i);
    if (n.sync) return n.sync->model();
    return {};
  }
  void Violation(std::string what) {
    ++result.violation_count;
    if (result.violations.size() < SimResult::kMaxViolations) {
      result.violations.push_back(
          fmt::format("t={:.6f}s {}", Seconds(now.time_since_epoch()), std::move(what)));
    }
  }
  void CheckFinite(size_t i, std::string_view after) {
    if (!o.check_invariants || !nodes[i].running) return;
    if (const auto k = coding::FirstNonFinite(ModelOf(i))) {
      Violation(
          fmt::format("node {}: value {} of its model is not finite after {}", Id(i), *k, after));
    }
  }

  void Tick(size_t i) {
    Node& n = nodes[i];
    n.membership->Tick(now);
    CollectMembership(i);
    if ((n.gossip || n.sync) && !n.computing) DriverTurn(i);
    if (n.running) Schedule(EventKind::kTick, now + o.tick, i);
  }

  // The membership view, every view_interval (the drivers' 20 ms), checked between computations.
  void RefreshView(size_t i) {
    Node& n = nodes[i];
    if (now < n.next_view) return;
    gossip::MemberView view{n.membership->Members()};
    if (n.gossip) n.gossip->Step(view, now);
    if (n.sync) n.sync->Step(view, now);
    n.next_view = now + o.view_interval;
  }

  // What the real driver's loop does between computations: the membership view when
  // view_interval passed, the machine's Tick, its outputs.
  void DriverTurn(size_t i) {
    Node& n = nodes[i];
    RefreshView(i);
    if (n.gossip) n.gossip->Tick(now);
    if (n.sync) n.sync->Tick(now);
    Process(i);
  }

  void StartCompute(size_t i, int64_t rows) {
    Node& n = nodes[i];
    const Duration samples = o.cost_per_sample * rows;
    // The evaluations since the last step ran on this thread first (cost_per_eval_row).
    const Duration compute = samples + o.cost_per_step + n.eval_debt;
    n.eval_debt = Duration(0);
    n.computing = true;
    if (result.first_step_s < 0) result.first_step_s = Seconds(now.time_since_epoch());
    ++n.r.steps;
    n.r.samples += rows;
    if (o.cores > 0) {  // on shared cores: the injection follows the computation's real length
      n.cpu_started = now;
      n.sample_share = Seconds(samples) / std::max(1e-12, Seconds(compute));
      cpu.Add(i, compute, now);
      ScheduleCpu();
      return;
    }
    AfterCompute(i, compute, samples, compute);
  }

  // The step took `compute` (of which `samples` computing the batch, what the real driver times
  // and the injection scales) and ends `left` from now; the injection follows (a sleep: no CPU).
  void AfterCompute(size_t i, Duration compute, Duration samples, Duration left) {
    Node& n = nodes[i];
    const Duration extra = n.injector->AfterStep(samples);
    n.r.compute_s += Seconds(compute + extra);
    n.r.injected_s += Seconds(extra);
    Schedule(EventKind::kComputeDone, now + left + extra, i);
  }

  void ScheduleCpu() {
    if (auto next = cpu.NextCompletion()) {
      Push(Event{*next, 0, EventKind::kCpuDone, 0, cpu.version(), nullptr});
    }
  }

  void CpuDone(uint64_t version) {
    if (version != cpu.version()) return;  // the set of computations changed since
    for (size_t i : cpu.TakeDone(now)) {
      const Duration took = now - nodes[i].cpu_started;
      AfterCompute(i, took, std::chrono::duration_cast<Duration>(took * nodes[i].sample_share),
                   Duration(0));
    }
    ScheduleCpu();
  }

  void ComputeDone(size_t i) {
    Node& n = nodes[i];
    n.computing = false;
    for (; !n.queued.empty(); n.queued.pop_front())
      HandOver(i, n.queued.front().envelope, *n.queued.front().wire);
    RefreshView(i);
    if (n.gossip) n.gossip->Step(n.step_done, now);
    if (n.sync) n.sync->Step(gossip::GradientComputed{n.gradient_iteration, n.partial}, now);
    CheckFinite(i, "its step");
    Process(i);
  }

  void Process(size_t i) {
    Node& n = nodes[i];
    auto take = [&] { return n.gossip ? n.gossip->TakeOutput() : n.sync->TakeOutput(); };
    for (auto actions = take(); !actions.empty(); actions = take()) {
      for (gossip::NodeAction& action : actions) {
        if (auto* send = std::get_if<gossip::SendTo>(&action)) {
          if (send->to >= 1 && send->to <= nodes.size()) {
            Send(i, static_cast<size_t>(send->to - 1), std::move(send->payload),
                 std::move(send->frame));
          }
        } else if (auto* a = std::get_if<gossip::Announce>(&action)) {
          if (o.check_invariants && a->step_clock < n.step_clock) {
            Violation(fmt::format("node {}: its step clock went back from {} to {}", Id(i),
                                  n.step_clock, a->step_clock));
          }
          n.step_clock = a->step_clock;
          n.membership->SetProgress(a->step_clock, a->samples, a->finished);
        } else if (auto* c = std::get_if<gossip::ComputeStep>(&action)) {
          const auto [loss, rows] = workload->Step(i, c->lr);
          n.step_done = gossip::StepComputed{std::isfinite(loss), loss, rows};
          StartCompute(i, rows);
        } else if (auto* g = std::get_if<gossip::ComputeGradient>(&action)) {
          const auto own = n.sync->own();
          const auto partial = workload->Gradient(i, g->iteration, own, g->model);
          n.partial.assign(partial.begin(), partial.end());
          n.gradient_iteration = g->iteration;
          StartCompute(i, static_cast<int64_t>(own.size()));
        } else if (std::holds_alternative<gossip::ResetOptimizer>(action)) {
          workload->ResetOptimizer(i);
        } else if (auto* e = std::get_if<gossip::Evaluate>(&action)) {
          const auto [accuracy, loss] = workload->Evaluate(e->model, e->full);
          n.eval_debt += o.cost_per_eval_row * workload->EvaluationRows(e->full);
          if (n.gossip) n.gossip->Step(gossip::Evaluated{accuracy, loss}, now);
          if (n.sync) n.sync->Step(gossip::Evaluated{accuracy, loss}, now);
        } else if (auto* w = std::get_if<gossip::Wait>(&action)) {
          // The real driver drains for min(until - now, 20 ms), then ticks the machine (a wait
          // already due: its next turn of the loop, taken here as 1 ms, so time moves on).
          n.wake_at = w->until > now ? std::min(w->until, now + std::chrono::milliseconds(20))
                                     : now + std::chrono::milliseconds(1);
          Schedule(EventKind::kWake, n.wake_at, i);
        } else if (auto* f = std::get_if<gossip::Finished>(&action)) {
          n.r.finished = f->reason;
          n.r.finished_s = Seconds(now.time_since_epoch());
        } else if (auto* over = std::get_if<gossip::RunOver>(&action)) {
          if (n.gossip) {
            const gossip::NodeId c = n.gossip->state().finish_collector;
            if (c >= 1 && c <= nodes.size())
              n.r.finish_collector_restarts = nodes[c - 1].r.restarts;
          }
          n.r.ok = over->status.ok();
          n.r.status = over->status.ToString();
          n.r.over_s = Seconds(now.time_since_epoch());
          n.membership->Leave(now);
          CollectMembership(i);
          Stop(i, false);
          return;
        }
      }
    }
  }

  void Sample(const std::function<void(const SimProgress&)>& progress) {
    SimProgress p{
        Seconds(now.time_since_epoch()), Seconds(o.duration), result.events, 0, nodes.size(), 0};
    uint64_t steps = 0;
    for (size_t i = 0; i < nodes.size(); ++i) {
      Node& n = nodes[i];
      SimSample s{p.virtual_s, i, n.step_clock, n.r.samples, 0, -1, n.r.bytes_sent, 0, n.running};
      if (n.membership) s.live_view = n.membership->LiveView().size();
      if (n.gossip) {
        s.loss = n.gossip->state().loss;
        s.accuracy = n.gossip->state().accuracy;
      } else if (n.sync) {
        s.loss = n.sync->state().loss;
        s.accuracy = n.sync->state().accuracy;
      }
      if (o.kind != SimKind::kMembership || i < 64) result.series.push_back(s);
      steps += n.step_clock;
      if (!n.running && n.generation > 0) ++p.nodes_over;
    }
    p.mean_step = steps / nodes.size();
    if (result.full_view_s < 0) {
      size_t running = 0, full = 0;
      for (const Node& n : nodes) running += n.running;
      for (const Node& n : nodes) full += n.running && n.membership->LiveView().size() == running;
      if (running > 0 && full == running) result.full_view_s = p.virtual_s;
    }
    if (progress) progress(p);
  }

  // The run's first events: every node's start (late joiners at their time), the crashes, the
  // partitions and the first progress sample.
  void ScheduleStarts(TimePoint start) {
    std::vector<bool> late(nodes.size(), false);
    for (const SimJoin& j : o.joins) {
      late[j.node] = true;
      ++pending_starts;
      Push(Event{start + j.at + o.start_cost, 0, EventKind::kStart, j.node, 0, nullptr});
    }
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (!late[i]) {
        ++pending_starts;
        Push(Event{start + o.start_cost, 0, EventKind::kStart, i, 0, nullptr});
      }
    }
    for (const SimCrash& c : o.crashes) {
      Push(Event{start + c.at, 0, EventKind::kCrash, c.node, 0, nullptr});
    }
    for (size_t k = 0; k < o.partitions.size(); ++k) {
      Push(Event{start + o.partitions[k].at, 0, EventKind::kPartition, k, 0, nullptr});
    }
    Push(Event{start, 0, EventKind::kSample, 0, 0, nullptr});
  }

  // A node's crash, and its restart if the crash has a down time.
  void Crash(size_t node, TimePoint start) {
    if (!nodes[node].running) return;
    Stop(node, true);
    for (const SimCrash& c : o.crashes) {
      if (c.node == node && c.down.count() > 0 && start + c.at == now) {
        ++pending_starts;
        Push(Event{now + c.down + o.start_cost, 0, EventKind::kRestart, node, 0, nullptr});
      }
    }
  }

  // One event at `now`. A progress sample that finds every node over empties the queue.
  void Handle(const Event& e, TimePoint start,
              const std::function<void(const SimProgress&)>& progress, bool& started) {
    Node* n = e.kind == EventKind::kPartition || e.kind == EventKind::kHeal ||
                      e.kind == EventKind::kSample || e.kind == EventKind::kCpuDone
                  ? nullptr
                  : &nodes[e.node];
    const bool current = n != nullptr && n->running && e.generation == n->generation;
    switch (e.kind) {
      case EventKind::kStart:
        started = true;
        --pending_starts;
        if (!n->running) Start(e.node);
        break;
      case EventKind::kTick:
        if (current) Tick(e.node);
        break;
      case EventKind::kArrive:
        Arrive(e.wire);
        break;
      case EventKind::kDeliver:
        Deliver(e.wire);
        break;
      case EventKind::kComputeDone:
        if (current) ComputeDone(e.node);
        break;
      case EventKind::kWake:
        if (current && e.at == n->wake_at && !n->computing) DriverTurn(e.node);
        break;
      case EventKind::kCpuDone:
        CpuDone(e.generation);
        break;
      case EventKind::kCrash:
        Crash(e.node, start);
        break;
      case EventKind::kRestart:
        --pending_starts;
        ++n->r.restarts;
        Start(e.node);
        break;
      case EventKind::kPartition: {
        const SimPartition& p = o.partitions[e.node];
        net.Partition(p.groups);
        if (p.length.count() > 0) Push(Event{now + p.length, 0, EventKind::kHeal, 0, 0, nullptr});
        break;
      }
      case EventKind::kHeal:
        net.Heal();
        break;
      case EventKind::kSample:
        Sample(progress);
        if (started && AllOver()) {
          result.all_over = true;
          queue = {};
          break;
        }
        Push(Event{now + o.sample_every, 0, EventKind::kSample, 0, 0, nullptr});
        break;
    }
  }

  bool AllOver() const {
    if (o.kind == SimKind::kMembership || pending_starts > 0) return false;
    for (const Node& n : nodes) {
      if (n.running) return false;
    }
    return true;
  }

  void Finalize() {
    std::vector<std::span<const float>> models;
    for (size_t i = 0; i < nodes.size(); ++i) {
      Node& n = nodes[i];
      SimNodeResult& r = n.r;
      r.id = Id(i);
      if (n.membership) r.live_view = n.membership->LiveView().size();
      r.step_clock = n.step_clock;
      if (n.gossip) {
        r.accuracy = n.gossip->state().accuracy;
        r.loss = n.gossip->state().loss;
        r.finish = n.gossip->state().finish;
        r.finish_collector = n.gossip->state().finish_collector;
        r.finish_contributors = n.gossip->state().finish_contributors;
        r.model_digest = ModelDigest(workload->Params(i));
        r.catchups = n.gossip->state().catchups;
        r.rounds = n.gossip->state().rounds;
        r.overlapped_steps = n.gossip->state().overlapped_steps;
        r.optimum_distance = workload->OptimumDistance(workload->Params(i));
        if (r.up) models.push_back(workload->Params(i));
      } else if (n.sync) {
        r.accuracy = n.sync->state().accuracy;
        r.loss = n.sync->state().loss;
        if (n.sync->rank() == 0) {
          r.optimum_distance = workload->OptimumDistance(n.sync->model());
          r.model_digest = ModelDigest(n.sync->model());
          result.iteration_ms = n.sync->state().iteration_ms;
        }
      }
      result.nodes.push_back(r);
    }
    result.consensus_distance = MaxRelativeDistance(models);
  }
};

Simulator::Simulator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Simulator::~Simulator() = default;

StatusOr<std::unique_ptr<Simulator>> Simulator::Create(SimOptions options, Workload* workload) {
  MURMUR_RETURN_IF_ERROR(options.Validate());
  if (options.kind != SimKind::kMembership &&
      (workload == nullptr || workload->nodes() != options.nodes)) {
    return InvalidArgumentError("sim: a training mode needs a workload for its nodes");
  }
  const size_t seeds = std::min<size_t>(options.nodes, 3);
  options.membership.seeds.clear();
  for (size_t i = 0; i < seeds; ++i) options.membership.seeds.push_back(Address(i));
  auto impl = std::make_unique<Impl>(std::move(options), workload);
  if (workload != nullptr) impl->x0 = workload->InitialModel();
  return std::unique_ptr<Simulator>(new Simulator(std::move(impl)));
}

SimResult Simulator::Run(const std::function<void(const SimProgress&)>& progress) {
  Impl& s = *impl_;
  s.on_message = &on_message;
  const auto wall0 = std::chrono::steady_clock::now();
  const TimePoint start{};
  s.ScheduleStarts(start);
  const TimePoint end = start + s.o.duration;
  bool started = false;
  while (!s.queue.empty() && s.queue.top().at <= end) {
    Event e = s.queue.top();
    s.queue.pop();
    s.now = e.at;
    ++s.result.events;
    s.Handle(e, start, progress, started);
  }
  s.result.virtual_s = Seconds(s.now - start);
  if (s.result.all_over) {
    double last = 0;
    for (const Impl::Node& node : s.nodes) last = std::max(last, node.r.over_s);
    s.result.virtual_s = last;
  }
  s.Finalize();
  s.result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return std::move(s.result);
}

}  // namespace murmur::sim
