#include "gossip/gossip_node_options.h"

#include "base/check.h"

namespace murmur::gossip {

coding::CompressorOptions AutoCompressor(bool outer) {
  auto spec = coding::ParseCompressorSpec(outer ? "int8" : "topk:0.01,values=fp16");
  MURMUR_CHECK(spec.ok());
  return *spec;
}

ChocoOptions DefaultNodeChoco() {
  ChocoOptions o;
  o.compressor = AutoCompressor(/*outer=*/true);
  return o;
}

Status GossipNodeOptions::Validate() const {
  if (consensus_target < 0 || consensus_slack < 1) {
    return InvalidArgumentError("consensus_target must be >= 0 and consensus_slack >= 1");
  }
  if (local_steps < 0 || post_local_steps < 1) {
    return InvalidArgumentError(
        "local_steps must be at least 0 (0: the small-cluster schedule) and post_local_steps at "
        "least 1");
  }
  if (join_attempts < 1) return InvalidArgumentError("join_attempts must be at least 1");
  if (shard_rows < 1) return InvalidArgumentError("shard_rows must be at least 1");
  if (finish_wait.count() < 0) return InvalidArgumentError("finish_wait must not be negative");
  if (outer.has_value()) MURMUR_RETURN_IF_ERROR(outer->Validate());
  return OkStatus();
}

}  // namespace murmur::gossip
