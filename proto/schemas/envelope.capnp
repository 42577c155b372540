@0xc37dfadd8f83dde6;
# The wire header of every murmur message (DESIGN.md "Wire"). Rules for changing it are in
# proto/README.md: add fields at the end with the next ordinal, never renumber or retype.

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("murmur::proto::wire");

struct Heartbeat {
  counter @0 :UInt64;
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
  }
}
