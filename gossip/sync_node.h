#pragma once
// One node of the synchronous modes (coded-tree, tree, gc, ring) and of the parameter server
// (ps) as a sans-IO machine: rank assembly from the membership view, the rank's weighted
// samples, the TreeAggregator or RingAllReduce of its rank (coded_reduce.h) or its PsServer or
// PsWorker (param_server.h), the root's (ring: every rank's; ps: every server's, on its slice)
// SGD step, the iteration budget and the end of the run.
//
//   assembling  the run needs exactly `plan.processes` live members. Once the live view has that
//               many, it must stay the same set for `settle`; a view that changes meanwhile (a
//               member replaced, one gone) is refused with the reason (counted in
//               refused_views) and assembly starts over; more live members than the plan needs
//               fail the run (FailedPrecondition); no full view within `join_timeout`, or a stop,
//               fails it (DeadlineExceeded). Ranks are the positions of the ids in the sorted
//               view, so every node that assembled the same view has the same ranks. Training
//               messages that come before assembly wait and are handled once the ranks are
//               known: each sender keeps its newest kMaxEarlyMessages / processes (a ring's
//               predecessor at least `processes`: it may send N - 1 chunks, all needed, before
//               this rank answers; a sender that sent more has moved on: its oldest is dropped,
//               counted in early_dropped, e.g. a node stopped while settling); past
//               kMaxEarlyMessages in all (more senders than the plan has) a message is rejected
//               (counted). A member that
//               announced "finished" meanwhile ran the run without this node (it settled
//               later): the run is over for it too (end reason "peer", RunOver ok).
//   running     CodedSend → SendTo (the vector encoded once, checksummed), ComputeRequest →
//               ComputeGradient (only the newest model is worth computing on: a request that
//               comes while one is computing replaces the queued one), Aggregated → the SGD
//               step, a periodic Evaluate at the root (rank 0 of a ring), the next iteration.
//               The run ends after `iterations` or `time_limit` (the root; a ring rank when it
//               completes one), or when a member of this run announced that it finished (every
//               rank but the root), or on a stop.
//               ps (param_server.h): a server steps its slice per Aggregated of its PsServer
//               (async: per gradient, budget and evaluations counted N per iteration) and sends
//               the replies; a worker computes on the model its PsWorker assembles from every
//               server's slice. A server gone from the view (not finished) fails the run; a
//               worker gone is dropped by the servers. The other modes: a member gone from
//               the live view without finishing (declared dead: it stopped answering, e.g.
//               SIGSTOPped; or left) fails the run where it cannot go on without it
//               (Unavailable, naming it): any rank of a ring; the root of a tree; a parent whose
//               remaining children its code cannot decode. So no rank waits on a gone member
//               longer than the membership takes to declare it dead. A rank that takes no
//               message and computes nothing for the stall bound (stall_timeout) fails its run
//               with the reason: a message it needed was lost, or a live member went quiet.
//               Before that, from a quarter of the bound on (and every quarter after), it sends
//               again the last messages it sent each member (ResendDepth) (a lost one is the
//               usual cause; every protocol but an asynchronous parameter server drops what it
//               already has, as late or a duplicate). Its own absence does not count: a gap between
//               its turns (Tick) longer than a tenth of the bound, with nothing taken in between,
//               is this process not running (stopped, its machine suspended: its clock jumped), not
//               its peers' silence, and the bound counts from the turn after it.
//   lingering   the root (rank 0) evaluates, "finished" is announced, `linger` is spent answering
//               late messages, then RunOver. No linger once settled (Settled()): a tree rank
//               that ended on another's "finished" leaves at once, the root once the run's
//               other members have left its view, a ring rank once the others all finished.
// Device: the model, its momentum, the SGD step and the aggregators' arithmetic
// (coded_reduce.h) live on `SyncNodeOptions::device`; ComputeGradient's model and
// GradientComputed's partial are in its memory. The model comes down to the host only to go to
// the network (the root's model for its children, every iteration) or to be evaluated.
// Inputs: Step(Incoming | MemberView | GradientComputed | Evaluated | StopRequested, now),
// Tick(now). Outputs (node_io.h): SendTo, Announce, ComputeGradient, Evaluate, Wait, Finished,
// RunOver.
// Thread safety: none; one driver thread.

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/clock.h"
#include "base/lr_schedule.h"
#include "base/status.h"
#include "coding/coded_tree.h"
#include "coding/compressor.h"
#include "coding/gradient_code.h"
#include "gossip/coded_reduce.h"
#include "gossip/mode.h"
#include "gossip/node_io.h"
#include "gossip/param_server.h"
#include "kernels/device.h"
#include "kernels/memory.h"

