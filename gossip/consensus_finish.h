#pragma once
// The consensus finish as a sans-IO machine: when the budget is spent, the members'
// N different models become one — their average — so the run ends on the cluster's model. The
// plain average is what exact all-reduce would hold after a final averaging step (local SGD
// with a last synchronization, Lin et al. 2020 §3; SGP's exact average, Assran et al. 2019 §3).
//
// Protocol:
//   contribute  Start: the member sends its final model (dense, fp16 values) to its collector,
//               the lowest live id of its view. A member that trained no step (a restart that
//               found the run over) holds no model of the run's: its contribution says so
//               (weight 0) and only asks for the result; a collector that trained none averages
//               the others' models without its own, once its view held still for `resend`
//               (its view, a late restart's, may not hold every member yet). A member whose
//               collector dies (leaves its view) before answering sends its model to the new lowest
//               live id.
//   collect     The collector sums the models that come in — from live members (the caller's
//               check), one per member, each within `max_distance` × ‖own model‖ of its own
//               final model (one that comes before its Start waits for it, replaced by a later
//               one from the same member: the model still training is no reference, e.g. a
//               collector starved of CPU may not have left its zero start) — and averages once
//               every live member of its view has contributed
//               (members that die meanwhile drop out of the wait) or `collect_wait` after its own
//               Start (or after it became the collector, when the one before it left). The average
//               is rounded to fp16 once, so every member, the collector included, holds
//               bit-identical values.
//   publish     The result goes to every contributor and every live member; a contribution that
//               comes later is answered with the same result, and so is one from a member that
//               was answered `resend` or longer before (the result did not reach it or was
//               refused there: without a new answer it would end on its own model), each further
//               answer to a member after twice the wait of the one before.
//   adopt       A member adopts the first result from a collector it contributed to, or from the
//               lowest live id of its view (a result may come before its own Start: a member
//               still finishing its last step adopts it at Start). A member with no result
//               `result_wait` after its Start keeps its own model, and the outcome says so.
//               Until then it sends its contribution again, `resend` after its first one and
//               after twice the wait each time (a new collector: from `resend` again).
//   relay       A member that holds an average and sees a live member lower than that average's
//               collector (one that restarted, or came back into view, after the average was
//               published, and would otherwise collect alone) sends it the result, once. A node
//               without an outcome adopts a relayed result once more than half of the other live
//               members of its view sent it the same one: no one member makes a node adopt a
//               model it did not collect (a member speaks only for itself), and the late lowest
//               ends on the run's model instead of an average of its own. A collector that adopts
//               one answers its contributors with it.
//   receipt     A member that adopted an average says so to that average's collector (a header,
//               no model). The collector is done once every other live member of its view sent
//               one or left it: a member's program may keep its process (its own evaluation and
//               save) long after it adopted the result, and a collector that waited for it to
//               leave held its own program as long. A lost receipt costs only that wait.
// Cost: one dense fp16 model up and one down per member (2 bytes × d each way); the collector
// sends N − 1 results, once.
// Members of a finished run agree on their views (membership converges in (log2 N + 4) periods);
// two members that disagree on who is lowest contribute to different collectors, and the one
// whose collector does not collect misses the finish, said in its outcome.
//
// Trust: a message changes nothing until it passed every check (dimension, a dense finite
// decode, the distance bound, a sender that may send it); refusals are returned, for the caller
// to count. State is one sum of d floats (a collector's), the set of contributors (live members
// only), before Start one pending model per live member, the result, and at most `kMaxRelayed`
// different relayed results (one per member), whatever the senders do. Thread safety: none; one
// driver thread.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/memory_use.h"
#include "base/status.h"
#include "coding/update_codec.h"
#include "gossip/envelope.h"
#include "gossip/node_io.h"

