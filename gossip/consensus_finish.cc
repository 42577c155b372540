#include "gossip/consensus_finish.h"

#include <algorithm>
#include <cmath>

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
  u.values = values;
  auto bytes = std::make_shared<std::vector<std::byte>>();
  coding::EncodeUpdate(u, *bytes);
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
  }
  return "unknown";
}

ConsensusFinish::ConsensusFinish(const ConsensusFinishOptions& options)
    : o_(options), sum_(options.dimension, 0.0) {
  MURMUR_CHECK(o_.dimension > 0) << "a consensus finish needs the model's dimension";
}

void ConsensusFinish::Start(std::span<const float> model, const std::vector<NodeId>& live,
                            TimePoint now) {
  MURMUR_CHECK(!started_ && model.size() == o_.dimension) << "Start once, with the model";
  started_ = true;
  started_at_ = now;
  deadline_ = now + o_.result_wait;
  live_ = live.empty() ? std::vector<NodeId>{o_.self} : live;
  std::map<NodeId, std::vector<float>> pending = std::exchange(pending_, {});
  if (early_result_.has_value() && early_result_->collector == live_.front()) {
    FinishStepResult r = Within(early_result_->model, model);
    if (r.verdict == FinishVerdict::kAccepted) {
      outcome_ = std::move(early_result_);
      early_result_.reset();
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
    return;
  }
  for (size_t k = 0; k < own_half_.size(); ++k) sum_[k] += own_half_[k];
  // What came before Start, judged against the final model now.
  for (auto& [from, values] : pending) {
    FinishStepResult r = Within(values, model);
    if (r.verdict != FinishVerdict::kAccepted) {
      refusals_.emplace_back(from, std::move(r));
      continue;
    }
    for (size_t k = 0; k < values.size(); ++k) sum_[k] += values[k];
    contributors_.insert(from);
  }
  MaybePublish(now);
}

void ConsensusFinish::Contribute(TimePoint now) {
  sent_to_.insert(collector_);
  contributed_at_ = now;
  out_.push_back(SendTo{collector_,
                        FinishMessage{FinishMessage::Kind::kContribution, o_.dimension, 0},
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
  if (header.kind == FinishMessage::Kind::kContribution) {
    if (result_frame_ != nullptr) {  // late: answered, once, with what the others adopted
      if (!answered_.insert(from).second) return Verdict(FinishVerdict::kDuplicate);
      SendResult(from);
      return Verdict(FinishVerdict::kAnswered);
    }
    if (started_ && collector_ != o_.self) {
      return {FinishVerdict::kNotExpected, coding::DecodeFailure::kNone,
              FailedPreconditionError("a contribution to a node that is not the collector")};
    }
    if (contributors_.contains(from)) return Verdict(FinishVerdict::kDuplicate);
    std::vector<float> values;
    FinishStepResult r = Decode(frame, values);
    if (r.verdict != FinishVerdict::kAccepted) return r;
    if (!started_) {
      pending_[from] = std::move(values);
      return Verdict(FinishVerdict::kDeferred);
    }
    r = Within(values, own);
    if (r.verdict != FinishVerdict::kAccepted) return r;
    for (size_t k = 0; k < values.size(); ++k) sum_[k] += values[k];
    contributors_.insert(from);
    MaybePublish(now);
    return r;
  }
  // A result.
  if (outcome_.has_value() || early_result_.has_value()) return Verdict(FinishVerdict::kDuplicate);
  const bool asked = sent_to_.contains(from);
  const bool lowest = !live_.empty() && live_.front() == from;
  if (!asked && !lowest) {
    return {FinishVerdict::kNotExpected, coding::DecodeFailure::kNone,
            FailedPreconditionError("a finish result from a member that is not the collector")};
  }
  if (header.contributors == 0) {
    return {FinishVerdict::kRejected, coding::DecodeFailure::kNone,
            InvalidArgumentError("a finish result of no contributors")};
  }
  std::vector<float> values;
  FinishStepResult r = Decode(frame, values);
  if (r.verdict != FinishVerdict::kAccepted) return r;
  FinishOutcome o{true, header.contributors, from, std::move(values), {}};
  if (!started_) {  // judged against the final model at Start
    early_result_ = std::move(o);
    return Verdict(FinishVerdict::kDeferred);
  }
  r = Within(o.model, own);
  if (r.verdict == FinishVerdict::kAccepted) outcome_ = std::move(o);
  return r;
}

void ConsensusFinish::View(const std::vector<NodeId>& live, TimePoint now) {
  live_ = live.empty() ? std::vector<NodeId>{o_.self} : live;
  if (!started_ || outcome_.has_value()) return;
  if (collector_ != o_.self && collector_ != live_.front()) {
    // The collector left the view before answering: the next lowest collects.
    collector_ = live_.front();
    if (collector_ != o_.self) {
      Contribute(now);
      return;
    }
    for (size_t k = 0; k < own_half_.size(); ++k) sum_[k] += own_half_[k];
  }
  MaybePublish(now);
}

void ConsensusFinish::Tick(TimePoint now) {
  if (!started_ || outcome_.has_value()) return;
  if (collector_ != o_.self && o_.resend.count() > 0 && now - contributed_at_ >= o_.resend) {
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
  return live_.size() == 1;
}

void ConsensusFinish::MaybePublish(TimePoint now) {
  if (!started_ || collector_ != o_.self || result_frame_ != nullptr) return;
  bool everyone = true;
  for (NodeId id : live_) everyone &= id == o_.self || contributors_.contains(id);
  if (!everyone && now < started_at_ + o_.collect_wait) return;
  const uint32_t count = static_cast<uint32_t>(contributors_.size() + 1);
  std::vector<float> average(o_.dimension);
  for (size_t k = 0; k < average.size(); ++k) average[k] = static_cast<float>(sum_[k] / count);
  result_frame_ = EncodeHalf(average);  // rounds `average` to what every member adopts
  result_contributors_ = count;
  std::set<NodeId> to = contributors_;
  to.insert(live_.begin(), live_.end());
  to.erase(o_.self);
  for (NodeId id : to) SendResult(id);
  answered_ = std::move(to);
  outcome_ = FinishOutcome{true, count, o_.self, std::move(average), {}};
  sum_ = {};
}

void ConsensusFinish::SendResult(NodeId to) {
  out_.push_back(SendTo{to, FinishMessage{FinishMessage::Kind::kResult, o_.dimension,
                                          result_contributors_},
                        result_frame_});
}

}  // namespace murmur::gossip
