#include "node/config/peer_keys.h"

namespace murmur::node {

const std::set<std::string>& PeerLibraryKeys() {
  static const std::set<std::string> keys = {
      // the cluster
      "listen", "advertise", "seeds", "cluster", "id", "incarnation", "probe_interval_ms",
      "probe_timeout_ms", "suspicion_multiplier", "gossip_fanout", "expect_members",
      "cluster_key_file", "node_key_file", "allowed_keys_file", "plaintext", "admin",
      "admin_token_file", "log_level", "report_interval_ms",
      // the gossip
      "compress", "gamma", "clip_fraction", "topology", "random_peers", "local_steps",
      "post_local_epoch", "post_local_steps", "max_lead", "max_wait_ms", "max_wait_steps",
      "straggler_hold_s", "staleness_scale", "consensus_target", "consensus_slack", "outer",
      "straggle",
      // the budget, the schedule, the end
      "epochs", "time_limit_s", "finish_wait_s", "lr", "lr_schedule", "warmup_epochs",
      "lr_reference_batch", "batch_size", "save_model"};
  return keys;
}

std::string WhyNotAPeerLibraryKey(const std::string& key) {
  if (key == "mode") return "the library runs gossip training";
  if (key == "target_accuracy" || key == "eval_every") {
    return "it needs an evaluation: pass one (Start's `evaluate`, Python's evaluate=)";
  }
  if (key == "eval_samples") return "the caller's evaluation decides what it evaluates on";
  if (key == "checkpoint_dir" || key == "checkpoint_every") {
    return "checkpoints need the caller's optimizer state: give Hooks::save_state and "
           "restore_state (C++), or checkpoint the model yourself";
  }
  if (key == "init" || key == "seed") return "the caller initializes its model (see same_init)";
  if (key == "shard_index" || key == "shard_count" || key == "shard_strategy") {
    return "the caller reads its own data (see shard_samples)";
  }
  if (key == "run_dir" || key == "report" || key == "duration") {
    return "it belongs to `murmur node`'s own output and lifetime";
  }
  return "it configures murmur's own model, data or training, not the caller's";
}

}  // namespace murmur::node