namespace murmur::gossip {

struct ConsensusFinishOptions {
  NodeId self = 0;
  uint32_t dimension = 0;
  Duration collect_wait = std::chrono::seconds(5);  // the collector, from its Start
  Duration result_wait = std::chrono::seconds(10);  // a member, from its Start
  // A member without a result sends its contribution again `resend` after its first one, then
  // after twice as long each time (at most result_wait): one lost or refused on the way (a
  // collector that restarted and did not know the member yet) would otherwise be missing from
  // the average. The collector counts a member once. The doubling keeps a thin link's queue
  // from filling with copies of models that are still on their way: on a link that carries a
  // model in a large part of a second, resends every `resend` multiplied the finish's bytes
  // and held membership probes behind them long enough for live members to be declared dead.
  Duration resend = std::chrono::seconds(1);
  // A model (contribution or result) farther than this × ‖own model‖ from the own model is
  // refused (0: no check). Honest models of one run are within a few percent of each other.
  double max_distance = 4;
};

enum class FinishVerdict : uint8_t {
  kAccepted,     // a contribution counted, or a result adopted
  kAnswered,     // a contribution after publishing: answered with the result
  kDuplicate,    // a second contribution from a member, or a result after the outcome
  kNotExpected,  // a result from a member that is not this node's collector
  kOutlier,      // beyond max_distance
  kRejected,     // wrong dimension, not a dense finite model
  kDeferred,     // before Start: held, judged against the final model at Start (TakeRefusals)
  kRelayed,      // a result relayed by a member that is not the collector: held until a majority
                 // of the live members relayed the same one
  kReceipt,      // a member's receipt of this collector's result
};
std::string_view FinishVerdictName(FinishVerdict verdict);

struct FinishStepResult {
  FinishVerdict verdict = FinishVerdict::kAccepted;
  coding::DecodeFailure failure = coding::DecodeFailure::kNone;
  Status status;
};

struct FinishOutcome {
  bool averaged = false;       // the model is the cluster's average
  uint32_t contributors = 0;   // models in the average
  NodeId collector = 0;
  std::vector<float> model;    // the average (empty when not averaged)
  std::string why;             // when not averaged
};

class ConsensusFinish {
 public:
  explicit ConsensusFinish(const ConsensusFinishOptions& options);

  // This member's training is over; `model` is its final model; `live`: the live ids of its
  // view, sorted, with itself; `trained`: whether `model` is one of the run's (false: left out
  // of the average).
  void Start(std::span<const float> model, const std::vector<NodeId>& live, TimePoint now,
             bool trained = true);
  // A finish message from a live member (the caller checked the sender). `own`: this node's model
  // now; before Start the distance bound is not judged against it (kDeferred).
  FinishStepResult Step(NodeId from, const FinishMessage& header, std::span<const std::byte> frame,
                        std::span<const float> own, TimePoint now);
  // Models held from before Start that Start refused (beyond the bound of the final model), or
  // that a collector that trained nothing refused when it published, for the caller to count;
  // emptied by the call.
  std::vector<std::pair<NodeId, FinishStepResult>> TakeRefusals() {
    return std::exchange(refusals_, {});
  }
  // The live ids changed (sorted, with this node).
  void View(const std::vector<NodeId>& live, TimePoint now);
  void Tick(TimePoint now);
  std::vector<SendTo> TakeOutput() { return std::exchange(out_, {}); }

  // Set once: the average adopted, or the wait over.
  const std::optional<FinishOutcome>& outcome() const { return outcome_; }
  // Nothing more can be asked of this node, so a finished node in this state need not linger.
  // A member: it adopted the average and the result's count covers every live member of its
  // view (none can still contribute late). The collector: it published and every other live
  // member of its view sent its receipt or left (each leaves once it holds the result), so the
  // collector is never gone before a member read its result: the member would take the view
  // change for a dead collector and contribute again elsewhere.
  bool Settled() const;
  // When a member without a result gives up (valid once started).
  TimePoint deadline() const { return deadline_; }
  // Bytes of the models and frames it holds (own, the sum, pending, results, relays).
  uint64_t HeldBytes() const;

