#include "gossip/round_mixer.h"

#include <utility>

#include "base/check.h"
#include "kernels/compress_ops.h"
#include "kernels/gossip_ops.h"

namespace murmur::gossip {

Status RoundMixer::KeepAside(std::span<const float> x) {
  if (round_model_.size() != x.size()) {
    MURMUR_ASSIGN_OR_RETURN(round_model_, kernels::Buffer<float>::Uninitialized(device_, x.size()));
  }
  return kernels::Copy<float>(device_, round_model_.span(), device_, x);
}

StatusOr<std::optional<OuterStats>> RoundMixer::Mix(ChocoGossip& choco, std::span<float> x,
                                                    bool carried, const std::vector<NodeId>& view,
                                                    uint64_t round,
                                                    const std::function<double(NodeId)>& damping,
                                                    ChocoRoundStats& stats, bool outer_active) {
  MURMUR_CHECK(!carried || round_model_.size() == x.size()) << "no model at the round kept";
  const std::span<float> mixed = carried ? round_model_.span() : x;
  // x holds the steps since the round (x − x_round) while the model at the round is mixed.
  if (carried) MURMUR_CHECK_OK(kernels::Axpy(device_, -1.0f, round_model_.span(), x));
  choco.Mix(mixed, view, round, damping, stats);
  std::optional<OuterStats> step;
  Status s = OkStatus();
  if (outer_active && !outer_.has_value()) {
    auto created = OuterOptimizer::Create(*options_, device_, mixed);
    if (created.ok()) outer_ = *std::move(created);
    s = created.status();
  } else if (outer_active) {
    auto stepped = outer_->Step(mixed);
    if (stepped.ok()) step = *stepped;
    s = stepped.status();
  }
  if (carried) MURMUR_CHECK_OK(kernels::Axpy(device_, 1.0f, round_model_.span(), x));
  if (!s.ok()) return s;
  return step;
}

}  // namespace murmur::gossip
