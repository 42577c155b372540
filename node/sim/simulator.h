#pragma once
// `murmur sim`'s engine: a discrete-event simulation that drives the real sans-IO
// machines of every mode — gossip::Membership, and gossip::GossipNode or gossip::SyncNode — in
// virtual time, with no threads and no sockets. Every message is encoded by the real wire code
// (proto::EncodeEnvelope) and decoded by it at the receiver (proto::DecodeEnvelope with the
// node's limits), so the bytes on a simulated link are the bytes the real node sends
// (PeerNode::Emit: the header frame plus the tensor frame; `wire_scale` stretches tensor frames
// for a model dimension larger than the one computed).
//
// What the simulator models, and how it follows the real drivers (node/driver/):
//   network   network.h: per-NIC uplink and downlink serialization, latency, loss, partitions.
//   compute   a step takes cost_per_step + rows × cost_per_sample (on `cores` shared cores: longer
//   while more
//             nodes compute than there are cores), then the node's straggler injection
//             (node/peer/straggler.h: slowdown, delay, exp, exp_slowdown; `pause` is the
//             machine's InjectedPause; send_delay and drop apply to its outgoing messages, as
//             PeerNode does). What a step does to the model is the Workload's (workload.h).
//   drivers   one training thread per node: messages for the machine that arrive while it
//             computes wait and are handed over, in order, before the completion (as Drain does);
//             membership messages are handled on arrival (PeerNode's own thread); the machine
//             gets the membership view every `view_interval`, ticks every `tick`, after every
//             message handed over while it is idle (Drain, then Tick), and when a Wait it emitted
//             runs out (the driver's Drain is bounded by it, at most 20 ms).
//   faults    crashes (a node's state is gone; it may restart `down` later with a new
//             incarnation and joins again), late joins, partitions.
// Deterministic: one seed gives one run, bit for bit (a trace hash over every message proves it).
// At one instant, messages are delivered before anything else happens (ticks, computations'
// ends, faults), as the unit tests' fake network does (which then ticks its nodes in node order,
// as the simulator does with `lockstep_ticks`): with `lockstep_ticks` and an ideal link
// of a fixed latency, a membership run sends the very messages, at the very times, that
// tests/testing/sim_cluster.h does for the same seed (tests/node/sim/trace_test.cc).
// Thread safety: none.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "gossip/gossip_node.h"
#include "gossip/membership.h"
#include "gossip/sync_node.h"
#include "node/peer/straggler.h"
#include "node/sim/cpu.h"
#include "node/sim/network.h"
#include "node/sim/workload.h"

