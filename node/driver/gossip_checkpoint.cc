#include "node/driver/gossip_checkpoint.h"

#include <xxhash.h>

#include <chrono>
#include <cstdio>

#include "gossip/membership.h"

namespace murmur::node {
namespace {

std::string Hex(uint64_t v) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(v));
  return text;
}

uint64_t IdentityHash(const std::string& identity) {
  return XXH3_64bits(identity.data(), identity.size());
}

}  // namespace

Checkpoint MakeGossipCheckpoint(const GossipCheckpointOptions& o, TrainerState trainer,
                                const gossip::GossipNodeState& state,
                                std::span<const float> public_copy) {
  Checkpoint c;
  c.text["kind"] = "gossip-node";
  c.text["model"] = o.model;
  c.text["identity"] = o.identity;
  c.text["rng"] = std::move(trainer.rng);
  c.numbers["identity_hash"] = IdentityHash(o.identity);
  c.numbers["node_id"] = o.node_id;
  c.numbers["step"] = state.step;
  c.numbers["local_steps"] = static_cast<uint64_t>(state.local_steps);
  c.numbers["samples"] = static_cast<uint64_t>(state.samples);
  c.numbers["trainer_steps"] = static_cast<uint64_t>(trainer.steps);
  c.numbers["cursor"] = static_cast<uint64_t>(trainer.cursor);
  c.numbers["written_unix_ms"] = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count());
  c.tensors["params"] = std::move(trainer.params);
  c.tensors["velocity"] = std::move(trainer.velocity);
  c.tensors["public_copy"].assign(public_copy.begin(), public_copy.end());
  c.indices["order"] = std::move(trainer.order);
  return c;
}

StatusOr<GossipResume> ReadGossipCheckpoint(const GossipCheckpointOptions& o, const Checkpoint& c) {
  const std::string path = o.Path();
  MURMUR_ASSIGN_OR_RETURN(const std::string kind, c.Text("kind"));
  if (kind != "gossip-node") {
    return FailedPreconditionError("'" + path + "' is a " + kind + " file, not a gossip node's checkpoint");
  }
  MURMUR_ASSIGN_OR_RETURN(const std::string model, c.Text("model"));
  MURMUR_ASSIGN_OR_RETURN(const uint64_t hash, c.Number("identity_hash"));
  MURMUR_ASSIGN_OR_RETURN(const uint64_t node_id, c.Number("node_id"));
  const std::string move_it = "; move it away or give another --checkpoint-dir to start afresh";
  if (model != o.model) {
    return FailedPreconditionError("'" + path + "' was written for the model " + model +
                                   ", this node trains " + o.model + move_it);
  }
  if (hash != IdentityHash(o.identity)) {
    const auto saved = c.Text("identity");
    return FailedPreconditionError("'" + path + "' was written by another run (" +
                                   (saved.ok() ? *saved : Hex(hash)) + "; this one is " +
                                   o.identity + ")" + move_it);
  }
  if (node_id != o.node_id) {
    return FailedPreconditionError("'" + path + "' belongs to node " + std::to_string(node_id) +
                                   ", this is node " + std::to_string(o.node_id) + move_it);
  }
  GossipResume r;
  MURMUR_ASSIGN_OR_RETURN(r.trainer.params, c.Tensor("params"));
  MURMUR_ASSIGN_OR_RETURN(r.trainer.velocity, c.Tensor("velocity"));
  MURMUR_ASSIGN_OR_RETURN(r.trainer.rng, c.Text("rng"));
  MURMUR_ASSIGN_OR_RETURN(r.trainer.order, c.Indices("order"));
  MURMUR_ASSIGN_OR_RETURN(const uint64_t cursor, c.Number("cursor"));
  MURMUR_ASSIGN_OR_RETURN(const uint64_t trainer_steps, c.Number("trainer_steps"));
  MURMUR_ASSIGN_OR_RETURN(r.node.step, c.Number("step"));
  MURMUR_ASSIGN_OR_RETURN(const uint64_t local_steps, c.Number("local_steps"));
  MURMUR_ASSIGN_OR_RETURN(const uint64_t samples, c.Number("samples"));
  MURMUR_ASSIGN_OR_RETURN(r.node.public_copy, c.Tensor("public_copy"));
  constexpr uint64_t kMax = uint64_t{1} << 53;  // any count a real run reaches
  if (cursor >= kMax || trainer_steps >= kMax || local_steps >= kMax || samples >= kMax ||
      r.node.step >= gossip::kMaxStepClock) {
    return DataLossError("'" + path + "' holds an implausible clock or count");
  }
  r.trainer.cursor = static_cast<int64_t>(cursor);
  r.trainer.steps = static_cast<int64_t>(trainer_steps);
  r.node.local_steps = static_cast<int64_t>(local_steps);
  r.node.samples = static_cast<int64_t>(samples);
  return r;
}

}  // namespace murmur::node
