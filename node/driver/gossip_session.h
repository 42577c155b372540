#pragma once
// One gossip node's real driver loop, for any model that can take a step: it runs
// gossip::GossipNode on the calling thread with a PeerNode for membership and messages (its own
// thread and the transport's I/O thread send while the caller computes), the straggler
// injection, telemetry and progress. The caller owns the model and computes each step; the
// session says when (Next), mixes into the model between steps, and may replace it.
//
//   GossipSession session(options, work, telemetry, on_progress, stop);
//   MURMUR_RETURN_IF_ERROR(session.Start());
//   while (session.Next()) {            // joins, waits (soft sync), applies arrivals
//     ... one local step on work.params() at session.lr() (the caller's own rate when unset) ...
//     session.Computed(loss, rows, compute_time);   // the CHOCO round, the budget
//   }
//   StatusOr<GossipProgress> result = session.End();  // then session.Leave()
//
// User: the library (api/peer.h: a caller's own model, the Python binding, and `murmur node
// --mode gossip` with murmur's Trainer).
// Thread safety: one thread calls every method; `stop` and `on_progress` run on it.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/lr_schedule.h"
#include "base/memory_use.h"
#include "base/status.h"
#include "gossip/gossip_node.h"
#include "kernels/device.h"
#include "node/driver/gossip_peer_options.h"
#include "node/observe/telemetry.h"
#include "node/peer/peer_node.h"
#include "node/peer/straggler.h"

namespace murmur::node {

class NodeTelemetry;

// What the session's model is and what it can do besides a step. Called on the session's
// thread, between steps.
class GossipWork {
 public:
  virtual ~GossipWork() = default;
  // The model in the memory of device(); the caller's steps update it in place, and the machine
  // mixes into it and may replace it (a snapshot at joining, a catch-up, the consensus finish).
  virtual std::span<float> params() = 0;
  virtual const kernels::Device& device() const = 0;
  // The model was replaced: optimizer state (momentum) kept across steps no longer fits.
  virtual void ResetOptimizerState() = 0;
  // Test accuracy of params() on the whole test set (`full`) or the periodic subset; nullopt
  // when there is no test set.
  virtual std::optional<double> Evaluate(bool full) = 0;
  // The peer started as `id`, and the machine is made next from params(): a starting model of
  // this node's own (drawn per node) is set here.
  virtual Status Started(gossip::NodeId id) {
    (void)id;
    return OkStatus();
  }
  // The buffers it holds besides params() (gradient, optimizer state, the shard, activations),
  // by name (base/memory_use.h), for the memory table; none by default.
  virtual void AddMemory(MemoryUse& memory) const { (void)memory; }
};

// The machine's state (gossip::GossipNodeState) and what the driver adds.
struct GossipProgress : gossip::GossipNodeState {
  gossip::NodeId id = 0;
  int64_t budget_samples = 0;  // 0 when no epoch budget
  double elapsed_s = 0;
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  double wait_s = 0;                       // time spent waiting in the soft-sync gate
  std::vector<gossip::NodeId> stragglers;  // peers this node currently does not wait for
  uint64_t stragglers_detected = 0;        // times a peer was marked
  double perplexity = -1;                  // exp(loss) for a language model's loss (-1: none)
  // A library program's own figures (api::Peer::Log): the latest value of each name, at most
  // kMaxScalars names of at most kMaxScalarName bytes.
  static constexpr size_t kMaxScalars = 64;
  static constexpr size_t kMaxScalarName = 64;
  std::map<std::string, double> scalars;
  bool finished = false;
  // Where the node is (what the parent tells a joining node by); `activity` says it in words.
  gossip::GossipNode::Phase phase = gossip::GossipNode::Phase::kJoining;
  std::string activity;              // GossipNode::Activity(): "joining: 2 of 4 members", ...
  std::string device;                // where it trains: "cpu", "cuda:0"
  uint64_t device_memory_bytes = 0;  // GPU memory held (kernels::GetDeviceMemoryStats)
  uint64_t host_device_bytes = 0;    // copied between host and GPU since the start
  // What the node held by buffer (the machine's, the work's, the inbox and the training queue)
  // when their total was largest, sampled at each report and at the finish's outcome; the
  // process's resident set at that sample, and its high-water mark over the run.
  MemoryUse memory;
  uint64_t memory_resident_bytes = 0;
  uint64_t peak_resident_bytes = 0;
  // Where the training thread's time went, summed over the steps this node computed: the
  // training phase, from its first step's start to its last step's end (joining, the wait for a
  // model and the consensus finish are not in it). The phases add up to its wall time.
  StepTimes phases;
  int64_t phase_samples = 0;       // samples of those steps
  double phase_thread_cpu_s = 0;   // CPU time of the training thread over the same span
  double phase_process_cpu_s = 0;  // ... of the whole process (its I/O threads, the admin port)
};

using GossipProgressFn = std::function<void(const GossipProgress&)>;

// How many of the largest frames a gossip node's inbox, and its training queue, hold at most.
inline constexpr size_t kInboxModels = 32;
// Bounds `o` by what a member of a model of `dimension` values legitimately sends: a frame above
// a dense model's encoding is refused by the socket before it is read, and the transport's inbox
// and the peer's training queue each hold at most kInboxModels of them (a flood of large frames
// costs bounded memory).
void BoundPeerByModel(size_t dimension, PeerNodeOptions& o);

class GossipSession : public gossip::GossipNodeObserver {
 public:
  // `work`, `telemetry` (metrics, health, the run-time straggler control; may be null),
  // `on_progress` and `stop` (either may be empty) must outlive the session.
  GossipSession(GossipPeerOptions options, GossipWork& work, NodeTelemetry* telemetry,
                GossipProgressFn on_progress, std::function<bool()> stop);
  ~GossipSession() override;

