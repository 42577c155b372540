#include "gossip/finish_stage.h"

#include <cmath>
#include <utility>

#include "base/check.h"
#include "base/log.h"
#include "coding/vector_ops.h"

namespace murmur::gossip {

FinishStage::FinishStage(NodeId self, uint32_t dimension, Duration finish_wait)
    : self_(self), dimension_(dimension), wait_(finish_wait) {}

void FinishStage::Ensure(const std::vector<NodeId>& live, TimePoint now) {
  if (finish_ != nullptr || wait_.count() <= 0) return;
  ConsensusFinishOptions f;
  f.self = self_;
  f.dimension = dimension_;
  f.result_wait = wait_;
  f.collect_wait = wait_ / 2;
  finish_ = std::make_unique<ConsensusFinish>(f);
  finish_->View(live, now);
}

void FinishStage::Step(NodeId from, const FinishMessage& header, std::span<const std::byte> frame,
                       const std::function<std::span<const float>()>& own, TimePoint now) {
  const FinishStepResult r =
      finish_->Step(from, header, frame, final_model_.empty() ? own() : final_model_, now);
  ++verdicts_[std::string(FinishVerdictName(r.verdict))];
  // The machine's own refusals (held contributions judged now) come first.
  std::vector<Refusal> refused = TakeRefusals();
  if (r.verdict == FinishVerdict::kOutlier) {
    refused.push_back({kRejectOutlier, from, "finish: " + r.status.ToString()});
  } else if (r.verdict == FinishVerdict::kRejected) {
    refused.push_back({DecodeRefusal(r.failure), from, "finish: " + r.status.ToString()});
  } else if (r.verdict == FinishVerdict::kNotExpected) {
    refused.push_back({kRejectProtocol, from, "finish: " + r.status.ToString()});
  }
  refusals_ = std::move(refused);
}

void FinishStage::Start(std::span<const float> final_model, const std::vector<NodeId>& live,
                        TimePoint now, bool trained) {
  MURMUR_CHECK(final_model_.empty()) << "the finish starts once";
  if (!trained) {
    MURMUR_LOG_INFO("node {}: trained no step: its model is left out of the consensus finish",
                    self_);
  }
  MURMUR_CHECK_EQ(final_model.size(), dimension_);
  final_model_ = final_model;
  finish_->Start(final_model_, live, now, trained);
}

double FinishStage::Moved(std::span<const float> average) const {
  const double moved = coding::SquaredL2Distance(average, final_model_);
  const double norm = coding::SquaredL2Norm(average);
  return norm > 0 ? std::sqrt(moved / norm) : 0;
}

FinishStage::Report FinishStage::Conclude() const {
  const std::optional<FinishOutcome>& o = finish_->outcome();
  if (!o.has_value() || !o->averaged) {
    MURMUR_LOG_WARN(
        "node {}: missed the consensus finish ({}): the run ends on this node's own "
        "model, which is not the cluster's",
        self_, o.has_value() ? o->why : "the operator stopped the node while it waited");
    return {};
  }
  const Report r{true, o->contributors, o->collector, Moved(o->model)};
  MURMUR_LOG_INFO(
      "node {}: adopted the average of {} members' models from node {} ({:.3g} "
      "relative from its own)",
      self_, r.contributors, r.collector, r.moved);
  return r;
}

std::vector<Refusal> FinishStage::TakeRefusals() {
  std::vector<Refusal> out = std::exchange(refusals_, {});
  if (finish_ == nullptr) return out;
  for (const auto& [from, refused] : finish_->TakeRefusals()) {
    ++verdicts_[std::string(FinishVerdictName(refused.verdict))];
    out.push_back({kRejectOutlier, from, "finish: " + refused.status.ToString()});
  }
  return out;
}

}  // namespace murmur::gossip