namespace murmur::sim {

// Node `node` goes down `at` into the run and, when `down` > 0, starts again that much later.
struct SimCrash {
  size_t node = 0;
  Duration at{0};
  Duration down{0};
};
// Node `node` starts `at` into the run instead of at 0.
struct SimJoin {
  size_t node = 0;
  Duration at{0};
};
// Nodes of one group cannot reach the others' from `at` until `at + length` (0: for good).
struct SimPartition {
  std::vector<int> groups;  // one entry per node
  Duration at{0};
  Duration length{0};
};

// From `at` into the run on, node `node`'s clock reads `by` later than the run's: a forward jump
// of its monotonic clock, as when a paused VM or a suspended machine resumes. Every timer of its
// machines that the jump passes is due at once (its peers look silent to it for `by`); the
// offset stays with the node across restarts (it is the machine's clock, not the process's).
struct SimClockJump {
  size_t node = 0;
  Duration at{0};
  Duration by{0};
};

// From `at` into the run on, node `node` is an insider gone hostile (it holds valid keys, so its
// messages pass the transport): before each training message it sends, it sends a hostile copy
// to the same receiver, which the receiver must refuse without a change to its state.
//   kClock      the copy's envelope claims a step clock of 10^9, or 2^64 − 1 (alternately)
//   kNonFinite  the copy's tensor frame holds a NaN (the first value of a dense fp32 frame, or
//               the scale of a sign or levels frame; its checksum rewritten so that it passes)
enum class SimAttackKind : uint8_t { kClock, kNonFinite };
struct SimAttack {
  size_t node = 0;
  Duration at{0};
  SimAttackKind kind = SimAttackKind::kClock;
};

enum class SimKind : uint8_t { kMembership, kGossip, kSync };

struct SimOptions {
  SimKind kind = SimKind::kGossip;
  size_t nodes = 4;                              // processes (a sync plan's `processes`)
  Duration duration = std::chrono::seconds(60);  // virtual time; the run stops there at the latest
  LinkSpec link;
  gossip::MembershipOptions membership;  // timing; ids, addresses, seeds are filled per node
  Duration tick = std::chrono::milliseconds(5);
  // Every node ticks at the same instants, the first one tick after its start (the unit tests'
  // fake network, tests/testing/sim_cluster.h); false: each at its own random phase of the tick,
  // as independent processes do.
  bool lockstep_ticks = false;
  Duration view_interval = std::chrono::milliseconds(20);
  Duration cost_per_sample = std::chrono::microseconds(10);
  // CPU time a step costs beyond its samples (the real node's mixing, compression, applying
  // arrivals); not scaled by a straggler's slowdown, which the real driver applies to the batch.
  Duration cost_per_step{0};
  // CPU time per test row of an evaluation (Workload::EvaluationRows). The real driver evaluates
  // on the training thread between steps: the time is added to the node's next computation
  // (the result itself is handed to the machine at once).
  Duration cost_per_eval_row{0};
  // Time from a process's launch to its first tick (exec, data, sockets): every start of a node
  // (the run's, a late join's, a restart's) begins this much after it is launched.
  Duration start_cost{0};
  // The cores the nodes' computations share (cpu.h: processor sharing; an injected delay frees
  // its core); 0: every node has its own, as on a machine per node.
  int cores = 0;
  std::map<size_t, node::StragglerOptions> straggle;
  std::vector<SimCrash> crashes;
  std::vector<SimJoin> joins;
  std::vector<SimPartition> partitions;
  std::vector<SimClockJump> clock_jumps;
  std::vector<SimAttack> attacks;
  double wire_scale = 1;  // tensor frame bytes on the links × this (virtual dimension / real)
  gossip::GossipNodeOptions gossip;  // self, incarnation, shard_rows are filled per node
  bool per_node_init = false;        // gossip: every node starts from its own model (init)
  std::optional<gossip::SyncPlan> plan;
  gossip::SyncNodeOptions sync;  // self is filled per node
  uint64_t seed = 1;
  // Check the invariants every message, step and announcement must keep (SimResult::violations):
  // a message a machine refused changed nothing of its model nor (gossip) of CHOCO's public and
  // tracked copies; every refusal is counted under a non-empty reason; a step clock never goes
  // back within one process; every model stays finite. O(model × nodes) per event.
  bool check_invariants = false;
  Duration sample_every = std::chrono::milliseconds(100);  // the time series

