#pragma once
// The simulator's events (internal to node/sim/; simulator.cc runs them): what happens to which
// node at which virtual instant, and their order. At one instant messages come first
// (simulator.h), then events in the order they were scheduled, so a run is a function of its seed.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/clock.h"
#include "node/sim/wire.h"

namespace murmur::sim {

enum class EventKind : uint8_t {
  kStart,
  kTick,
  kArrive,
  kDeliver,
  kComputeDone,
  kWake,     // the machine asked to be ticked again (a Wait), as the real driver's bounded Drain
  kCpuDone,  // a SharedCpu completion (generation: the SharedCpu version it was computed for)
  kCrash,
  kRestart,
  kPartition,
  kHeal,
  kClockJump,  // node: the index of the SimOptions::clock_jumps entry
  kSample
};

struct Event {
  TimePoint at;
  uint64_t order = 0;
  EventKind kind = EventKind::kTick;
  size_t node = 0;
  uint64_t generation = 0;
  std::shared_ptr<Wire> wire;
  // Lock-step ticks (SimOptions::lockstep_ticks) only: 1 + the node's index, so that the ticks
  // of one instant come after its other events and in node order, as the fake network ticks
  // (a restarted node's ticks were scheduled after the others' but come in its place).
  uint64_t slot = 0;
  // Messages first at one instant (simulator.h), then in the order events were scheduled.
  int Rank() const { return kind == EventKind::kArrive || kind == EventKind::kDeliver ? 0 : 1; }
  bool operator>(const Event& o) const {
    if (at != o.at) return at > o.at;
    if (Rank() != o.Rank()) return Rank() > o.Rank();
    if (slot != o.slot) return slot > o.slot;
    return order > o.order;
  }
};

}  // namespace murmur::sim
