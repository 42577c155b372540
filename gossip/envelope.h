#pragma once
// The plain C++ form of the wire Envelope (DESIGN.md "Wire"): what every message between nodes
// carries. proto/ converts it to and from Cap'n Proto bytes; protocol code only sees this struct.
// Large tensors never live here: they travel as separate frames after the header frame, and
// `payload_frames` says how many follow.

#include <cstdint>
#include <string>
#include <variant>

namespace murmur::gossip {

using NodeId = uint64_t;
// Bumped each time a node restarts (or refutes a suspicion), so peers can tell a new life of the
// same id from stale messages of the old one.
using Incarnation = uint64_t;

// The schema version this build writes and the only one it accepts.
inline constexpr uint32_t kSchemaVersion = 1;

// A liveness counter, gossiped by the membership protocol.
struct Heartbeat {
  uint64_t counter = 0;
  bool operator==(const Heartbeat&) const = default;
};

// No payload: the header alone (a step-clock announcement, for instance).
struct NoPayload {
  bool operator==(const NoPayload&) const = default;
};

using Payload = std::variant<NoPayload, Heartbeat>;

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
