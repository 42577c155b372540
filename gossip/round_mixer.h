#pragma once
// What a gossip round does to the model once it mixes (gossip_node.h "training"): CHOCO's
// consensus step (choco.h, step 5) on the model at the round, then, while the outer optimizer is
// active, its outer step on the mixed model (outer_optimizer.h; the first active round starts the
// anchor instead). Under OuterOptions::overlap the node stepped on while the round waited: the
// model at the round, kept aside when it was published, is mixed and stepped, and the steps
// taken since go on top of the new anchor.
//
// Invariants: the model at the round has the model's size while kept; an adopted model (a
// catch-up, a snapshot, the finish's average) restarts the anchor. Sans-IO; the arithmetic runs
// on the model's device. Thread safety: none.

#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "base/memory_use.h"
#include "base/status.h"
#include "gossip/choco.h"
#include "gossip/outer_optimizer.h"
#include "kernels/device.h"
#include "kernels/memory.h"

namespace murmur::gossip {

class RoundMixer {
 public:
  RoundMixer(std::optional<OuterOptions> outer, kernels::Device device)
      : options_(std::move(outer)), device_(device) {}

  // Keeps `x`, the model at the round, aside for an overlapped round.
  Status KeepAside(std::span<const float> x);

  // Mixes the round into `x`: the model at the round when `carried` (steps were taken since),
  // else `x` itself; then the outer step when `outer_active`. Its stats when it took one.
  StatusOr<std::optional<OuterStats>> Mix(ChocoGossip& choco, std::span<float> x, bool carried,
                                          const std::vector<NodeId>& view, uint64_t round,
                                          const std::function<double(NodeId)>& damping,
                                          ChocoRoundStats& stats, bool outer_active);

  // The model was replaced: the outer optimizer's anchor starts from it.
  void Restart(std::span<const float> x) {
    if (outer_.has_value()) outer_->Restart(x);
  }
  // The outer optimizer took its first active round (its anchor exists).
  bool outer_started() const { return outer_.has_value(); }
  // Training is over: the outer optimizer's state and the kept model are released.
  void Close() {
    outer_.reset();
    round_model_ = {};
  }
  // Its buffers (base/memory_use.h): outer_anchor, outer_momentum and round_model.
  void AddMemory(MemoryUse& memory) const {
    memory.Add("outer_anchor", outer_ ? outer_->anchor().size_bytes() : 0);
    memory.Add("outer_momentum", outer_ ? outer_->velocity().size_bytes() : 0);
    memory.Add("round_model", round_model_.size() * sizeof(float));
  }

 private:
  const std::optional<OuterOptions> options_;
  const kernels::Device device_;
  std::optional<OuterOptimizer> outer_;  // from the first outer round on
  kernels::Buffer<float> round_model_;   // the model at the round, under overlap
};

}  // namespace murmur::gossip
