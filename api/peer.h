#pragma once
// murmur as a library: one peer of a gossip training cluster whose model is the caller's own,
// one flat float buffer that the caller's optimizer updates in place. murmur runs everything
// around the step: membership and joining (SWIM over ZeroMQ, CURVE keys), the CHOCO-SGD round
// after each step (compressed updates to the neighbours, the consensus step into the buffer),
// soft synchronization (the caller is held while it leads a neighbour by more than max_lead
// steps; a straggler is not waited for), catch-up, the cluster-wide budget and learning-rate
// schedule, the consensus finish (every member ends on the cluster's average model), straggler
// injection, and the metrics on the admin port.
//
//   auto peer = api::Peer::Start({{"seeds", "10.0.0.1:7070"}, {"epochs", "3"},
//                                 {"epoch_samples", "60000"}, {"plaintext", "true"}}, params);
//   while (true) {
//     StatusOr<api::Turn> turn = (*peer)->Next();   // blocks: joining, soft sync, the finish
//     if (!turn.ok()) ...;                        // why the run failed
//     if (!turn->step) break;                     // the budget is spent: params is the cluster's
//     model if (turn->model_replaced) ...;              // zero the optimizer's momentum
//     ... one local step on params (at turn->lr when the cluster schedules the rate) ...
//     (*peer)->Done(loss, batch_rows);            // the gossip round
//   }
//   StatusOr<api::Progress> result = (*peer)->Finish();
//
// Python: `murmur.Peer` and `murmur.torch.GossipOptimizer` (python/) wrap this class.
// `murmur node --mode gossip` is a user too (cli/node_gossip.cc: murmur's Trainer, its
// checkpoints and report lines through Hooks).
// Thread safety: one thread calls Next, Done and Finish; Progress may be called from any thread.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/memory_use.h"
#include "base/status.h"

