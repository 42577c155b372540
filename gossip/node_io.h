#pragma once
// The vocabulary of the node machines (GossipNode, SyncNode; gossip/README.md "Driving a
// machine"): a machine takes inputs through Step(input, now) and Tick(now) and hands back what to
// do through TakeOutput(). Nothing here reads a clock, touches a socket or computes a gradient:
// computing is an output (ComputeStep, ComputeGradient, Evaluate) and its completion an input
// (StepComputed, GradientComputed, Evaluated), so the real driver (node/driver/) runs a machine
// with a Trainer and ZeroMQ, and a test or a simulator runs the same machine in virtual time.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "coding/update_codec.h"
#include "gossip/envelope.h"

namespace murmur::gossip {

// Why a machine refused a message (the label of murmur_rejected_messages_total).
inline constexpr std::string_view kRejectWrongMode = "wrong_mode";
inline constexpr std::string_view kRejectUnknownSender = "unknown_sender";
inline constexpr std::string_view kRejectProtocol = "protocol";
inline constexpr std::string_view kRejectFrames = "frames";
inline constexpr std::string_view kRejectConsensus = "implausible_consensus";  // UpdateHeader
// An UpdateHeader's consensus estimate above this (or negative other than -1, none) is refused.
inline constexpr double kMaxConsensus = 100;
inline constexpr std::string_view kRejectOutlier = "outlier_update";  // robust mixing (choco.h)
// Per-sender state is bounded (choco.h max_copies) and snapshots are rate-limited.
inline constexpr std::string_view kRejectUntracked = "untracked_sender";
inline constexpr std::string_view kRejectSnapshotRate = "snapshot_rate_limited";
// A request for this node's model while the model holds a NaN or an infinity (a library user's
// own buffer, say): never served, as a peer would adopt it; the requester asks another member.
inline constexpr std::string_view kRejectOwnModelNonFinite = "own_model_non_finite";
// A training message from a life of its sender the membership has not confirmed (a newer
// incarnation than the view's): incarnations advance through the membership protocol only
// (its refutation, or a restarted member's join), never from a data message, which could
// otherwise reset the sender's public copy at will (a forged "new life" starting from zero).
inline constexpr std::string_view kRejectUnconfirmedIncarnation = "unconfirmed_incarnation";
// A member's own claims that no other member's confirm (claims.h): samples beyond the
// second-highest claim and twice the median, or a clock that alone would make this node catch up.
inline constexpr std::string_view kRejectUnconfirmedSamples = "unconfirmed_samples";
inline constexpr std::string_view kRejectUnconfirmedClock = "unconfirmed_clock";

// The reason a message that did not decode is refused under: the decoder's failure by name, or
// kRejectProtocol when it decoded and broke the protocol.
inline std::string_view DecodeRefusal(coding::DecodeFailure failure) {
  return failure == coding::DecodeFailure::kNone ? kRejectProtocol
                                                 : coding::DecodeFailureName(failure);
}

// A message or a claim a part of a machine refused: the reason (one of the above), the sender,
// and why, for the log.
struct Refusal {
  std::string_view reason;
  NodeId from = 0;
  std::string why;
};

// ---- Inputs ----

// A training message whose envelope passed the node's decode limits (cluster, version, size).
struct Incoming {
  NodeId from = 0;
  Incarnation incarnation = 0;
  uint64_t step_clock = 0;
  Payload payload;
  std::span<const std::byte> frame;  // the first tensor frame; empty when none came
  size_t frames = 0;                 // tensor frames that came
};
// Every known member, this node first (Membership::Members()); alive and suspect members count
// as live.
struct MemberView {
  std::vector<MemberEntry> members;
};
// The step asked for by ComputeStep is done: the model was updated in place (unless !ok: the
// loss was not finite and nothing was applied).
struct StepComputed {
  bool ok = true;  // false: the loss was not finite, the step is counted as skipped
  double loss = 0;
  int64_t samples = 0;   // rows of the mini-batch
  bool has_loss = true;  // false: the caller gave no loss (counted, not in the mean)
};
// This rank's weighted partial gradient for ComputeGradient, in the memory of the node's device
// (SyncNodeOptions::device); read during the Step only.
struct GradientComputed {
  uint64_t iteration = 0;
  std::span<const float> partial;
};
// The result of an Evaluate; accuracy < 0 or NaN when the task has none.
struct Evaluated {
  double accuracy = -1;
  double loss = 0;
};
// The operator asked the node to stop (Ctrl-C, SIGTERM): the run ends at the next boundary,
// without the consensus finish. `finish`: the caller's own training ended instead (a library
// program's loop ran out before the budget): the run ends as a spent budget ends it, with the
// consensus finish.
struct StopRequested {
  bool finish = false;
};
// An injected pause (straggler injection `pause=A..B`), replacing the previous one: from step
// `from` the node computes nothing until the most advanced live member reaches step `until`; it
// keeps answering peers and still ends with the cluster. from < 0: no pause.
struct InjectedPause {
  int64_t from = -1;
  int64_t until = -1;
  // Whether a node at `step`, the most advanced live member at `best_clock`, computes nothing.
  bool Holds(uint64_t step, uint64_t best_clock) const {
    return from >= 0 && step >= static_cast<uint64_t>(from) &&
           best_clock < static_cast<uint64_t>(until < 0 ? 0 : until);
  }
};

// ---- Outputs ----

// A message to one member; `frame` (shared by every receiver of one round) is null for
// header-only payloads.
struct SendTo {
  NodeId to = 0;
  Payload payload;
  std::shared_ptr<const std::vector<std::byte>> frame;
};
// This node's progress, for its member entry and every envelope (soft sync and the budget).
struct Announce {
  uint64_t step_clock = 0;
  uint64_t samples = 0;
  bool finished = false;
};
// Take one local optimizer step on the model in place, then Step(StepComputed).
struct ComputeStep {
  uint64_t step = 0;  // the step clock once it is done
  std::optional<double> lr;  // the schedule's learning rate for it (none: the trainer's own)
};
// Compute this rank's weighted partial gradient at `model`, then Step(GradientComputed). `model`
// is in the memory of the node's device and stays valid until that Step (the node asks for one
// computation at a time).
struct ComputeGradient {
  uint64_t iteration = 0;
  std::span<const float> model;
};
// The model was replaced (a snapshot, a catch-up): optimizer state (momentum) no longer fits.
struct ResetOptimizer {};
// Evaluate `model` (the full test set, or the periodic subset), then Step(Evaluated).
struct Evaluate {
  bool full = false;
  std::span<const float> model;  // valid until the next input
};
// The machine has nothing to do before `until` unless an input arrives.
struct Wait {
  TimePoint until{};
};
// The budget is spent (or the run was stopped): `reason` is "epochs", "accuracy", "time",
// "iterations", "peer" or "stopped". The machine lingers to answer peers, then emits RunOver.
struct Finished {
  std::string reason;
};
// The run is over: leave the cluster. A non-OK status is a failure (the cluster never
// assembled, a round could not run).
struct RunOver {
  Status status;
};

using NodeAction = std::variant<SendTo, Announce, ComputeStep, ComputeGradient, ResetOptimizer,
                                Evaluate, Wait, Finished, RunOver>;

// Alive and suspect members (this node included), sorted by id: the view peer sampling and rank
// assembly use (Membership::LiveView, computed from a MemberView).
std::vector<NodeId> LiveIds(const MemberView& view, NodeId self);

// A node machine's output: actions in order; of consecutive Waits only the last is kept.
class ActionQueue {
 public:
  void Emit(NodeAction action);
  std::vector<NodeAction> Take() { return std::exchange(actions_, {}); }

 private:
  std::vector<NodeAction> actions_;
};

// The end of a run: a node lingers, answering its peers, until `until`, or not at all once
// `settled` (nothing more can be asked of it); then the run is over. Emits Wait or RunOver; true
// once it emitted RunOver.
bool LingerIsOver(TimePoint now, TimePoint until, bool settled, ActionQueue& out);

}  // namespace murmur::gossip