  Status Validate() const;
};

// A node's run, at the end.
struct SimNodeResult {
  gossip::NodeId id = 0;
  bool up = true;
  uint64_t restarts = 0;
  uint64_t steps = 0;  // computations (local steps, or partial gradients)
  int64_t samples = 0;
  double compute_s = 0;  // virtual seconds computing, injected delay included
  double injected_s = 0;
  uint64_t messages_sent = 0, bytes_sent = 0;
  uint64_t messages_received = 0, bytes_received = 0;
  uint64_t lost = 0;      // its messages lost on the way (loss, partition, a down receiver)
  uint64_t rejected = 0;  // messages it refused (decode, membership or machine checks)
  // Its machines' refusals by reason, over all its processes (the reasons its metrics count).
  std::map<std::string, uint64_t> refused_by_reason;
  std::string finished;   // the end reason ("" when it never finished)
  double finished_s = -1, over_s = -1;
  bool ok = true;  // RunOver's status
  std::string status;
  double accuracy = -1, loss = 0;
  std::optional<double> optimum_distance;
  std::string finish;  // gossip: the consensus finish's outcome
  gossip::NodeId finish_collector = 0;  // gossip: whose average it adopted (0: none)
  uint32_t finish_contributors = 0;
  // The collector's restarts when this node's run ended: which of its processes' averages it
  // adopted (a restarted collector runs a finish of its own).
  uint64_t finish_collector_restarts = 0;
  uint64_t model_digest = 0;  // gossip: a hash of its model's bits at the end (sync: rank 0's)
  uint64_t catchups = 0;  // gossip: models adopted from a neighbour after falling behind
  uint64_t rounds = 0;    // gossip: CHOCO rounds
  uint64_t overlapped_steps = 0;  // gossip: steps taken while an outer round was in flight
  uint64_t step_clock = 0;
  size_t live_view = 0;  // members it holds alive or suspect at the end
};

// One row of the time series.
struct SimSample {
  double t_s = 0;
  size_t node = 0;
  uint64_t step = 0;
  int64_t samples = 0;
  double loss = 0;
  double accuracy = -1;
  uint64_t bytes_sent = 0;
  size_t live_view = 0;
  bool up = true;
};

// A membership event seen by one node (a member alive, suspect, dead, left, ...).
struct SimMemberEvent {
  double t_s = 0;
  size_t observer = 0;
  gossip::MemberEvent event;
};

struct SimResult {
  double virtual_s = 0;
  double wall_s = 0;
  uint64_t events = 0;
  uint64_t messages = 0, bytes = 0;
  uint64_t hostile_messages = 0;  // sent by attackers (SimAttack), beyond `messages`
  std::map<std::string, uint64_t> bytes_by_kind;  // membership, update, snapshot, coded, finish
  std::map<std::string, uint64_t> messages_by_kind;
  uint64_t trace_hash = 0;  // over every message sent: time, ends, bytes (determinism)
  bool all_over = false;    // every node's run ended (training modes)
  std::vector<SimNodeResult> nodes;
  std::vector<SimSample> series;
  std::vector<SimMemberEvent> member_events;
  std::vector<double> iteration_ms;  // sync: the root's (ring: rank 0's) iteration times
  // The first sample at which every running node's live view held exactly the running nodes
  // (-1: never).
  double full_view_s = -1;
  // Training modes: when the first computation began (before it the nodes were joining; a
  // synchronous mode waits for every rank). -1: never.
  double first_step_s = -1;
  // Gossip: max over nodes of ‖x_i − x̄‖ / ‖x̄‖ at the end (0 when one node).
  double consensus_distance = 0;
  // SimOptions::check_invariants: what broke, in order (at most kMaxViolations; `violation_count`
  // counts them all).
  static constexpr size_t kMaxViolations = 20;
  std::vector<std::string> violations;
  uint64_t violation_count = 0;
};

struct SimProgress {
  double virtual_s = 0;
  double duration_s = 0;
  uint64_t events = 0;
  size_t nodes_over = 0;
  size_t nodes = 0;
  uint64_t mean_step = 0;
};

// One message sent, for tests that compare traces.
struct SimMessage {
  double t_s = 0;
  size_t from = 0, to = 0;
  uint64_t bytes = 0;
  std::string kind;    // the payload's type
  std::string header;  // the envelope as proto::EncodeEnvelope wrote it (the exact header bytes)
};

class Simulator {
 public:
  // `workload` must outlive the simulator; it is unused for membership runs (nullptr allowed).
  static StatusOr<std::unique_ptr<Simulator>> Create(SimOptions options, Workload* workload);
  ~Simulator();

  // Runs to the end: every node's run over (training modes) or `duration`. `progress` gets the
  // state every `sample_every` of virtual time.
  SimResult Run(const std::function<void(const SimProgress&)>& progress = nullptr);

  std::function<void(const SimMessage&)> on_message;

  static std::string Address(size_t i) { return "sim://" + std::to_string(i); }
  static gossip::NodeId Id(size_t i) { return i + 1; }

 private:
  struct Impl;
  explicit Simulator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace murmur::sim