namespace murmur::api {

struct PeerOptions;  // peer_options.h: the keys below as types

// What the caller does next.
struct Turn {
  bool step = false;            // compute one local step now, then Done; false: the run is over
  std::optional<double> lr;     // the cluster schedule's rate for it (none: the caller's own)
  bool model_replaced = false;  // the buffer was replaced since the last turn (a snapshot at
                                // joining, a catch-up): momentum kept by the caller is stale
};

// The peer's state (a copy; cheap enough to poll every step).
struct Progress {
  uint64_t id = 0;
  std::string endpoint;        // where peers reach this one
  std::string phase;           // joining, awaiting_model, training, finishing, lingering, over
  std::string activity;        // what it waits for, in words
  double accuracy = -1;        // the latest evaluation (-1: none)
  double own_accuracy = -1;    // its own model before the consensus finish (evaluate(false))
  uint64_t step = 0;           // the step clock (the cluster's steps this node has seen)
  int64_t local_steps = 0;     // steps this peer computed
  int64_t samples = 0;         // samples of those steps
  int64_t budget_samples = 0;  // the cluster's budget (0: none)
  double lr = 0;               // the rate of the latest scheduled step
  int live_members = 0;
  uint64_t rounds = 0;  // gossip rounds run
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  double consensus_distance = 0;  // ‖x − x̄‖ / ‖x̄‖ over the neighbours, latest round
  double wait_s = 0;              // time held by soft synchronization
  std::vector<uint64_t> stragglers;  // peers currently not waited for
  bool finished = false;             // the budget is spent
  std::string end_reason;            // why the run ended ("epochs", "time limit", "stopped", ...)
  std::string finish;                // the consensus finish's verdict for this peer
  uint32_t finish_contributors = 0;  // models in the average it adopted (0: none adopted)
  double elapsed_s = 0;
  double loss = 0;         // a running mean of the steps' losses (NaN: none given yet)
  double perplexity = -1;  // exp(loss) with language_model (-1: not a language model's)
  uint64_t max_lag = 0;  // the step clock's largest lead over a neighbour's copy
  std::string straggle;  // the straggler injection in force (its spec; "" none)
  // Hooks::progress only: this state as one line of `murmur node --report json`
  // (node/driver/node_report.h), what `murmur local` reads.
  std::string report;
};

// Named sections of a caller's own state in the peer's checkpoint (node/train/checkpoint.h's
// file): its optimizer's momentum, its data order. The names of murmur's own sections (kind,
// model, identity, identity_hash, node_id, step, local_steps, samples, written_unix_ms, params,
// public_copy) are refused.
struct SavedState {
  std::map<std::string, std::string> text;
  std::map<std::string, uint64_t> numbers;
  std::map<std::string, std::vector<float>> tensors;
  std::map<std::string, std::vector<int64_t>> indices;
};

// For a program with more state than the buffer (`murmur node --mode gossip` runs murmur's own
// Trainer through these). Every member is optional; the callbacks run on the thread that calls
// Next, Done and Finish.
struct Hooks {
  // The peer is `id` and takes its model from the buffer next: with same_init false, a starting
  // model of this process's own (drawn from its id) may be written into the buffer here.
  std::function<Status(uint64_t id)> started;
  // The buffer was replaced just now (a snapshot at joining, a catch-up, the consensus finish):
  // optimizer state kept across steps no longer fits. Turn::model_replaced says so at the next
  // turn; this says it before anything else (a checkpoint) reads that state.
  std::function<void()> replaced;
  // Polled while Next blocks and between steps: true ends the run as Stop() does (a signal flag).
  std::function<bool()> stop;
  // The state at most every report_interval_ms and after each periodic evaluation, and once more
  // from Finish with `final` (Progress::report filled in).
  std::function<void(const Progress&, bool final)> progress;
  // Checkpoints (keys checkpoint_dir and checkpoint_every, allowed with both of these): the
  // caller's state is saved beside murmur's (the buffer, the clocks, the public copy) every
  // checkpoint_every local steps and when the run ends, and handed back, after the buffer is
  // restored, when a restarted peer resumes from its checkpoint in Start.
  std::function<StatusOr<SavedState>()> save_state;
  std::function<Status(const SavedState&)> restore_state;
  // What the buffer holds (a checkpoint of another model is refused; the saved model names it)
  // and what a resumed checkpoint must have been written by (another run's is refused).
  // Defaults: "caller's model of N values", and the cluster id.
  std::string model;
  std::string run_identity;
  // Read `murmur local --exec`'s environment (MURMUR_PEER_CONFIG, MURMUR_DEVICE, MURMUR_REPORT_FD).
  bool launcher_environment = true;
  // The caller's buffers besides the model (gradient, optimizer state), added by name to the
  // memory table (base/memory_use.h); none when unset.
  std::function<void(MemoryUse&)> memory;
  // Messages carrying a model of another size before Next fails with kFailedPrecondition
  // (0: they are only counted, as every refusal is).
  int dimension_mismatch_limit = 16;
};

// Test accuracy of the buffer's model in [0, 1]: on the whole test set (`full`: the model the run
// ends on, after the consensus finish) or a periodic subset (also the own model while the finish's
// contributions travel); nullopt: not evaluated.
using EvaluateFn = std::function<std::optional<double>(bool full)>;

class Peer {
 public:
  // Starts a peer that trains `params` (memory of `device`; the caller keeps it alive and unmoved
  // until Finish). `config`: key → value text, the keys of `murmur node --mode gossip` that
  // concern the cluster, the gossip and the budget (KnownKeys(); `murmur node --help` describes
  // each), plus
  //   device          where `params` is: cpu (host memory, the default) or cuda:N (memory of
  //                   that GPU: murmur's round runs there, with no host copy of the model per
  //                   step; the caller's kernels and murmur's are ordered on the legacy default
  //                   stream). kFailedPrecondition when this build or machine has no such GPU,
  //                   kInvalidArgument when params is not memory of it, or when `murmur local
  //                   --exec --device` placed the process (MURMUR_DEVICE) elsewhere;
  //   epoch_samples   the training samples of one epoch over the whole cluster (for `epochs`,
  //                   the schedule's warm-up and the local epoch), required with `epochs`;
  //   shard_samples   this process's samples per local epoch (default epoch_samples / members);
  //   same_init       true: every process starts from exactly the same values (no dense
  //                   snapshot to each neighbour at the start); default false;
  //   language_model  true: the loss given to Done is a language model's mean cross-entropy per
  //                   token in nats; reports and murmur local's summary give its perplexity;
  //   join_timeout_s  when no other member has answered this long after the start, Next fails
  //                   with kUnavailable (unreachable seeds, another cluster id or key); 0:
  //                   train on alone, logging it; default 30.
  // `listen` defaults to tcp://127.0.0.1:0 (any free port; Progress().endpoint says which).
  // kInvalidArgument naming the key for an unknown key, a bad value, or a key that does not
  // apply to a caller's model (the model's, the data's and murmur's own training keys).
  // `evaluate` (optional; called on the calling thread inside Next and Done) makes the
  // accuracy part of the progress, the metrics and murmur local's table, and allows the keys
  // eval_every and target_accuracy.
  static StatusOr<std::unique_ptr<Peer>> Start(const std::map<std::string, std::string>& config,
                                               std::span<float> params, EvaluateFn evaluate = {});
  // The same with hooks (above); kInvalidArgument also for checkpoint keys without the state
  // hooks. A checkpoint written for another model, run or node is kFailedPrecondition.
  static StatusOr<std::unique_ptr<Peer>> Start(const std::map<std::string, std::string>& config,
                                               std::span<float> params, EvaluateFn evaluate,
                                               Hooks hooks);
  // The same with the settings already resolved (peer_options.h; the keys above are read
  // through PeerOptionsFromKeys): what `murmur node --mode gossip` calls with its own. Also
  // kInvalidArgument for eval_every or target_accuracy without `evaluate`, and checkpoint_dir
  // without the state hooks.
  static StatusOr<std::unique_ptr<Peer>> Start(const PeerOptions& options, std::span<float> params,
                                               EvaluateFn evaluate, Hooks hooks);
  ~Peer();  // leaves the cluster

