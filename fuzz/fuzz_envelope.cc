// libFuzzer target: the envelope decoder (proto/envelope_codec.h), the first code a peer's bytes
// reach. Property: whatever decodes re-encodes to bytes that decode to the same envelope — unless
// the canonical encoding outgrows max_header_bytes (capnp lists of empty structs are smaller on
// the wire than re-encoded; the decoder's member limit bounds the work).
#include <cstddef>
#include <cstdint>
#include <span>

#include "base/check.h"
#include "proto/envelope_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));
  auto envelope = murmur::proto::DecodeEnvelope(bytes, "");
  if (!envelope.ok()) return 0;
  const std::string again = murmur::proto::EncodeEnvelope(*envelope);
  if (again.size() > murmur::proto::DecodeLimits().max_header_bytes) return 0;
  auto back = murmur::proto::DecodeEnvelope(std::as_bytes(std::span(again.data(), again.size())), "");
  MURMUR_CHECK(back.ok()) << back.status().ToString();
  MURMUR_CHECK(back->payload == envelope->payload);
  MURMUR_CHECK(back->sender_id == envelope->sender_id && back->step_clock == envelope->step_clock);
  return 0;
}
