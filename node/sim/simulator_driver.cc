// One node's turn: what the real driver's loop does with a delivery, a tick, the end of a
// computation and the machine's actions, and the checks the swarm makes after each.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>

#include "base/check.h"
#include "coding/vector_ops.h"
#include "node/peer/peer_node.h"
#include "node/sim/simulator_impl.h"

namespace murmur::sim {

void Simulator::Impl::Send(size_t i, size_t to, gossip::Payload payload,
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
  if (kind != node::MessageKind::kMembership) SendHostile(i, to, e, frame);
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

void Simulator::Impl::SendHostile(size_t i, size_t to, const gossip::Envelope& e,
                                  const std::shared_ptr<const std::vector<std::byte>>& frame) {
  for (const SimAttack& a : o.attacks) {
    if (a.node != i || now < TimePoint{} + a.at) continue;
    gossip::Envelope hostile = e;
    std::shared_ptr<const std::vector<std::byte>> bytes = frame;
    if (a.kind == SimAttackKind::kClock) {
      hostile.step_clock = e.sequence % 2 == 0 ? 1'000'000'000 : ~uint64_t{0};
    } else if (!frame || !(bytes = WithNonFinite(*frame))) {
      continue;  // nothing to put a NaN in
    }
    auto wire = MakeWire(i, to, std::move(hostile), std::move(bytes), o.wire_scale);
    ++result.hostile_messages;
    // Sent first: on its link it arrives before the honest message it copies.
    if (const auto arrival = net.Send(i, to, wire->bytes, now, Duration(0), false)) {
      Push(Event{*arrival, 0, EventKind::kArrive, to, 0, std::move(wire)});
    }
  }
}

void Simulator::Impl::CollectMembership(size_t i) {
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

void Simulator::Impl::Arrive(const std::shared_ptr<Wire>& wire) {
  if (!net.Reachable(wire->from, wire->to)) {
    ++nodes[wire->from].r.lost;
    return;
  }
  Push(Event{net.Receive(wire->to, wire->bytes, now, wire->own_lane), 0, EventKind::kDeliver,
             wire->to, 0, wire});
}

void Simulator::Impl::Deliver(const std::shared_ptr<Wire>& wire) {
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
    n.membership->Step(*envelope, Now(i));
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

void Simulator::Impl::HandOver(size_t i, const gossip::Envelope& e, const Wire& wire) {
  Node& n = nodes[i];
  gossip::Incoming in{
      e.sender_id, e.incarnation, e.step_clock, e.payload, {}, wire.frame ? size_t{1} : 0};
  if (wire.frame) in.frame = *wire.frame;
  const uint64_t rejected_before = Rejected(n);
  const uint64_t digest_before = o.check_invariants ? StateDigest(i) : 0;
  if (n.gossip) n.gossip->Step(in, Now(i));
  if (n.sync) n.sync->Step(in, Now(i));
  if (!o.check_invariants || !n.running) return;
  const std::string_view kind = node::MessageKindName(node::KindOf(e.payload));
  if (Rejected(n) > rejected_before && StateDigest(i) != digest_before) {
    Violation(
        fmt::format("node {}: a {} message from node {} that it refused changed its model "
                    "or a copy it tracks",
                    Id(i), kind, e.sender_id));
  }
  if (Rejected(n) != n.refusals.total) {
    Violation(fmt::format("node {}: {} messages refused, {} of them counted by reason", Id(i),
                          Rejected(n), n.refusals.total));
  }
  if (n.refusals.by_reason.contains("")) {
    Violation(fmt::format("node {}: a refusal without a reason", Id(i)));
  }
  CheckFinite(i, fmt::format("a {} message from node {}", kind, e.sender_id));
}

// The machine's refusals so far.
uint64_t Simulator::Impl::Rejected(const Node& n) {
  if (n.gossip) return n.gossip->state().rejected_messages;
  if (n.sync) return n.sync->state().rejected_messages;
  return 0;
}

// The model node `i` trains (gossip) or holds (sync: the root's and the ring's).
std::span<const float> Simulator::Impl::ModelOf(size_t i) {
  Node& n = nodes[i];
  if (n.gossip) return workload->Params(i);
  if (n.sync) return n.sync->model();
  return {};
}

uint64_t Simulator::Impl::StateDigest(size_t i) {
  uint64_t h = ModelDigest(ModelOf(i));
  const gossip::ChocoGossip* choco = nodes[i].gossip ? nodes[i].gossip->choco() : nullptr;
  if (choco == nullptr) return h;
  h = TraceMix(h, ModelDigest(choco->public_copy()));
  for (size_t j = 0; j < nodes.size(); ++j) {
    h = TraceMix(h, choco->CopyVersion(Id(j)));
    h = TraceMix(h, ModelDigest(choco->CopyOf(Id(j))));
  }
  return h;
}

void Simulator::Impl::Violation(std::string what) {
  ++result.violation_count;
  if (result.violations.size() < SimResult::kMaxViolations) {
    result.violations.push_back(
        fmt::format("t={:.6f}s {}", Seconds(now.time_since_epoch()), std::move(what)));
  }
}

void Simulator::Impl::CheckFinite(size_t i, std::string_view after) {
  if (!o.check_invariants || !nodes[i].running) return;
  if (const auto k = coding::FirstNonFinite(ModelOf(i))) {
    Violation(
        fmt::format("node {}: value {} of its model is not finite after {}", Id(i), *k, after));
  }
}

void Simulator::Impl::Tick(size_t i) {
  Node& n = nodes[i];
  n.membership->Tick(Now(i));
  CollectMembership(i);
  if ((n.gossip || n.sync) && !n.computing) DriverTurn(i);
  if (n.running) Schedule(EventKind::kTick, now + o.tick, i);
}

// The membership view, every view_interval (the drivers' 20 ms), checked between computations.
void Simulator::Impl::RefreshView(size_t i) {
  Node& n = nodes[i];
  if (now < n.next_view) return;
  gossip::MemberView view{n.membership->Members()};
  if (n.gossip) n.gossip->Step(view, Now(i));
  if (n.sync) n.sync->Step(view, Now(i));
  n.next_view = now + o.view_interval;
}

// What the real driver's loop does between computations: the membership view when
// view_interval passed, the machine's Tick, its outputs.
void Simulator::Impl::DriverTurn(size_t i) {
  Node& n = nodes[i];
  RefreshView(i);
  if (n.gossip) n.gossip->Tick(Now(i));
  if (n.sync) n.sync->Tick(Now(i));
  Process(i);
}

void Simulator::Impl::StartCompute(size_t i, int64_t rows) {
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
void Simulator::Impl::AfterCompute(size_t i, Duration compute, Duration samples, Duration left) {
  Node& n = nodes[i];
  const Duration extra = n.injector->AfterStep(samples);
  n.r.compute_s += Seconds(compute + extra);
  n.r.injected_s += Seconds(extra);
  Schedule(EventKind::kComputeDone, now + left + extra, i);
}

void Simulator::Impl::ScheduleCpu() {
  if (auto next = cpu.NextCompletion()) {
    Push(Event{*next, 0, EventKind::kCpuDone, 0, cpu.version(), nullptr});
  }
}

void Simulator::Impl::CpuDone(uint64_t version) {
  if (version != cpu.version()) return;  // the set of computations changed since
  for (size_t i : cpu.TakeDone(now)) {
    const Duration took = now - nodes[i].cpu_started;
    AfterCompute(i, took, std::chrono::duration_cast<Duration>(took * nodes[i].sample_share),
                 Duration(0));
  }
  ScheduleCpu();
}

void Simulator::Impl::ComputeDone(size_t i) {
  Node& n = nodes[i];
  n.computing = false;
  for (; !n.queued.empty(); n.queued.pop_front())
    HandOver(i, n.queued.front().envelope, *n.queued.front().wire);
  RefreshView(i);
  if (n.gossip) n.gossip->Step(n.step_done, Now(i));
  if (n.sync) n.sync->Step(gossip::GradientComputed{n.gradient_iteration, n.partial}, Now(i));
  CheckFinite(i, "its step");
  Process(i);
}

void Simulator::Impl::Process(size_t i) {
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
        if (n.gossip) n.gossip->Step(gossip::Evaluated{accuracy, loss}, Now(i));
        if (n.sync) n.sync->Step(gossip::Evaluated{accuracy, loss}, Now(i));
      } else if (auto* w = std::get_if<gossip::Wait>(&action)) {
        // The real driver drains for min(until - now, 20 ms), then ticks the machine (a wait
        // already due: its next turn of the loop, taken here as 1 ms, so time moves on).
        // `until` is on the node's clock (Now(i)); the wake is at the run's.
        const TimePoint local = Now(i);
        n.wake_at = w->until > local
                        ? now + std::min<Duration>(w->until - local, std::chrono::milliseconds(20))
                        : now + std::chrono::milliseconds(1);
        Schedule(EventKind::kWake, n.wake_at, i);
      } else if (auto* f = std::get_if<gossip::Finished>(&action)) {
        n.r.finished = f->reason;
        n.r.finished_s = Seconds(now.time_since_epoch());
      } else if (auto* over = std::get_if<gossip::RunOver>(&action)) {
        if (n.gossip) {
          const gossip::NodeId c = n.gossip->state().finish_collector;
          if (c >= 1 && c <= nodes.size()) n.r.finish_collector_restarts = nodes[c - 1].r.restarts;
        }
        n.r.ok = over->status.ok();
        n.r.status = over->status.ToString();
        n.r.over_s = Seconds(now.time_since_epoch());
        n.membership->Leave(Now(i));
        CollectMembership(i);
        Stop(i, false);
        return;
      }
    }
  }
}

}  // namespace murmur::sim
