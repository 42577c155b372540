#include "gossip/consensus_finish.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/check.h"
#include "coding/update.h"
#include "coding/vector_ops.h"

namespace murmur::gossip {
namespace {

// `values` as a dense fp16 update; rounds `values` in place to what the receivers decode.
std::shared_ptr<const std::vector<std::byte>> EncodeHalf(std::vector<float>& values) {
  coding::Update u;
  u.op = coding::Operator::kNone;
  u.dimension = static_cast<uint32_t>(values.size());
  u.dense = true;
  u.format = coding::QuantizeFloats(values, 10);
  u.values = std::move(values);  // encoded where they are, and handed back
  auto bytes = std::make_shared<std::vector<std::byte>>();
  coding::EncodeUpdate(u, *bytes);
  values = std::move(u.values);
  return bytes;
}

FinishStepResult Verdict(FinishVerdict verdict) {
  return {verdict, coding::DecodeFailure::kNone, OkStatus()};
}

}  // namespace

std::string_view FinishVerdictName(FinishVerdict verdict) {
  switch (verdict) {
    case FinishVerdict::kAccepted: return "accepted";
    case FinishVerdict::kAnswered: return "answered";
    case FinishVerdict::kDuplicate: return "duplicate";
    case FinishVerdict::kNotExpected: return "not_expected";
    case FinishVerdict::kOutlier: return "outlier";
    case FinishVerdict::kRejected: return "rejected";
    case FinishVerdict::kDeferred: return "deferred";
    case FinishVerdict::kRelayed: return "relayed";
    case FinishVerdict::kReceipt:
      return "receipt";
  }
  return "unknown";
}

ConsensusFinish::ConsensusFinish(const ConsensusFinishOptions& options) : o_(options) {
  MURMUR_CHECK(o_.dimension > 0) << "a consensus finish needs the model's dimension";
}

void ConsensusFinish::Start(std::span<const float> model, const std::vector<NodeId>& live,
                            TimePoint now, bool trained) {
  MURMUR_CHECK(!started_ && model.size() == o_.dimension) << "Start once, with the model";
  started_ = true;
  own_counts_ = trained;
  SetLive(live, now);
  started_at_ = now;
  collecting_since_ = now;
  deadline_ = now + o_.result_wait;
  std::map<NodeId, std::vector<float>> pending = std::exchange(pending_, {});
  std::set<NodeId> abstained = std::exchange(abstained_, {});
  if (early_result_.has_value() && early_result_->collector == live_.front()) {
    FinishStepResult r = JudgeResult(early_result_->model, model);
    if (r.verdict == FinishVerdict::kAccepted) {
      outcome_ = std::move(early_result_);
      early_result_.reset();
      SendReceipt();
      return;
    }
    refusals_.emplace_back(early_result_->collector, std::move(r));
  }
  early_result_.reset();  // from a member that is no longer the lowest: its collector answers
  own_half_.assign(model.begin(), model.end());
  own_frame_ = EncodeHalf(own_half_);
  collector_ = live_.front();
  if (collector_ != o_.self) {
    // Contributions sent here while this node still trained (dropped with `pending`) were meant
    // for a collector it is not.
    Contribute(now);
    MaybeAdoptRelayed(now);
    return;
  }
  AddOwn();
  abstained_ = std::move(abstained);
  if (!own_counts_) {  // judged when it publishes (JudgeHeld)
    for (const auto& [from, values] : pending) contributors_.insert(from);
    pending_ = std::move(pending);
    pending.clear();
  }
  // What came before Start, judged against the final model now.
  for (auto& [from, values] : pending) {
    FinishStepResult r = Within(values, model);
    if (r.verdict != FinishVerdict::kAccepted) {
      refusals_.emplace_back(from, std::move(r));
      continue;
    }
    AddToSum(values);
    contributors_.insert(from);
  }
  MaybeAdoptRelayed(now);
  MaybePublish(now);
}

bool ConsensusFinish::Answer(NodeId to, TimePoint now) {
  const auto it = answered_.find(to);
  if (it == answered_.end()) {
    answered_.emplace(to, Answered{now, o_.resend});
  } else if (now - it->second.at < it->second.wait) {
    return false;
  } else {
    it->second = Answered{now, 2 * it->second.wait};
  }
  SendResult(to);
  return true;
}

void ConsensusFinish::Contribute(TimePoint now) {
  // A first contribution to this collector waits `resend` for its result; each resend twice as
  // long as the one before.
  resend_after_ = sent_to_.insert(collector_).second
                      ? o_.resend
                      : std::min<Duration>(2 * resend_after_, o_.result_wait);
  contributed_at_ = now;
  out_.push_back(
      SendTo{collector_,
             FinishMessage{FinishMessage::Kind::kContribution, o_.dimension, own_counts_ ? 1u : 0u},
             own_frame_});
}

FinishStepResult ConsensusFinish::Decode(std::span<const std::byte> frame,
                                         std::vector<float>& values) const {
  coding::Update u;
  coding::DecodeFailure failure = coding::DecodeFailure::kNone;
  Status s = coding::DecodeUpdate(frame, o_.dimension, u, &failure);
  if (!s.ok()) return {FinishVerdict::kRejected, failure, s};
  if (!u.dense) {
    return {FinishVerdict::kRejected, failure, InvalidArgumentError("a finish model must be dense")};
  }
  values = std::move(u.values);
  return Verdict(FinishVerdict::kAccepted);
}

FinishStepResult ConsensusFinish::Within(std::span<const float> values,
                                         std::span<const float> own) const {
  if (o_.max_distance > 0 && own.size() == values.size()) {
    const double d = std::sqrt(coding::SquaredL2Distance(values, own));
    const double bound = o_.max_distance * std::sqrt(coding::SquaredL2Norm(own));
    if (d > bound) {
      return {FinishVerdict::kOutlier, coding::DecodeFailure::kNone,
              InvalidArgumentError("a finish model " + std::to_string(d) +
                                   " away from this node's, beyond " + std::to_string(bound))};
    }
  }
  return Verdict(FinishVerdict::kAccepted);
}

FinishStepResult ConsensusFinish::Step(NodeId from, const FinishMessage& header,
                                       std::span<const std::byte> frame,
                                       std::span<const float> own, TimePoint now) {
  if (header.dimension != o_.dimension) {
    return {FinishVerdict::kRejected, coding::DecodeFailure::kWrongDimension,
            InvalidArgumentError("finish message of dimension " + std::to_string(header.dimension))};
  }
  switch (header.kind) {
    case FinishMessage::Kind::kContribution:
      return StepContribution(from, header, frame, own, now);
    case FinishMessage::Kind::kResult:
      return StepResult(from, header, frame, own, now);
    case FinishMessage::Kind::kReceipt:
      return StepReceipt(from, header);
  }
  return {FinishVerdict::kRejected, coding::DecodeFailure::kNone,
          InvalidArgumentError("a finish message of an unknown kind")};
}

FinishStepResult ConsensusFinish::StepReceipt(NodeId from, const FinishMessage& header) {
  if (result_frame_ == nullptr || result_collector_ != o_.self) {
    return {FinishVerdict::kNotExpected, coding::DecodeFailure::kNone,
            FailedPreconditionError("a receipt for a result this node did not publish")};
  }
  if (header.collector != o_.self || header.contributors != result_contributors_) {
    return {FinishVerdict::kNotExpected, coding::DecodeFailure::kNone,
            InvalidArgumentError("a receipt for another result (" +
                                 std::to_string(header.contributors) + " contributors of node " +
                                 std::to_string(header.collector) + ")")};
  }
  // The caller checked that `from` is live: at most one entry per member of the view.
  return Verdict(receipts_.insert(from).second ? FinishVerdict::kReceipt
                                               : FinishVerdict::kDuplicate);
}

void ConsensusFinish::SendReceipt() {
  if (receipt_sent_ || !outcome_.has_value() || !outcome_->averaged ||
      outcome_->collector == o_.self) {
    return;
  }
  receipt_sent_ = true;
  out_.push_back(SendTo{outcome_->collector,
                        FinishMessage{FinishMessage::Kind::kReceipt, o_.dimension,
                                      outcome_->contributors, outcome_->collector},
                        nullptr});
}

FinishStepResult ConsensusFinish::StepContribution(NodeId from, const FinishMessage& header,
                                                   std::span<const std::byte> frame,
                                                   std::span<const float> own, TimePoint now) {
  if (result_frame_ != nullptr) {  // late, or not reached: answered with what the others adopted
    return Verdict(Answer(from, now) ? FinishVerdict::kAnswered : FinishVerdict::kDuplicate);
  }
  if (started_ && collector_ != o_.self) {
    return {FinishVerdict::kNotExpected, coding::DecodeFailure::kNone,
            FailedPreconditionError("a contribution to a node that is not the collector")};
  }
  if (contributors_.contains(from) || abstained_.contains(from)) {
    return Verdict(FinishVerdict::kDuplicate);
  }
  std::vector<float> values;
  FinishStepResult r = Decode(frame, values);
  if (r.verdict != FinishVerdict::kAccepted) return r;
  if (header.contributors == 0) {  // trained nothing: waited for, not averaged
    pending_.erase(from);
    abstained_.insert(from);
    MaybePublish(now);
    return r;
  }
  if (!started_) {
    pending_[from] = std::move(values);
    return Verdict(FinishVerdict::kDeferred);
  }
  if (!own_counts_) {  // no model of its own to judge by: judged when it publishes
    pending_[from] = std::move(values);
    contributors_.insert(from);
    MaybePublish(now);
    return r;
  }
  r = Within(values, own);
  if (r.verdict != FinishVerdict::kAccepted) return r;
  AddToSum(values);
  contributors_.insert(from);
  MaybePublish(now);
  return r;
}

FinishStepResult ConsensusFinish::StepResult(NodeId from, const FinishMessage& header,
                                             std::span<const std::byte> frame,
                                             std::span<const float> own, TimePoint now) {
  if (outcome_.has_value() || early_result_.has_value()) return Verdict(FinishVerdict::kDuplicate);
  if (header.contributors == 0) {
    return {FinishVerdict::kRejected, coding::DecodeFailure::kNone,
            InvalidArgumentError("a finish result of no contributors")};
  }
  const bool asked = sent_to_.contains(from);
  const bool lowest = !live_.empty() && live_.front() == from;
  if (!asked && !lowest) return Relayed(from, header, frame, now);
  std::vector<float> values;
  FinishStepResult r = Decode(frame, values);
  if (r.verdict != FinishVerdict::kAccepted) return r;
  FinishOutcome o{true,
                  header.contributors,
                  header.collector != 0 ? header.collector : from,
                  std::move(values),
                  {}};
  if (!started_) {  // judged against the final model at Start
    early_result_ = std::move(o);
    return Verdict(FinishVerdict::kDeferred);
  }
  r = JudgeResult(o.model, own);
  if (r.verdict == FinishVerdict::kAccepted) {
    outcome_ = std::move(o);
    SendReceipt();
    RelayToLowest();
  }
  return r;
}

FinishStepResult ConsensusFinish::Relayed(NodeId from, const FinishMessage& header,
                                          std::span<const std::byte> frame, TimePoint now) {
  for (const Relay& relay : relayed_) {
    if (relay.by.contains(from)) return Verdict(FinishVerdict::kDuplicate);
  }
  std::vector<float> values;
  FinishStepResult r = Decode(frame, values);
  if (r.verdict != FinishVerdict::kAccepted) return r;
  const NodeId collector = header.collector != 0 ? header.collector : from;
  auto same = std::find_if(relayed_.begin(), relayed_.end(), [&](const Relay& relay) {
    return relay.contributors == header.contributors && relay.collector == collector &&
           relay.model == values;
  });
  if (same == relayed_.end()) {
    if (relayed_.size() >= kMaxRelayed) {
      return {FinishVerdict::kNotExpected, coding::DecodeFailure::kNone,
              ResourceExhaustedError("a relayed finish result beyond " +
                                     std::to_string(kMaxRelayed) + " different ones")};
    }
    relayed_.push_back(Relay{header.contributors, collector, std::move(values), {}});
    same = relayed_.end() - 1;
  }
  same->by.insert(from);
  MaybeAdoptRelayed(now);
  return Verdict(FinishVerdict::kRelayed);
}

void ConsensusFinish::MaybeAdoptRelayed(TimePoint now) {
  if (!started_ || outcome_.has_value() || relayed_.empty()) return;
  const size_t others = live_.size() - 1;
  for (Relay& relay : relayed_) {
    size_t live = 0;
    for (NodeId id : relay.by) live += std::binary_search(live_.begin(), live_.end(), id) ? 1 : 0;
    if (2 * live <= others) continue;
    // Judged against this node's final model, as a result from its collector is.
    if (JudgeResult(relay.model, own_half_).verdict != FinishVerdict::kAccepted) continue;
    outcome_ = FinishOutcome{true, relay.contributors, relay.collector, relay.model, {}};
    SendReceipt();
    if (collector_ == o_.self && result_frame_ == nullptr) {
      // Members that contributed here get the adopted result, as they would a published one.
      result_frame_ = EncodeHalf(relay.model);
      result_contributors_ = relay.contributors;
      result_collector_ = relay.collector;
      // Not to the relaying members, which hold it already.
      answered_.clear();
      for (const std::set<NodeId>* ids : {&contributors_, &abstained_}) {
        for (NodeId id : *ids) Answer(id, now);
      }
      for (NodeId id : relay.by) answered_.emplace(id, Answered{now, o_.resend});
      sum_ = {};
    }
    relayed_.clear();
    return;
  }
}

void ConsensusFinish::RelayToLowest() {
  if (!outcome_.has_value() || !outcome_->averaged || live_.empty()) return;
  const NodeId lowest = live_.front();
  if (lowest == o_.self || lowest >= outcome_->collector || !relayed_to_.insert(lowest).second) {
    return;
  }
  if (relay_frame_ == nullptr) {
    std::vector<float> values = outcome_->model;  // fp16 values already: encoded unchanged
    relay_frame_ = EncodeHalf(values);
  }
  out_.push_back(SendTo{lowest,
                        FinishMessage{FinishMessage::Kind::kResult, o_.dimension,
                                      outcome_->contributors, outcome_->collector},
                        relay_frame_});
}

void ConsensusFinish::View(const std::vector<NodeId>& live, TimePoint now) {
  SetLive(live, now);
  RelayToLowest();
  MaybeAdoptRelayed(now);
  if (!started_ || outcome_.has_value()) return;
  if (collector_ != o_.self && collector_ != live_.front()) {
    // The collector left the view before answering: the next lowest collects.
    collector_ = live_.front();
    if (collector_ != o_.self) {
      Contribute(now);
      return;
    }
    collecting_since_ = now;  // the members contribute here from now on
    AddOwn();
  }
  MaybePublish(now);
}

void ConsensusFinish::Tick(TimePoint now) {
  if (!started_ || outcome_.has_value()) return;
  if (collector_ != o_.self && o_.resend.count() > 0 && now - contributed_at_ >= resend_after_) {
    Contribute(now);
  }
  MaybePublish(now);
  if (!outcome_.has_value() && now >= deadline_) {
    outcome_ = FinishOutcome{false, 0, collector_, {},
                             collector_ == o_.self
                                 ? std::string("nothing to average")
                                 : "no result from collector " + std::to_string(collector_) +
                                       " within " + std::to_string(ToSeconds(o_.result_wait)) + " s"};
  }
}

bool ConsensusFinish::Settled() const {
  if (!outcome_.has_value() || !outcome_->averaged) return false;
  if (outcome_->collector != o_.self) return outcome_->contributors >= live_.size();
  return std::all_of(live_.begin(), live_.end(),
                     [this](NodeId id) { return id == o_.self || receipts_.contains(id); });
}

void ConsensusFinish::MaybePublish(TimePoint now) {
  if (!started_ || collector_ != o_.self || result_frame_ != nullptr) return;
  bool everyone = true;
  for (NodeId id : live_) {
    everyone &= id == o_.self || contributors_.contains(id) || abstained_.contains(id);
  }
  // A collector that trained nothing restarted late: its view may not hold every member yet, so
  // it waits until its view held still for `resend` (a member it did not see yet resends).
  const bool view_still = own_counts_ || now >= view_changed_at_ + o_.resend;
  if ((!everyone || !view_still) && now < collecting_since_ + o_.collect_wait) return;
  JudgeHeld();
  uint32_t count = static_cast<uint32_t>(contributors_.size()) + (own_counts_ ? 1 : 0);
  if (count == 0) {
    if (!everyone) return;  // a trained model may still come, until the deadline
    own_counts_ = true;     // nobody trained: every model is the initial one, this one as good
    AddOwn();
    count = 1;
  }
  // The average in the sum's place: one model's bytes on the collector, not three.
  if (sum_.empty()) sum_.assign(o_.dimension, 0.0f);
  std::vector<float> average = std::exchange(sum_, {});
  const float n = static_cast<float>(count);
  for (float& v : average) v /= n;
  result_frame_ = EncodeHalf(average);  // rounds `average` to what every member adopts
  result_contributors_ = count;
  result_collector_ = o_.self;
  std::set<NodeId> to = contributors_;
  to.insert(abstained_.begin(), abstained_.end());
  to.insert(live_.begin(), live_.end());
  to.erase(o_.self);
  answered_.clear();
  for (NodeId id : to) Answer(id, now);
  outcome_ = FinishOutcome{true, count, o_.self, std::move(average), {}};
  sum_ = {};
}

FinishStepResult ConsensusFinish::JudgeResult(std::span<const float> values,
                                              std::span<const float> own) const {
  // A member that trained nothing has no model of the run's to judge a result by: it takes its
  // collector's, as every member that contributed does (or a majority's relay).
  return own_counts_ ? Within(values, own) : Verdict(FinishVerdict::kAccepted);
}

void ConsensusFinish::JudgeHeld() {
  if (own_counts_ || pending_.empty()) return;
  // A collector that trained nothing judges the contributions against the one closest to the
  // others (the medoid of the first kMedoidOf, in id order): honest models of one run lie within
  // a few percent of each other, so with an honest majority the reference is an honest model.
  std::vector<const std::vector<float>*> first;
  for (const auto& [from, values] : pending_) {
    if (first.size() == kMedoidOf) break;
    first.push_back(&values);
  }
  size_t best = 0;
  double best_sum = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < first.size(); ++i) {
    double sum = 0;
    for (size_t j = 0; j < first.size(); ++j) {
      sum += std::sqrt(coding::SquaredL2Distance(*first[i], *first[j]));
    }
    if (sum < best_sum) best = i, best_sum = sum;
  }
  const std::vector<float> reference = *first[best];
  for (auto& [from, values] : std::exchange(pending_, {})) {
    FinishStepResult r = Within(values, reference);
    if (r.verdict != FinishVerdict::kAccepted) {
      contributors_.erase(from);
      refusals_.emplace_back(from, std::move(r));
      continue;
    }
    AddToSum(values);
  }
}

