#include "node/sim/wire.h"

#include "node/sim/network.h"
#include "proto/envelope_codec.h"

namespace murmur::sim {

std::shared_ptr<Wire> MakeWire(size_t from, size_t to, gossip::Envelope envelope,
                               std::shared_ptr<const std::vector<std::byte>> frame,
                               double wire_scale) {
  envelope.cluster_id = "sim";
  envelope.payload_frames = frame ? 1 : 0;
  auto wire = std::make_shared<Wire>();
  wire->from = from;
  wire->to = to;
  wire->header = proto::EncodeEnvelope(envelope);
  wire->bytes = wire->header.size() + (frame ? StretchedFrameBytes(frame->size(), wire_scale) : 0);
  wire->frame = std::move(frame);
  return wire;
}

StatusOr<gossip::Envelope> OpenWire(const Wire& wire) {
  const auto* bytes = reinterpret_cast<const std::byte*>(wire.header.data());
  MURMUR_ASSIGN_OR_RETURN(gossip::Envelope envelope,
                          proto::DecodeEnvelope({bytes, wire.header.size()}, "sim"));
  MURMUR_RETURN_IF_ERROR(proto::CheckPayloadFrames(envelope, wire.frame ? 1 : 0));
  return envelope;
}

}  // namespace murmur::sim
