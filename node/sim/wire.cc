#include "node/sim/wire.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include "coding/update_codec.h"
#include "node/sim/network.h"
#include "proto/envelope_codec.h"

namespace murmur::sim {

std::shared_ptr<const std::vector<std::byte>> WithNonFinite(const std::vector<std::byte>& frame) {
  // The format (coding/update_codec.h): value coding at 5, mantissa and exponent bits at 6 and
  // 7, the values' count at 16, the scale at 20, the index section's bytes at 28, values at 40
  // after the index section.
  constexpr size_t kHeader = 40;
  if (frame.size() < kHeader) return nullptr;
  auto u32 = [&](size_t at) {
    uint32_t v = 0;
    std::memcpy(&v, frame.data() + at, sizeof v);
    return v;
  };
  const auto coding = static_cast<uint8_t>(frame[5]);
  size_t at = 0;
  if (coding == 1 || coding == 2) {  // kSign, kLevels: the scale
    at = 20;
  } else if (coding == 0 && static_cast<uint8_t>(frame[6]) == 23 &&
             static_cast<uint8_t>(frame[7]) == 8 && u32(16) > 0) {  // fp32 values: the first
    at = kHeader + u32(28);
  } else {
    return nullptr;
  }
  if (at + sizeof(float) > frame.size()) return nullptr;
  auto out = std::make_shared<std::vector<std::byte>>(frame);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(out->data() + at, &nan, sizeof nan);
  coding::RewriteChecksum(*out);
  return out;
}

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
