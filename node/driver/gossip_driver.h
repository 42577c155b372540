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
#include "coding/compressor.h"
#include "gossip/choco.h"
#include "gossip/peer_sampling.h"
#include "gossip/soft_sync.h"
#include "node/train/dataset.h"
#include "node/train/model.h"
#include "node/peer/peer_node.h"
#include "node/peer/straggler.h"
#include "node/train/model_file.h"
#include "node/train/trainer.h"

namespace murmur::node {

class NodeTelemetry;

struct GossipTrainerOptions {
  PeerNodeOptions peer;
  TrainOptions train;                 // batch size, optimizer, shuffling seed
  uint64_t init_seed = 1;             // the cluster's common initial model
  bool per_node_init = false;         // every node draws its own initial model instead
  coding::CompressorOptions compressor;
  double gamma = 0;                   // 0: gossip::DefaultGamma
  gossip::PeerSamplingOptions sampling;
  int local_steps = 1;                // H: local steps per gossip round
  double post_local_epoch = -1;       // from this local epoch on, H = post_local_steps (< 0: never)
  int post_local_steps = 1;
  gossip::SoftSyncOptions soft_sync;
  // Budget: the run ends at the first of these (each 0 = not used; at least one must be set).
  double epochs = 3;                  // passes over the whole training set, all members' samples
  int64_t dataset_rows = 0;           // size of the whole training set
  double target_accuracy = 0;         // test accuracy (of any member's evaluation)
  Duration time_limit{0};
  int64_t eval_every = 0;             // steps between test evaluations (0: only at the end)
  int64_t eval_samples = 2000;        // test rows used by the periodic evaluations
  StragglerOptions straggler;
  int expect_members = 0;             // wait for this many live members before training
  Duration join_wait = std::chrono::seconds(3);  // ... or this long when expect_members is 0
  int64_t join_after_steps = 20;  // a cluster further along than this is joined by a snapshot
  Duration linger = std::chrono::milliseconds(500);  // keep answering after the run ends
  std::string save_model;             // write the final parameters here (raw float32)
  Duration report_interval = std::chrono::milliseconds(100);  // progress calls, at most this often
  // Metrics, health and the run-time straggler control (its injection replaces `straggler`);
  // nullptr: none.
  NodeTelemetry* telemetry = nullptr;

  Status Validate() const;
};

struct GossipProgress {
  gossip::NodeId id = 0;
  int64_t step = 0;          // the step clock (adopted steps included)
  int64_t local_steps = 0;   // steps this node computed
  int64_t samples = 0;       // samples this node trained on
  double local_epoch = 0;
  int64_t cluster_samples = 0;
  int64_t budget_samples = 0;  // 0 when no epoch budget
  double loss = 0;             // running mean of recent batch losses
  double accuracy = -1;        // last evaluation (-1: none yet)
  int64_t accuracy_step = 0;
  double elapsed_s = 0;
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  uint64_t rounds = 0;
  uint64_t max_lag = 0;        // steps the most stale mixing neighbour is behind
  double consensus_distance = 0;
  double gamma = 0;
  double wait_s = 0;           // time spent waiting in the soft-sync gate
  uint64_t catchups = 0;
  uint64_t model_requests = 0;  // dense model snapshots asked for (join excluded)
  uint64_t gamma_halvings = 0;
  std::vector<gossip::NodeId> stragglers;  // peers this node currently does not wait for
  uint64_t stragglers_detected = 0;        // times a peer was marked
  size_t live_members = 0;
  std::map<std::string, uint64_t> verdicts;  // CHOCO message outcomes
  uint64_t rejected_messages = 0;
  uint64_t skipped_steps = 0;  // steps whose loss was not finite (not applied)
  bool joined_by_snapshot = false;
  bool finished = false;
  std::string end_reason;      // "epochs", "accuracy", "time", "peer", "stopped"
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
