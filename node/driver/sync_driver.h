#pragma once
// The real driver of gossip::SyncNode (`murmur node --mode coded-tree|tree|gc|ring|ps`):
//   coded-tree  CodedReduce: L layers, n children per parent, parents decode after any n - s
//               children (coding/coded_tree.h, gossip/coded_reduce.h);
//   tree        the same tree with s = 0 (waits for every child);
//   gc          flat gradient coding: the root aggregates N = n + ... + n^L workers, any N - s;
//   ring        synchronous ring all-reduce over the same N workers (no root);
//   ps          K parameter servers and the same N workers (gossip/param_server.h).
// Every mode works on the same N workers and the same data, so their iteration times compare.
// Rank assembly, the aggregation, the SGD step and the end of the run are the machine's
// (gossip/sync_node.h); this driver moves messages between it and a PeerNode and answers its
// ComputeGradient and Evaluate outputs on the calling thread.
//
// An iteration works on `global_batch` positions (0: the whole training set, i.e. full-batch
// gradient descent as in the CodedReduce experiments): position p of iteration t is sample
// perm_e[(t B + p) mod m] with one seeded permutation per pass e (identity for full batch).
// Ranks compute the weighted sum of per-sample gradients over the positions their allocation
// gives them. A straggler's injected delay (slowdown, exp, exp_slowdown, delay) follows its own
// computation; it then works on the newest model it has, never on stale ones.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "gossip/coded_reduce.h"
#include "gossip/mode.h"
#include "gossip/sync_node.h"
#include "node/train/trainer.h"
#include "node/train/dataset.h"
#include "node/train/model.h"
#include "node/peer/peer_node.h"
#include "node/peer/straggler.h"

namespace murmur::node {

class NodeTelemetry;

struct CodedTrainerOptions {
  gossip::Mode mode = gossip::Mode::kCodedTree;  // a synchronous mode
  int n = 3;                        // children per parent
  int layers = 2;                   // L
  int s = 1;                        // stragglers tolerated per parent (coded-tree, gc)
  uint64_t code_seed = 1;           // cyclic codes: the draw of H
  gossip::PsOptions ps;             // mode ps: the servers' shape
  int64_t global_batch = 0;         // positions per iteration; 0: the whole training set
  uint64_t seed = 1;                // initial model and mini-batch order
  // The machine's own keys (gossip/sync_node.h: iterations, time limit, SGD, evaluation,
  // report_after, join_timeout, settle, linger); the driver fills in the node's id and the batch.
  gossip::SyncNodeOptions node;
  // The learning-rate schedule's keys (TrainOptions: lr_shape, warmup_epochs,
  // lr_reference_batch); node.lr is its base rate. The driver makes the schedule over
  // iterations × global batch samples.
  TrainOptions schedule;
  StragglerOptions straggle;
  // Metrics, health and the run-time straggler control (its injection replaces `straggle`);
  // nullptr: none.
  NodeTelemetry* telemetry = nullptr;
};

// The machine's state (gossip::SyncNodeState) and what the driver adds.
struct CodedProgress : gossip::SyncNodeState {
  gossip::Mode mode = gossip::Mode::kCodedTree;
  int64_t rank = -1;
  std::string role;  // root, parent, leaf, ring
  int64_t own_samples = 0;       // weighted samples this rank computes per iteration
  double compute_s = 0;          // this rank's own gradient computation, total
  double injected_s = 0;         // injected straggler delay, total
  gossip::CodedStats stats;
  double elapsed_s = 0;
  uint64_t bytes_sent = 0, bytes_received = 0;  // this node's transport, every kind of message
  bool final = false;
};

// The learning-rate schedule of a run over `train_rows` rows: iterations × global batch samples
// (the whole set when global_batch is 0). kInvalidArgument when the options cannot make one.
StatusOr<LrSchedule> CodedSchedule(const CodedTrainerOptions& options, int64_t train_rows);

// Blocks until the run ends. `train` and `test` are the whole data sets (every node derives its
// part from its rank). `on_progress` is called about every `report_interval` and once at the
// end with final = true. kDeadlineExceeded when the cluster does not assemble in time.
StatusOr<CodedProgress> RunCodedTrainer(const CodedTrainerOptions& options, PeerNode& peer,
                                        Model<float>& model, const Dataset& train,
                                        const Dataset* test, Duration report_interval,
                                        const std::function<void(const CodedProgress&)>& on_progress,
                                        const std::function<bool()>& stop);

// Mean and 95th percentile of iteration times (0 for none).
std::pair<double, double> MeanAndP95(std::vector<double> values);

}  // namespace murmur::node