 private:
  void Contribute(TimePoint now);
  void MaybePublish(TimePoint now);
  void SendResult(NodeId to);
  // Once the outcome is another collector's average: the receipt to that collector.
  void SendReceipt();
  FinishStepResult StepReceipt(NodeId from, const FinishMessage& header);
  void SetLive(const std::vector<NodeId>& live, TimePoint now);
  // Adds this node's model to the collector's sum, when it trained.
  void AddOwn();
  // sum_ += values, sized on first use.
  void AddToSum(std::span<const float> values);
  // Within() of a result, for a member that trained (one that did not has nothing to judge by).
  FinishStepResult JudgeResult(std::span<const float> values, std::span<const float> own) const;
  // A collector that trained nothing: the held contributions judged against their medoid, and
  // the ones within the bound added to the sum.
  void JudgeHeld();
  static constexpr size_t kMedoidOf = 16;
  FinishStepResult StepContribution(NodeId from, const FinishMessage& header,
                                    std::span<const std::byte> frame, std::span<const float> own,
                                    TimePoint now);
  FinishStepResult StepResult(NodeId from, const FinishMessage& header,
                              std::span<const std::byte> frame, std::span<const float> own,
                              TimePoint now);
  FinishStepResult Relayed(NodeId from, const FinishMessage& header,
                           std::span<const std::byte> frame, TimePoint now);
  void MaybeAdoptRelayed(TimePoint now);
  // Sends the outcome to the lowest live id when it is lower than the outcome's collector.
  void RelayToLowest();
  // Decodes a dense model of the right dimension.
  FinishStepResult Decode(std::span<const std::byte> frame, std::vector<float>& values) const;
  // Whether `values` lies within the distance bound of `own`.
  FinishStepResult Within(std::span<const float> values, std::span<const float> own) const;

  const ConsensusFinishOptions o_;
  bool started_ = false;
  TimePoint started_at_{};
  TimePoint collecting_since_{};  // Start, or when the collector before this node left the view
  TimePoint deadline_{};
  std::vector<NodeId> live_;
  TimePoint view_changed_at_{};
  NodeId collector_ = 0;
  std::set<NodeId> sent_to_;  // collectors this node contributed to
  TimePoint contributed_at_{};  // the latest contribution sent
  Duration resend_after_{};     // from contributed_at_ to the next resend
  std::vector<float> own_half_;  // this node's model as contributed (fp16 values)
  std::shared_ptr<const std::vector<std::byte>> own_frame_;
  // Collector state, from its Start (what comes before waits in pending_).
  std::vector<float> sum_;         // empty until this node collects
  std::set<NodeId> contributors_;  // other members; this node's own model is added at Start
  std::set<NodeId> abstained_;     // members that trained nothing: waited for, not averaged
  bool own_counts_ = true;
  // Contributions not yet judged: before Start; at a collector that trained nothing, until it
  // publishes.
  std::map<NodeId, std::vector<float>> pending_;
  std::vector<std::pair<NodeId, FinishStepResult>> refusals_;
  std::shared_ptr<const std::vector<std::byte>> result_frame_;
  // Members the result went to: when last, and how long from then a contribution is a duplicate
  // (`resend`, doubled by each further answer).
  struct Answered {
    TimePoint at;
    Duration wait;
  };
  std::map<NodeId, Answered> answered_;
  // Answers `to` and notes it; false (nothing sent) when `to` was answered less than its wait
  // before.
  bool Answer(NodeId to, TimePoint now);
  uint32_t result_contributors_ = 0;
  NodeId result_collector_ = 0;
  std::set<NodeId> receipts_;  // live members that adopted this collector's result
  bool receipt_sent_ = false;
  // A result that came before Start, from the then lowest live member.
  std::optional<FinishOutcome> early_result_;
  std::optional<FinishOutcome> outcome_;
  // Results relayed to this node, one entry per different model, each with the members that
  // relayed it.
  struct Relay {
    uint32_t contributors = 0;
    NodeId collector = 0;
    std::vector<float> model;
    std::set<NodeId> by;
  };
  static constexpr size_t kMaxRelayed = 4;
  std::vector<Relay> relayed_;
  std::set<NodeId> relayed_to_;  // lower members this node relayed its outcome to
  std::shared_ptr<const std::vector<std::byte>> relay_frame_;
  std::vector<SendTo> out_;
};

}  // namespace murmur::gossip
