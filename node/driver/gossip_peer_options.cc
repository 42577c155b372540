#include "node/driver/gossip_peer_options.h"

#include <algorithm>
#include <cmath>

namespace murmur::node {

Status GossipPeerOptions::CheckBudget() const {
  if (epochs <= 0 && node.target_accuracy <= 0 && node.time_limit.count() <= 0) {
    return InvalidArgumentError(
        "no budget: set epochs, target_accuracy or time_limit_s (a gossip run ends on a "
        "cluster-wide budget)");
  }
  return OkStatus();
}

Status GossipPeerOptions::Validate() const {
  MURMUR_RETURN_IF_ERROR(CheckBudget());
  if (epochs > 0 && epoch_samples <= 0) {
    return InvalidArgumentError(
        "epochs needs epoch_samples: the training samples of one epoch over the whole cluster");
  }
  if (train.lr_reference_batch > 0 && expect_members <= 0) {
    return InvalidArgumentError(
        "lr_reference_batch (the linear scaling rule) needs expect_members: the cluster's size "
        "makes its global batch");
  }
  if (node.target_accuracy < 0 || node.target_accuracy > 1) {
    return InvalidArgumentError("target_accuracy is a fraction in [0, 1]");
  }
  if (eval_samples < 1) return InvalidArgumentError("eval_samples must be at least 1");
  if (shard_samples < 0) return InvalidArgumentError("shard_samples must be at least 0");
  return OkStatus();  // the machine's own rules: GossipNode::Create, once its fields are filled
}

int64_t GossipPeerOptions::ShardRows() const {
  if (shard_samples > 0) return shard_samples;
  return std::max<int64_t>(1, epoch_samples / std::max(1, expect_members));
}

int64_t GossipPeerOptions::BudgetSamples() const {
  if (epochs <= 0) return 0;
  return static_cast<int64_t>(std::ceil(epochs * static_cast<double>(epoch_samples)));
}

StatusOr<std::optional<LrSchedule>> GossipPeerOptions::Schedule() const {
  if (!schedule_rate) return std::optional<LrSchedule>();
  MURMUR_ASSIGN_OR_RETURN(LrSchedule s,
                          ScheduleFor(train, BudgetSamples(), epoch_samples,
                                      train.batch_size * std::max(1, expect_members)));
  return std::optional<LrSchedule>(std::move(s));
}

}  // namespace murmur::node