  // Blocks until the caller may compute its next step, or the run is over. Stop() ends it early.
  // Fails with kUnavailable when no member answered within join_timeout_s, and with
  // kFailedPrecondition once 16 messages (Hooks::dimension_mismatch_limit) carried a model of
  // another size (the processes train different models).
  StatusOr<Turn> Next();
  // The step Next asked for is done, in place on the buffer: its mean `loss` (not finite: the
  // step is counted as skipped; nullopt: none given, the step counts and the progress's loss
  // is left as it was) over `samples` rows; `compute_s` its time (the straggler injection
  // sleeps after it; negative: measured from Next's return). kInvalidArgument for samples < 0,
  // and for 0 with a budget in epochs (no step would spend it) unless Stop was called.
  Status Done(std::optional<double> loss, int64_t samples, double compute_s = -1);
  // Asks the run to end as a stop ends `murmur node`'s: no consensus finish (the buffer keeps
  // this peer's own model), and the next Next returns step = false.
  // Callable from any thread (a signal handler's flag, another thread).
  void Stop();
  // The caller's own training is over before the budget is (its loop ran out of data or
  // epochs): the next Next returns step = false after the consensus finish, as when the budget
  // is spent (end reason "program"); the others train on, and end with this peer's model in
  // their finish if they reach theirs within finish_wait_s. A pending step may be given back to
  // Done with 0 samples. Callable from any thread.
  void EndTraining();
  // A figure of the caller's own (a validation loss, a learning rate): its latest value goes
  // into every later report line (`"scalars"`), so `murmur local --run-dir`'s series and
  // `murmur report` show it beside murmur's. kInvalidArgument for a name other than 1 to
  // kMaxScalarName letters, digits and _ . / -, a value that is not finite, or a name beyond
  // the first kMaxScalars. Callable from any thread.
  static constexpr size_t kMaxScalarName = 64;
  static constexpr size_t kMaxScalars = 64;
  Status Log(const std::string& name, double value);
  // After Next returned step = false, or failed: the final state, or why the run failed
  // (kFailedPrecondition before that); writes the last checkpoint and leaves the cluster. With
  // save_model, the buffer is written there first; if that fails, the error (named
  // "save_model: ...") instead of the state, after leaving: the model is still in the buffer.
  // (Start refuses a save_model path whose directory is missing or not writable.)
  StatusOr<Progress> Finish();
  Progress GetProgress() const;

  // The keys Start accepts.
  static std::vector<std::string> KnownKeys();

 private:
  struct Impl;
  explicit Peer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace murmur::api
