#pragma once
// Synchronous data-parallel training over a tree or a ring (`murmur node --mode
// coded-tree|tree|gc|ring`), driven from the calling thread:
//   coded-tree  CodedReduce: L layers, n children per parent, parents decode after any n - s
//               children (coding/coded_tree.h, gossip/coded_reduce.h);
//   tree        the same tree with s = 0 (waits for every child);
//   gc          flat gradient coding: the root aggregates N = n + ... + n^L workers, any N - s;
//   ring        synchronous ring all-reduce over the same N workers (no root).
// Every mode works on the same N workers and the same data, so their iteration times compare.
//
// Ranks come from the membership view: the run starts once `Processes()` members are alive,
// and rank = position of the node's id among the sorted ids (`murmur local` numbers its nodes
// so rank = node index). The tree is fixed for the run; a node that dies counts as a straggler
// from then on.
//
// An iteration works on `global_batch` positions (0: the whole training set, i.e. full-batch
// gradient descent as in the CodedReduce experiments): position p of iteration t is sample
// perm_e[(t B + p) mod m] with one seeded permutation per pass e (identity for full batch).
// Ranks compute the weighted sum of per-sample gradients over the positions their allocation
// gives them; the root (ring: every rank) divides the decoded sum by B and takes an SGD step.
// A straggler's injected delay (slowdown, exp, exp_slowdown, delay) follows its own
// computation; it then works on the newest model it has, never on stale ones.
// The run ends after `iterations` (or the time limit, or a stop request): the root (ring: the
// first rank to finish) gossips "finished" through membership and every node stops.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "coding/coded_tree.h"
#include "coding/gradient_code.h"
#include "gossip/coded_reduce.h"
#include "node/dataset.h"
#include "node/model.h"
#include "node/peer_node.h"
#include "node/straggler.h"

namespace murmur::node {

class NodeTelemetry;

struct CodedTrainerOptions {
  std::string mode = "coded-tree";  // coded-tree, tree, gc, ring
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
  // Metrics, health and the run-time straggler control (its injection replaces `straggle`);
  // nullptr: none.
  NodeTelemetry* telemetry = nullptr;
};

// The shape a mode runs: its layout and code (empty for ring) and how many processes it needs.
struct CodedPlan {
  std::string mode;
  int64_t workers = 0;    // N
  int64_t processes = 0;  // N + 1 with a root, N for ring
  std::optional<coding::TreeLayout> layout;
  std::optional<coding::GradientCode> code;
};
// kInvalidArgument for an unknown mode, a bad shape, or gc with more than 64 workers;
// kFailedPrecondition for an ill-conditioned code.
StatusOr<CodedPlan> MakeCodedPlan(const std::string& mode, int n, int layers, int s,
                                  uint64_t code_seed);

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
