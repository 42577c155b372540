#pragma once
// The plain C++ form of the wire Envelope (docs/design.md "Wire"): what every message between nodes
// carries. proto/ converts it to and from Cap'n Proto bytes; protocol code only sees these
// structs. Large tensors never live here: they travel as separate frames after the header frame,
// and `payload_frames` says how many follow.

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace murmur::gossip {

using NodeId = uint64_t;
// Bumped each time a node restarts (or refutes a suspicion), so peers can tell a new life of the
// same id from stale messages of the old one.
using Incarnation = uint64_t;

// The schema version this build writes and the only one it accepts.
inline constexpr uint32_t kSchemaVersion = 1;

// A liveness counter (kept for compatibility; membership gossips MemberEntry digests).
struct Heartbeat {
  uint64_t counter = 0;
  bool operator==(const Heartbeat&) const = default;
};

// No payload: the header alone (a step-clock announcement, for instance).
struct NoPayload {
  bool operator==(const NoPayload&) const = default;
};

// ---- Membership (gossip/membership.h) ----

// Ordered by "how dead": the merge rules of SWIM (docs/algorithms.md §7.1) compare incarnations
// first, then these states.
enum class MemberState : uint8_t { kAlive = 0, kSuspect = 1, kDead = 2, kLeft = 3 };

// What one node believes about one member. Gossiped in digests and piggybacked on probes.
struct MemberEntry {
  NodeId id = 0;
  std::string address;  // transport endpoint, e.g. "tcp://10.0.0.7:7070"
  Incarnation incarnation = 0;
  MemberState state = MemberState::kAlive;
  uint64_t heartbeat = 0;   // the member's own counter, merged by max within an incarnation
  uint64_t step_clock = 0;  // the member's training clock, merged by max (soft sync)
  uint64_t samples = 0;     // training samples processed this incarnation, merged by max (budget)
  bool finished = false;    // the member saw the cluster's budget end the run, merged by "or"
  bool operator==(const MemberEntry&) const = default;
};

// SWIM direct probe; `gossip` starts with the sender's own entry.
struct Ping {
  uint64_t probe_id = 0;
  std::vector<MemberEntry> gossip;
  bool operator==(const Ping&) const = default;
};
// Answer to a Ping (or a relayed answer to a PingReq), echoing its probe id.
struct Ack {
  uint64_t probe_id = 0;
  std::vector<MemberEntry> gossip;
  bool operator==(const Ack&) const = default;
};
// SWIM indirect probe: "ping `target` for me and relay its ack".
struct PingReq {
  uint64_t probe_id = 0;
  NodeId target_id = 0;
  std::string target_address;
  std::vector<MemberEntry> gossip;
  bool operator==(const PingReq&) const = default;
};
// Sent to a seed address by a node that knows nobody yet; answered with a full Digest.
struct Join {
  MemberEntry self;
  bool operator==(const Join&) const = default;
};
// The heartbeat digest: the sender's whole member table (its own entry first). Gossiped to a few
// random members each period; `reply_wanted` asks for the receiver's table back (push-pull).
struct Digest {
  std::vector<MemberEntry> members;
  bool reply_wanted = false;
  bool operator==(const Digest&) const = default;
};
// Graceful leave: the sender is going away at the envelope's incarnation.
struct Leave {
  bool operator==(const Leave&) const = default;
};

// ---- Training traffic (headers only; the tensor bytes are the following frames) ----

// One step of a public-copy stream (CHOCO, gossip/choco.h): frame 0 is coding::EncodeUpdate's
// bytes. A stream belongs to one sender incarnation; its public copy has a version that every
// update advances by one.
struct UpdateHeader {
  uint64_t round = 0;          // the version of the public copy this update produces
  uint64_t base_sequence = 0;  // the version it applies to (a receiver at another version has a gap)
  uint32_t dimension = 0;
  bool dense = false;
  bool from_initial = false;   // version 0 is the cluster's seeded initial model
  // The sender's consensus-distance estimate (its consensus control's average, relative) when it
  // sent the update; -1: none. Neighbours average it with their own (gossip_node.h).
  float consensus = -1;
  bool operator==(const UpdateHeader&) const = default;
};
// Asks the receiver for its public copy (after a gap, a new neighbour, or a restart): the updates
// after `from_sequence` when `replay` and the receiver still holds them, else a dense snapshot.
struct SnapshotRequest {
  uint64_t from_sequence = 0;  // the last version the requester applied from the receiver
  bool model = false;          // the receiver's model itself (join, catch-up), not its public copy
  bool replay = false;         // the requester holds the public copy at from_sequence
  bool operator==(const SnapshotRequest&) const = default;
};
// A dense snapshot; frame 0 holds the parameters.
struct SnapshotReply {
  uint64_t round = 0;  // the version of the public copy (model snapshots: the sender's step)
  uint32_t dimension = 0;
  bool model = false;
  bool operator==(const SnapshotReply&) const = default;
};
// CodedReduce: a model sent down the tree or a coded partial gradient sent up; frame 0
// holds the dense vector.
struct CodedMessage {
  enum class Kind : uint8_t { kModel = 0, kPartialGradient = 1 };
  Kind kind = Kind::kModel;
  uint64_t iteration = 0;
  uint32_t tree_position = 0;
  uint32_t dimension = 0;
  bool operator==(const CodedMessage&) const = default;
};

// The consensus finish (gossip/consensus_finish.h): a member's final model sent to the collector,
// or the collector's average sent back; frame 0 is a dense coding::EncodeUpdate (fp16 values).
struct FinishMessage {
  // kReceipt: the sender adopted the result of `collector` with `contributors` (no frame).
  enum class Kind : uint8_t { kContribution = 0, kResult = 1, kReceipt = 2 };
  Kind kind = Kind::kContribution;
  uint32_t dimension = 0;
  // kResult: how many members' models the average holds; kContribution: 1, or 0 when the member
  // trained nothing and only asks for the result.
  uint32_t contributors = 0;
  NodeId collector = 0;  // kResult: the member that averaged them (0: the sender)
  bool operator==(const FinishMessage&) const = default;
};

using Payload = std::variant<NoPayload, Heartbeat, Ping, Ack, PingReq, Join, Digest, Leave,
                             UpdateHeader, SnapshotRequest, SnapshotReply, CodedMessage,
                             FinishMessage>;

// How many tensor frames each payload kind must carry: header-only kinds none, the rest one.
inline uint32_t RequiredPayloadFrames(const Payload& payload) {
  // A model SnapshotReply of dimension 0 is a refusal (the sender is over its snapshot rate):
  // nothing follows it.
  if (const auto* r = std::get_if<SnapshotReply>(&payload))
    return r->model && r->dimension == 0 ? 0 : 1;
  if (const auto* f = std::get_if<FinishMessage>(&payload))
    return f->kind == FinishMessage::Kind::kReceipt ? 0 : 1;
  return std::holds_alternative<UpdateHeader>(payload) ||
                 std::holds_alternative<CodedMessage>(payload) ||
                 std::holds_alternative<FinishMessage>(payload)
             ? 1
             : 0;
}

struct Envelope {
  uint32_t schema_version = kSchemaVersion;
  std::string cluster_id;
  NodeId sender_id = 0;
  Incarnation incarnation = 0;
  uint64_t step_clock = 0;  // optimizer steps the sender has taken
  uint64_t sequence = 0;    // per sender and incarnation, increasing by one per message
  uint32_t payload_frames = 0;
  Payload payload;

  bool operator==(const Envelope&) const = default;
};

}  // namespace murmur::gossip
