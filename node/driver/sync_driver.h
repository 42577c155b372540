#pragma once
// The real driver of gossip::SyncNode (`murmur node --mode coded-tree|tree|gc|ring`):
//   coded-tree  CodedReduce: L layers, n children per parent, parents decode after any n - s
//               children (coding/coded_tree.h, gossip/coded_reduce.h);
//   tree        the same tree with s = 0 (waits for every child);
//   gc          flat gradient coding: the root aggregates N = n + ... + n^L workers, any N - s;
//   ring        synchronous ring all-reduce over the same N workers (no root).
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
  int64_t iterations = 100;
  Duration time_limit{0};           // 0: none
  int64_t global_batch = 0;         // positions per iteration; 0: the whole training set
  double lr = 0.1;
  double momentum = 0;
  double weight_decay = 0;
  uint64_t seed = 1;                // initial model and mini-batch order
  StragglerOptions straggle;
  Duration report_after = std::chrono::seconds(5);  // a parent short of children says so
  int64_t eval_every = 10;          // root / rank 0: evaluate every this many iterations (0: end)
  Duration join_timeout = std::chrono::seconds(30);
  Duration settle = std::chrono::milliseconds(200);  // a full view must hold this long
  // Metrics, health and the run-time straggler control (its injection replaces `straggle`);
  // nullptr: none.
  NodeTelemetry* telemetry = nullptr;
};

struct CodedProgress {
  std::string mode;
  int64_t rank = -1;
  std::string role;  // root, parent, leaf, ring
  uint64_t iteration = 0;        // iterations completed (root / ring: model updates)
  int64_t own_samples = 0;       // weighted samples this rank computes per iteration
  double loss = 0;               // root / rank 0: training loss at the latest evaluation
  double accuracy = 0;           // test accuracy (NaN for regression or before any)
  uint64_t evaluated_at = 0;     // iteration of that evaluation
  double compute_s = 0;          // this rank's own gradient computation, total
  double injected_s = 0;         // injected straggler delay, total
  std::vector<double> iteration_ms;  // root / ring: wall time of each iteration
  gossip::CodedStats stats;
  uint64_t rejected_messages = 0;  // malformed, non-finite, unknown sender, other modes
  uint64_t refused_views = 0;      // views that changed while the ranks were assembled
  double elapsed_s = 0;
  bool final = false;
};

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