namespace murmur::gossip {

// The shape a synchronous mode runs: its layout and code (none for ring) and how many processes
// it needs.
struct SyncPlan {
  Mode mode = Mode::kCodedTree;
  int64_t workers = 0;    // N
  int64_t processes = 0;  // N + 1 with a root, N for ring
  std::optional<coding::TreeLayout> layout;
  std::optional<coding::GradientCode> code;
  PsOptions ps;  // mode ps: processes = ps.servers + workers
};
// kInvalidArgument for a mode that is not synchronous, a bad shape, or gc with more than 64
// workers; kFailedPrecondition for an ill-conditioned code.
// For ps, `ps` is the servers' shape (ValidatePs) and N = n + ... + n^L workers as for the others.
StatusOr<SyncPlan> MakeSyncPlan(Mode mode, int n, int layers, int s, uint64_t code_seed,
                                const PsOptions& ps = {});

struct SyncNodeOptions {
  NodeId self = 0;
  int64_t batch = 1;           // B: positions per iteration
  int64_t iterations = 100;
  Duration time_limit{0};      // 0: none
  double lr = 0.1;
  // The learning rate at iteration × batch samples; none: `lr` throughout.
  std::optional<LrSchedule> lr_schedule;
  double momentum = 0;
  bool nesterov = false;  // REQUIRES momentum > 0 (kernels::SgdOptions)
  double weight_decay = 0;
  int64_t eval_every = 10;     // root / ring rank 0: every this many iterations (0: at the end)
  Duration report_after = std::chrono::seconds(5);
  Duration join_timeout = std::chrono::seconds(30);
  // Running, a rank that has taken no message and computed nothing for this long fails its run
  // (DeadlineExceeded): a message it waits for was lost (a connection broke with it in flight)
  // or a member went quiet while it still answers the membership's probes. Every synchronous
  // wait is so bounded; a rank computing is not waiting. It must exceed the longest step of
  // the slowest member (a tree's parent waits for it).
  Duration stall_timeout = std::chrono::seconds(30);
  Duration settle = std::chrono::milliseconds(200);
  Duration linger = std::chrono::milliseconds(500);
  kernels::Device device = kernels::Device::Cpu();  // where the model and the arithmetic live
  // ps: a worker's pushes compressed with this operator, with error feedback per server slice
  // (none: dense fp32).
  std::optional<coding::CompressorOptions> push_compress;

  Status Validate() const;
};

struct SyncNodeState {
  uint64_t iteration = 0;          // iterations completed (root / ring: model updates)
  double loss = 0;                 // at the latest evaluation (NaN before any)
  double accuracy = 0;             // NaN for regression or before any
  uint64_t evaluated_at = 0;
  std::vector<double> iteration_ms;  // root / ring: wall time of each iteration
  uint64_t rejected_messages = 0;
  uint64_t refused_views = 0;      // views that changed mid-assembly
  uint64_t early_dropped = 0;      // a sender's oldest waiting message, superseded before assembly
  uint64_t resent_messages = 0;    // sent again after a quarter of the stall bound (MaybeResend)
  std::string end_reason;
};

// What a synchronous node's metrics count as it goes.
class SyncNodeObserver {
 public:
  virtual ~SyncNodeObserver() = default;
  virtual void Rejected(std::string_view /*reason*/) {}
  virtual void Staleness(double /*iterations*/) {}
};

class SyncNode {
 public:
  enum class Phase : uint8_t { kAssembling, kRunning, kLingering, kOver };
  static constexpr size_t kMaxEarlyMessages = 1024;

