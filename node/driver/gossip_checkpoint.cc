#include "node/driver/gossip_checkpoint.h"

#include <xxhash.h>

#include <chrono>
#include <cstdio>
#include <set>

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

// A section of the caller's that takes one of the checkpoint's own names (nullptr: none).
template <typename Map>
const std::string* OwnName(const Map& sections) {
  for (const auto& [name, value] : sections) {
    if (IsGossipCheckpointSection(name)) return &name;
  }
  return nullptr;
}

// The sections of `from` that are the caller's.
template <typename Map>
void CopyCallers(const Map& from, Map& to) {
  for (const auto& [name, value] : from) {
    if (!IsGossipCheckpointSection(name)) to[name] = value;
  }
}

}  // namespace

bool IsGossipCheckpointSection(const std::string& name) {
  static const std::set<std::string> own = {
      "kind",        "model",   "identity",        "identity_hash", "node_id",    "step",
      "local_steps", "samples", "written_unix_ms", "params",        "public_copy"};
  return own.count(name) > 0;
}

StatusOr<Checkpoint> MakeGossipCheckpoint(const GossipCheckpointOptions& o,
                                          std::vector<float> params, Checkpoint caller,
                                          const gossip::GossipNodeState& state,
                                          std::span<const float> public_copy) {
  for (const std::string* own : {OwnName(caller.text), OwnName(caller.numbers),
                                 OwnName(caller.tensors), OwnName(caller.indices)}) {
    if (own != nullptr) {
      return InvalidArgumentError("the caller's checkpoint section '" + *own +
                                  "' is one of murmur's own");
    }
  }
  Checkpoint c = std::move(caller);
  c.text["kind"] = "gossip-node";
  c.text["model"] = o.model;
  c.text["identity"] = o.identity;
  c.numbers["identity_hash"] = IdentityHash(o.identity);
  c.numbers["node_id"] = o.node_id;
  c.numbers["step"] = state.step;
  c.numbers["local_steps"] = static_cast<uint64_t>(state.local_steps);
  c.numbers["samples"] = static_cast<uint64_t>(state.samples);
  c.numbers["written_unix_ms"] =
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count());
  c.tensors["params"] = std::move(params);
  c.tensors["public_copy"].assign(public_copy.begin(), public_copy.end());
  return c;
}

StatusOr<GossipResume> ReadGossipCheckpoint(const GossipCheckpointOptions& o, const Checkpoint& c) {
  const std::string path = o.Path();
  MURMUR_ASSIGN_OR_RETURN(const std::string kind, c.Text("kind"));
  if (kind != "gossip-node") {
    return FailedPreconditionError("'" + path + "' is a " + kind +
                                   " file, not a gossip node's checkpoint");
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
  MURMUR_RETURN_IF_ERROR(CheckTensorValues(c, path));
  GossipResume r;
  MURMUR_ASSIGN_OR_RETURN(r.params, c.Tensor("params"));
  MURMUR_ASSIGN_OR_RETURN(r.node.step, c.Number("step"));
  MURMUR_ASSIGN_OR_RETURN(const uint64_t local_steps, c.Number("local_steps"));
  MURMUR_ASSIGN_OR_RETURN(const uint64_t samples, c.Number("samples"));
  MURMUR_ASSIGN_OR_RETURN(r.node.public_copy, c.Tensor("public_copy"));
  constexpr uint64_t kMax = uint64_t{1} << 53;  // any count a real run reaches
  if (local_steps >= kMax || samples >= kMax || r.node.step >= gossip::kMaxStepClock) {
    return DataLossError("'" + path + "' holds an implausible clock or count");
  }
  r.node.local_steps = static_cast<int64_t>(local_steps);
  r.node.samples = static_cast<int64_t>(samples);
  CopyCallers(c.text, r.caller.text);
  CopyCallers(c.numbers, r.caller.numbers);
  CopyCallers(c.tensors, r.caller.tensors);
  CopyCallers(c.indices, r.caller.indices);
  return r;
}

}  // namespace murmur::node
