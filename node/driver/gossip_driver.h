#pragma once
// The real driver of gossip::GossipNode with murmur's own Trainer (`murmur node --mode gossip`):
// a GossipSession (gossip_session.h: the machine on the calling thread, the peer, injection,
// telemetry, progress) whose steps are Trainer steps, plus what only a Trainer has: the
// cluster's seeded initial model, the test set, checkpoints and the saved model. Every
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
#include "node/driver/gossip_session.h"
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

// Trains until the budget is spent (or `stop` returns true), leaves the cluster, and returns the
// final state with a full test evaluation. `rows` are this node's rows of `train`. `on_progress`
// gets the state at most every report_interval, and after every periodic evaluation.
StatusOr<GossipProgress> RunGossipTrainer(const GossipTrainerOptions& options, Model<float>& model,
                                          const Dataset& train, std::vector<int64_t> rows,
                                          const Dataset* test, const GossipProgressFn& on_progress,
                                          const std::function<bool()>& stop);

}  // namespace murmur::node
