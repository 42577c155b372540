#include "node/sim/wire.h"

#include <algorithm>
#include <bit>

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

uint64_t ModelDigest(std::span<const float> model) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (float v : model) h = TraceMix(h, std::bit_cast<uint32_t>(v));
  return h;
}

std::shared_ptr<Wire> CorruptOneByte(const Wire& wire, const std::function<double()>& uniform) {
  auto copy = std::make_shared<Wire>(wire);
  auto index = [&](size_t size) {
    return std::min(size - 1, static_cast<size_t>(uniform() * static_cast<double>(size)));
  };
  const auto flip = static_cast<uint8_t>(1 + std::min(254.0, uniform() * 255));
  if (copy->frame && !copy->frame->empty() && uniform() < 0.5) {
    auto frame = std::make_shared<std::vector<std::byte>>(*copy->frame);
    (*frame)[index(frame->size())] ^= std::byte{flip};
    copy->frame = std::move(frame);
  } else if (!copy->header.empty()) {
    copy->header[index(copy->header.size())] ^= static_cast<char>(flip);
  }
  return copy;
}

}  // namespace murmur::sim
