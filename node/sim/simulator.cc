#include "node/sim/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "base/check.h"
#include "coding/vector_ops.h"
#include "node/sim/simulator_impl.h"

namespace murmur::sim {

void Simulator::Impl::Push(Event e) {
  e.order = order++;
  queue.push(std::move(e));
}

void Simulator::Impl::Schedule(EventKind kind, TimePoint at, size_t node,
                               std::shared_ptr<Wire> wire) {
  Event e{at, 0, kind, node, nodes[node].generation, std::move(wire)};
  if (kind == EventKind::kTick && o.lockstep_ticks) e.slot = node + 1;
  Push(std::move(e));
}

void Simulator::Impl::Start(size_t i) {
  Node& n = nodes[i];
  ++n.generation;
  n.running = true;
  n.r.up = true;
  n.r.id = Id(i);
  n.computing = false;
  n.queued.clear();
  n.step_clock = 0;
  n.sequence = 0;  // a new process numbers its envelopes from the start
  n.refusals.total = 0;
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
  n.membership = std::make_unique<gossip::Membership>(m, Now(i));
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
    auto machine = gossip::GossipNode::Create(g, workload->Params(i), x0, !o.per_node_init, Now(i));
    MURMUR_CHECK(machine.ok()) << machine.status().ToString();
    n.gossip = *std::move(machine);
    n.gossip->set_observer(&n.refusals);
    if (n.straggle.pause_from >= 0) {
      n.gossip->Step(gossip::InjectedPause{n.straggle.pause_from, n.straggle.pause_to}, Now(i));
    }
  } else if (o.kind == SimKind::kSync) {
    gossip::SyncNodeOptions s = o.sync;
    s.self = Id(i);
    auto machine = gossip::SyncNode::Create(*o.plan, s, x0, Now(i));
    MURMUR_CHECK(machine.ok()) << machine.status().ToString();
    n.sync = *std::move(machine);
    n.sync->set_observer(&n.refusals);
  }
  // Independent processes do not tick in lock-step: each at its own phase of the tick.
  const Duration phase =
      o.lockstep_ticks
          ? o.tick
          : Duration(static_cast<int64_t>(rng() % static_cast<uint64_t>(o.tick.count())));
  Schedule(EventKind::kTick, now + phase, i);
}

// The process is gone (a crash, or its run is over and it exited).
void Simulator::Impl::Stop(size_t i, bool crashed) {
  Node& n = nodes[i];
  n.running = false;
  ++n.generation;
  if (crashed) {
    n.r.rejected += Rejected(n);
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

// A node's crash, and its restart if the crash has a down time.
void Simulator::Impl::Crash(size_t node, TimePoint start) {
  if (!nodes[node].running) return;
  Stop(node, true);
  for (const SimCrash& c : o.crashes) {
    if (c.node == node && c.down.count() > 0 && start + c.at == now) {
      ++pending_starts;
      Push(Event{now + c.down + o.start_cost, 0, EventKind::kRestart, node, 0, nullptr});
    }
  }
}

// The run's first events: every node's start (late joiners at their time), the crashes, the
// partitions and the first progress sample.
void Simulator::Impl::ScheduleStarts(TimePoint start) {
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
  for (size_t k = 0; k < o.clock_jumps.size(); ++k) {
    Push(Event{start + o.clock_jumps[k].at, 0, EventKind::kClockJump, k, 0, nullptr});
  }
  Push(Event{start, 0, EventKind::kSample, 0, 0, nullptr});
}

// One event at `now`. A progress sample that finds every node over empties the queue.
void Simulator::Impl::Handle(const Event& e, TimePoint start,
                             const std::function<void(const SimProgress&)>& progress,
                             bool& started) {
  Node* n = e.kind == EventKind::kPartition || e.kind == EventKind::kHeal ||
                    e.kind == EventKind::kClockJump || e.kind == EventKind::kSample ||
                    e.kind == EventKind::kCpuDone
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
    case EventKind::kClockJump: {
      const SimClockJump& j = o.clock_jumps[e.node];
      Node& jumped = nodes[j.node];
      jumped.clock_offset += j.by;
      // The driver's next turn finds every timer the jump passed due.
      if (jumped.running && !jumped.computing && (jumped.gossip || jumped.sync)) DriverTurn(j.node);
      break;
    }
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

bool Simulator::Impl::AllOver() const {
  if (o.kind == SimKind::kMembership || pending_starts > 0) return false;
  for (const Node& n : nodes) {
    if (n.running) return false;
  }
  return true;
}

void Simulator::Impl::Sample(const std::function<void(const SimProgress&)>& progress) {
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

void Simulator::Impl::Finalize() {
  std::vector<std::span<const float>> models;
  for (size_t i = 0; i < nodes.size(); ++i) {
    Node& n = nodes[i];
    SimNodeResult& r = n.r;
    r.id = Id(i);
    if (n.membership) r.live_view = n.membership->LiveView().size();
    r.step_clock = n.step_clock;
    if (n.gossip || n.sync) r.rejected += Rejected(n);
    r.refused_by_reason.insert(n.refusals.by_reason.begin(), n.refusals.by_reason.end());
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
