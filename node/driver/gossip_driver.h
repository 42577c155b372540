#pragma once
// The real driver of gossip::GossipNode (`murmur node --mode gossip`): it runs the machine on the
// calling thread (the training thread) with a PeerNode for membership and messages (its own
// thread and the transport's I/O thread send while the next step computes), a Trainer for the
// ComputeStep outputs, the straggler injection, telemetry and the progress callbacks. Every
// decision — join, catch-up, the soft-sync gate, rounds, the budget, the end — is the machine's
// (gossip/gossip_node.h); this file only moves bytes and time.
// Thread safety: RunGossipTrainer blocks the calling thread, which also calls `stop` and
// `on_progress`.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "gossip/gossip_node.h"
#include "node/driver/gossip_checkpoint.h"
#include "node/observe/telemetry.h"
#include "node/peer/peer_node.h"
#include "node/peer/straggler.h"
#include "node/train/dataset.h"
#include "node/train/model.h"
#include "node/train/trainer.h"

namespace murmur::node {

class NodeTelemetry;

struct GossipTrainerOptions {
  PeerNodeOptions peer;
  TrainOptions train;                 // batch size, optimizer, shuffling seed
  uint64_t init_seed = 1;             // the cluster's common initial model
  bool per_node_init = false;         // every node draws its own initial model instead
  // The machine's own keys (gossip/gossip_node.h: compression, topology, H, soft sync, the
  // target accuracy and time limit, evaluation, joining, linger); the driver fills in the node's
  // id, incarnation, shard size and the budget in samples.
  gossip::GossipNodeOptions node;
  // Budget: the run ends at the first of epochs, node.target_accuracy, node.time_limit (each 0 =
  // not used; at least one must be set).
  double epochs = 3;                  // passes over the whole training set, all members' samples
  int64_t dataset_rows = 0;           // size of the whole training set
  int64_t eval_samples = 2000;        // test rows used by the periodic evaluations
  StragglerOptions straggler;
  std::string save_model;             // write the final parameters here (checkpoint.h, kind model)
  // Periodic checkpoints and the resume from one (gossip_checkpoint.h); dir empty: none. The
  // driver fills in model and node_id.
  GossipCheckpointOptions checkpoint;
  Duration report_interval = std::chrono::milliseconds(100);  // progress calls, at most this often
  // Metrics, health and the run-time straggler control (its injection replaces `straggler`);
  // nullptr: none.
  NodeTelemetry* telemetry = nullptr;

  Status Validate() const;
};

// The machine's state (gossip::GossipNodeState) and what the driver adds.
struct GossipProgress : gossip::GossipNodeState {
  gossip::NodeId id = 0;
  int64_t budget_samples = 0;  // 0 when no epoch budget
  double elapsed_s = 0;
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  double wait_s = 0;           // time spent waiting in the soft-sync gate
  std::vector<gossip::NodeId> stragglers;  // peers this node currently does not wait for
  uint64_t stragglers_detected = 0;        // times a peer was marked
  bool finished = false;
  std::string activity;                // GossipNode::Activity(): "joining: 2 of 4 members", ...
  std::string device;                  // where it trains: "cpu", "cuda:0"
  uint64_t device_memory_bytes = 0;    // GPU memory held (kernels::GetDeviceMemoryStats)
  uint64_t host_device_bytes = 0;      // copied between host and GPU since the start
  // Where the training thread's time went, summed over the steps this node computed: the
  // training phase, from its first step's start to its last step's end (joining, the wait for a
  // model and the consensus finish are not in it). The phases add up to its wall time.
  StepTimes phases;
  int64_t phase_samples = 0;       // samples of those steps
  double phase_thread_cpu_s = 0;   // CPU time of the training thread over the same span
  double phase_process_cpu_s = 0;  // ... of the whole process (its I/O threads, the admin port)
};

using GossipProgressFn = std::function<void(const GossipProgress&)>;

// Trains until the budget is spent (or `stop` returns true), leaves the cluster, and returns the
// final state with a full test evaluation. `rows` are this node's rows of `train`. `on_progress`
// gets the state at most every report_interval, and after every periodic evaluation.
StatusOr<GossipProgress> RunGossipTrainer(const GossipTrainerOptions& options, Model<float>& model,
                                          const Dataset& train, std::vector<int64_t> rows,
                                          const Dataset* test, const GossipProgressFn& on_progress,
                                          const std::function<bool()>& stop);

}  // namespace murmur::node