  // `initial_model` is the run's seeded initial model (every rank draws the same), on the host.
  // Fails when the device cannot hold the model and its buffers.
  static StatusOr<std::unique_ptr<SyncNode>> Create(SyncPlan plan, const SyncNodeOptions& options,
                                                    std::vector<float> initial_model, TimePoint now);

  void Step(const Incoming& message, TimePoint now);
  void Step(const MemberView& view, TimePoint now);
  void Step(const GradientComputed& result, TimePoint now);
  void Step(const Evaluated& result, TimePoint now);
  void Step(const StopRequested& stop, TimePoint now);
  void Tick(TimePoint now);
  std::vector<NodeAction> TakeOutput();

  Phase phase() const { return phase_; }
  bool assembled() const { return phase_ != Phase::kAssembling && rank_ >= 0; }
  int64_t rank() const { return rank_; }
  std::string role() const;  // root, parent, leaf, ring ("" before assembly)
  const std::vector<NodeId>& ranks() const { return ids_; }  // rank -> node id
  // This rank's (position, weight) pairs of every iteration's B positions.
  const std::vector<coding::WeightedSample>& own() const { return own_; }
  const SyncNodeState& state() const { return s_; }
  CodedStats stats() const;
  // Why the node is not assembled yet, or "assembled".
  const std::string& detail() const { return detail_; }
  // The current model, on the host (copied down from the device when it changed).
  std::span<const float> model();
  void set_observer(SyncNodeObserver* observer) { observer_ = observer; }

 private:
  struct Early {
    Incoming message;
    std::vector<std::byte> frame;
  };
  SyncNode(SyncPlan plan, const SyncNodeOptions& options, kernels::Buffer<float> params,
           TimePoint now);
  void Assemble(const std::vector<NodeId>& live, TimePoint now);
  void StartRunning(TimePoint now);
  void Handle(const Incoming& m, TimePoint now);
  std::optional<size_t> ExpectedLength(const Incoming& m, const CodedMessage& header,
                                       int64_t sender);
  bool DecodeTensor(const Incoming& m, size_t expected, int64_t sender, coding::Update& u);
  void Dispatch(std::vector<CodedAction> actions, TimePoint now);
  void MaybeCompute(TimePoint now);
  void Update(const Aggregated& done);
  void Applied(const Aggregated& done, TimePoint now);
  // ps: a server gone from the view fails the run; a worker gone is dropped by the servers.
  void CheckPsMembers(const MemberView& view, const std::vector<NodeId>& live, TimePoint now);
  // The other modes: a gone member ends the run where it cannot go on without it
  // (sync_node_members.cc); fails with the reason, naming the member.
  void CheckRunMembers(const MemberView& view, const std::vector<NodeId>& live);
  // Ranks of the run's members (not this one) neither live in `view` nor finished, ascending.
  std::vector<int64_t> GoneRanks(const MemberView& view, const std::vector<NodeId>& live) const;
  void StartPs();
  // ps: a server's end (k > 0 sends its final slice to server 0; server 0 evaluates once it has
  // every slice) and server 0's receipt of one.
  void FinishPs();
  void TakeFinalSlice(int64_t server, const CodedMessage& header, std::span<const float> slice,
                      TimePoint now);
  bool IsServer() const {
    return plan_.mode == Mode::kPs && rank_ >= 0 && rank_ < plan_.ps.servers;
  }
  // Model updates in the budget and between evaluations: a ps server in async or ssp form
  // counts one per worker gradient (N per iteration), every other node one per iteration.
  uint64_t UpdatesPerIteration() const;
  bool BudgetSpent(TimePoint now) const;
  // A finished rank need not linger: a tree's root once the run's other members left its view, a
  // tree rank that ended because another member finished (the root is done with it), a ring
  // rank once every other live rank announced that it finished.
  bool Settled() const;
  void Finish(TimePoint now, std::string reason);
  void Fail(Status status);
  // A gap since the last turn (and the last progress) over a tenth of the stall bound is this
  // process's own absence: the stall bound does not count it.
  void ExcludeOwnAbsence(TimePoint now);
  // The protocol's sends, kept for MaybeResend; and the resend itself.
  void Sent(const SendTo& send);
  void MaybeResend(TimePoint now);
  void Reject(std::string_view reason, NodeId from, const std::string& why);
  void Emit(NodeAction action);