void ConsensusFinish::SetLive(const std::vector<NodeId>& live, TimePoint now) {
  std::vector<NodeId> next = live.empty() ? std::vector<NodeId>{o_.self} : live;
  if (next != live_) view_changed_at_ = now;
  live_ = std::move(next);
}

void ConsensusFinish::AddOwn() {
  if (!own_counts_) return;
  AddToSum(own_half_);
}

void ConsensusFinish::AddToSum(std::span<const float> values) {
  // Only a collector sums: a member never holds the sum. In float: the terms are fp16 values and
  // the average is rounded to fp16, so float's 24 bits lose nothing the result keeps.
  if (sum_.empty()) sum_.assign(o_.dimension, 0.0f);
  for (size_t k = 0; k < values.size(); ++k) sum_[k] += values[k];
}

uint64_t ConsensusFinish::HeldBytes() const {
  const auto frame = [](const std::shared_ptr<const std::vector<std::byte>>& f) -> uint64_t {
    return f ? f->capacity() : 0;
  };
  uint64_t bytes = CapacityBytes(own_half_) + CapacityBytes(sum_) + frame(own_frame_) +
                   frame(result_frame_) + frame(relay_frame_);
  for (const auto& [from, values] : pending_) bytes += CapacityBytes(values);
  for (const Relay& r : relayed_) bytes += CapacityBytes(r.model);
  if (early_result_) bytes += CapacityBytes(early_result_->model);
  if (outcome_) bytes += CapacityBytes(outcome_->model);
  return bytes;
}

void ConsensusFinish::SendResult(NodeId to) {
  out_.push_back(SendTo{to,
                        FinishMessage{FinishMessage::Kind::kResult, o_.dimension,
                                      result_contributors_, result_collector_},
                        result_frame_});
}

}  // namespace murmur::gossip
