#pragma once
// A simulated message as the real node puts it on the wire (PeerNode::Emit): the header frame
// encoded by proto::EncodeEnvelope and the tensor frame, with the bytes the links carry; and the
// receiver's side, proto::DecodeEnvelope with the node's limits and CheckPayloadFrames. Shared by
// the event-driven simulator (simulator.h) and the consensus rounds (consensus.h).

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "gossip/envelope.h"

namespace murmur::sim {

struct Wire {
  size_t from = 0, to = 0;
  uint64_t bytes = 0;  // on the links: header + tensor frame × wire_scale (StretchedFrameBytes)
  bool own_lane = false;  // a membership message (network.h: lanes)
  std::string header;
  std::shared_ptr<const std::vector<std::byte>> frame;
};

// A copy of tensor frame `frame` with a NaN where its decoder reads a value: the first value of
// a dense fp32 frame, or the scale of a sign or levels frame; its checksum rewritten, so only
// the check of finite values can refuse it. nullptr when the frame has neither (a narrowed
// float coding cannot hold a NaN).
std::shared_ptr<const std::vector<std::byte>> WithNonFinite(const std::vector<std::byte>& frame);

// Encodes `envelope` (cluster "sim"; its payload_frames set from `frame`) from node `from` to
// node `to`.
std::shared_ptr<Wire> MakeWire(size_t from, size_t to, gossip::Envelope envelope,
                               std::shared_ptr<const std::vector<std::byte>> frame,
                               double wire_scale);

// The envelope as the receiver decodes and checks it; an error for what it would refuse.
StatusOr<gossip::Envelope> OpenWire(const Wire& wire);

// One step of the trace hash (FNV-1a style) over a message's time, ends and size.
inline uint64_t TraceMix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001B3ULL; }

// A hash of a model's bits (equal models, bit for bit, hash alike).
uint64_t ModelDigest(std::span<const float> model);

// A copy of `wire` with one byte flipped, of its tensor frame or its header, by draws of
// `uniform` in [0, 1) (LinkSpec::corrupt).
std::shared_ptr<Wire> CorruptOneByte(const Wire& wire, const std::function<double()>& uniform);

inline double Seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace murmur::sim