  const SyncPlan plan_;
  const SyncNodeOptions o_;
  SyncNodeObserver* observer_ = nullptr;
  // Invariant: the phase only moves forward (assembling, running, lingering, over).
  void EnterPhase(Phase next) {
    MURMUR_CHECK(next >= phase_) << "phase " << static_cast<int>(phase_) << " -> "
                                 << static_cast<int>(next);
    phase_ = next;
  }
  Phase phase_ = Phase::kAssembling;
  TimePoint created_{};
  TimePoint start_{};
  std::string detail_;
  std::vector<NodeId> candidate_;  // the full view being settled
  TimePoint candidate_since_{};
  size_t live_seen_ = 1;
  std::deque<Early> early_;
  std::map<NodeId, size_t> early_from_;  // waiting messages per sender (keys ≤ early_.size())
  int64_t rank_ = -1;
  std::vector<NodeId> ids_;
  std::map<NodeId, int64_t> rank_of_;
  std::vector<coding::WeightedSample> own_;
  std::optional<TreeAggregator> tree_;
  std::optional<RingAllReduce> ring_;
  std::optional<PsServer> server_;
  std::optional<PsWorker> worker_;
  // On the device: the model, the momentum (empty without), the step's mean gradient, and the
  // model of the computation asked for (a tree rank's model from its parent).
  kernels::Buffer<float> params_;
  kernels::Buffer<float> velocity_;
  kernels::Buffer<float> step_grad_;
  double last_lr_ = 0;  // the rate of the latest step (a DANA server's look-ahead uses it)
  std::vector<float> slice_host_;  // a ps server's slice after its latest step
  kernels::Buffer<float> compute_model_;
  std::vector<float> params_host_;  // the model on the host when !host_stale_
  bool host_stale_ = true;
  // The next computation: a tree rank's model from its parent (host), or for a ring an empty
  // model meaning the node's current one.
  std::optional<ComputeRequest> pending_;
  bool computing_ = false;
  uint64_t ring_started_ = 0;
  TimePoint iteration_start_{};
  // The stall bound (SyncNodeOptions::stall_timeout): the last message taken or step computed.
  TimePoint last_progress_{};
  // The last messages sent to each member (two; a ring rank one iteration's 2(n − 1) chunks, as
  // it may send several steps ahead of its successor: about twice the model's bytes), and when
  // they were last sent again.
  size_t ResendDepth() const;
  std::map<NodeId, std::deque<SendTo>> sent_;
  std::optional<TimePoint> resent_at_;
  // The last Tick while running (the stall bound skips this process's own gaps).
  std::optional<TimePoint> last_turn_;
  bool peer_finished_ = false;
  // The run's other members live in the latest view, and those of them not finished (~0: no
  // view since assembly).
  size_t others_live_ = ~size_t{0};
  size_t others_unfinished_ = ~size_t{0};
  bool stop_requested_ = false;
  bool evaluating_final_ = false;
  // ps with K > 1: server 0 evaluates once every other server's final slice is in.
  // final_sent_: a server k > 0 sent its slice; server 0 asked for the final evaluation.
  size_t final_slices_ = 0;
  uint64_t final_from_ = 0;  // bitmask over servers
  bool final_sent_ = false;
  TimePoint linger_until_{};
  uint64_t rejections_logged_ = 0;
  SyncNodeState s_;
  ActionQueue output_;
};

}  // namespace murmur::gossip