  // Starts the peer (binds, joins through the seeds) and makes the machine, which runs from the
  // first Next(): a resume (machine().Resume) goes between the two. The machine starts from
  // work.params() as they are now. kInvalidArgument for options that break a rule
  // (GossipPeerOptions::Validate) or that the machine refuses; the transport's errors as they
  // come.
  Status Start();
  // Runs the machine until it asks for a step (true: compute one on work.params(), then
  // Computed) or the run is over (false: End). Blocks while the node joins, waits for a model
  // or for a neighbour (soft sync), and during the consensus finish.
  bool Next();
  // The cluster schedule's rate for the step Next() asked for; nullopt without a schedule.
  std::optional<double> lr() const { return lr_; }
  // The step is done: `loss` (not ok, or not finite: the step was skipped and the model left as
  // it was; nullopt: the caller gave none, the step counts and the loss mean is left as it
  // is), `rows` samples, `compute` its time (the straggler injection sleeps after it).
  void Computed(const StatusOr<std::optional<float>>& loss, int64_t rows, Duration compute);
  // After Next() returned false: the final state, or why the run failed.
  StatusOr<GossipProgress> End();
  // Leaves the cluster (a graceful leave the others see at once).
  void Leave();
  // The caller's own training ended before the budget (a library program's loop ran out): the
  // run ends at the next Next() as a spent budget ends it, with the consensus finish (end
  // reason "program"). Callable from any thread.
  void EndTraining() { end_training_.store(true); }

  gossip::NodeId id() const;
  const std::string& endpoint() const { return peer_->endpoint(); }  // REQUIRES Start() ok
  gossip::GossipNode& machine() { return *node_; }
  bool joined() const { return node_ != nullptr && node_->joined(); }

  // GossipNodeObserver: the machine's counters go to the metrics.
  void Rejected(std::string_view reason) override;
  void Staleness(double steps) override;
  void LateDropped() override;
  void Clipped(uint64_t terms) override;
  void RoundPublished() override { published_at_ = clock_.Now(); }
  void Round(double density, double residual_norm, double consensus) override;
  void Finish(bool averaged, uint32_t contributors, double moved) override;

 private:
  // Feeds what arrived (waiting up to `wait` for the first message) to the machine; the time
  // spent blocked is returned, the time the machine took goes to the step's apply phase.
  Duration Drain(Duration wait);
  void RefreshMembers(TimePoint now);
  void TakePause(TimePoint now);
  // Runs the machine's outputs; false once it emitted RunOver.
  bool Perform(std::vector<gossip::NodeAction> actions);
  void CloseTrainingPhase();
  void AddPhases(const StepTimes& t);
  void Evaluate(const gossip::Evaluate& e);
  void Report(bool force);
  void Fill(TimePoint now);  // p_ from the machine and the peer
  // The buffers now (telemetry's murmur_memory_bytes), kept in p_ when their total is the largest.
  void SampleMemory(const PeerSnapshot& snap);
  bool Stopping() const { return stop_ && stop_(); }

  GossipPeerOptions o_;
  NodeTelemetry* telemetry_;
  std::optional<LrSchedule> lr_schedule_;  // the cluster schedule (Start)
  GossipWork& work_;
  RealClock clock_;
  GossipProgressFn on_progress_;
  std::function<bool()> stop_;
  StragglerInjector injector_;
  std::unique_ptr<PeerNode> peer_;
  std::unique_ptr<gossip::GossipNode> node_;
  TimePoint start_{};
  TimePoint last_refresh_{};
  TimePoint last_step_end_{};
  TimePoint step_start_{};
  TimePoint wait_until_{};
  TimePoint next_report_{};
  bool compute_asked_ = false;
  bool running_ = false;  // Next() was called: the machine's loop has begun
  bool over_reported_ = false;
  std::optional<double> lr_;  // the cluster schedule's rate for the asked step
  bool stop_sent_ = false;
  std::atomic<bool> end_training_{false};  // EndTraining was called
  bool end_sent_ = false;
  bool joined_reported_ = false;
  bool alone_reported_ = false;
  bool saw_peer_ = false;  // another member was live at some point (then left: not "alone")
  bool left_ = false;
  int wrong_dimension_ = 0;  // refusals for wrong_dimension so far
  std::string other_seeds_;  // the seeds other than this node, as given ("" when none)
  TimePoint next_alone_warning_{};
  bool alone_ended_reported_ = false;  // End logged TRAINED ALONE
  std::optional<Status> over_;
  uint64_t injection_version_ = ~uint64_t{0};  // none taken yet
  // The current step's phases so far (StepTimes: the time since the previous step ended), the
  // training phase's totals, and the CPU clocks at its start.
  StepTimes step_;
  TimePoint published_at_{};  // the last round's RoundPublished and Round (mixed)
  TimePoint mixed_at_{};
  bool stepped_ = false;       // a step was computed: the training phase has begun
  bool phase_closed_ = false;  // ... and it ended (the CPU clocks are read once at each end)
  double thread_cpu0_ = 0, process_cpu0_ = 0;
  GossipProgress p_;
};

}  // namespace murmur::node
