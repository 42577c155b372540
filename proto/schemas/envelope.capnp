@0xc37dfadd8f83dde6;
# The wire header of every murmur message (docs/design.md "Wire"). Rules for changing it are in
# proto/README.md: add fields at the end with the next ordinal, never renumber or retype.

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("murmur::proto::wire");

struct Heartbeat {
  counter @0 :UInt64;
}

# ---- Membership (gossip/membership.h; SWIM, docs/algorithms.md §7.1) ----

enum MemberState {
  alive @0;
  suspect @1;
  dead @2;
  left @3;
}

struct MemberEntry {
  id @0 :UInt64;
  address @1 :Text;
  incarnation @2 :UInt64;
  state @3 :MemberState;
  heartbeat @4 :UInt64;
  stepClock @5 :UInt64;
  samples @6 :UInt64;    # training samples the member has processed in this incarnation
  finished @7 :Bool;     # the member has seen the cluster's budget end the run
}

struct Ping {
  probeId @0 :UInt64;
  gossip @1 :List(MemberEntry);
}

struct Ack {
  probeId @0 :UInt64;
  gossip @1 :List(MemberEntry);
}

struct PingReq {
  probeId @0 :UInt64;
  targetId @1 :UInt64;
  targetAddress @2 :Text;
  gossip @3 :List(MemberEntry);
}

struct Join {
  self @0 :MemberEntry;
}

struct Digest {
  members @0 :List(MemberEntry);
  replyWanted @1 :Bool;
}

struct Leave {}

# ---- Training traffic: headers only, the tensors follow as frames ----

struct UpdateHeader {
  round @0 :UInt64;
  baseSequence @1 :UInt64;
  dimension @2 :UInt32;
  dense @3 :Bool;
  fromInitial @4 :Bool;  # version 0 of this stream is the cluster's seeded initial model
  consensus @5 :Float32 = -1;  # the sender's consensus-distance estimate (-1: none)
}

struct SnapshotRequest {
  fromSequence @0 :UInt64;
  model @1 :Bool;        # the sender's model itself (join, catch-up), not its public copy
  replay @2 :Bool;       # the requester holds the public copy at fromSequence: the updates after it suffice
}

struct SnapshotReply {
  round @0 :UInt64;
  dimension @1 :UInt32;
  model @2 :Bool;
}

struct CodedMessage {
  enum Kind {
    model @0;
    partialGradient @1;
  }
  kind @0 :Kind;
  iteration @1 :UInt64;
  treePosition @2 :UInt32;
  dimension @3 :UInt32;
}

# The consensus finish (gossip/consensus_finish.h); the model follows as a frame (a receipt
# has none).
struct FinishMessage {
  enum Kind {
    contribution @0;
    result @1;
    receipt @2;
  }
  kind @0 :Kind;
  dimension @1 :UInt32;
  contributors @2 :UInt32;
  collector @3 :UInt64;  # result: the member that averaged (0: the sender)
}

struct Envelope {
  schemaVersion @0 :UInt32;
  clusterId @1 :Text;
  senderId @2 :UInt64;
  incarnation @3 :UInt64;
  stepClock @4 :UInt64;
  sequence @5 :UInt64;
  # Tensor frames that follow this header frame in the same multipart message.
  payloadFrames @6 :UInt32;

  payload :union {
    none @7 :Void;
    heartbeat @8 :Heartbeat;
    ping @9 :Ping;
    ack @10 :Ack;
    pingReq @11 :PingReq;
    join @12 :Join;
    digest @13 :Digest;
    leave @14 :Leave;
    update @15 :UpdateHeader;
    snapshotRequest @16 :SnapshotRequest;
    snapshotReply @17 :SnapshotReply;
    coded @18 :CodedMessage;
    finish @19 :FinishMessage;
  }
}
