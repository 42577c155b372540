#include "proto/envelope_codec.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>

#include <cstring>
#include <type_traits>

#include "proto/schemas/envelope.capnp.h"

namespace murmur::proto {
namespace {

std::string Describe(const kj::Exception& e) {
  return std::string(e.getDescription().cStr());
}

}  // namespace

std::string EncodeEnvelope(const gossip::Envelope& envelope) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<wire::Envelope>();
  root.setSchemaVersion(envelope.schema_version);
  root.setClusterId(envelope.cluster_id);
  root.setSenderId(envelope.sender_id);
  root.setIncarnation(envelope.incarnation);
  root.setStepClock(envelope.step_clock);
  root.setSequence(envelope.sequence);
  root.setPayloadFrames(envelope.payload_frames);
  std::visit(
      [&](const auto& payload) {
        using P = std::decay_t<decltype(payload)>;
        if constexpr (std::is_same_v<P, gossip::NoPayload>) {
          root.getPayload().setNone();
        } else if constexpr (std::is_same_v<P, gossip::Heartbeat>) {
          root.getPayload().initHeartbeat().setCounter(payload.counter);
        }
      },
      envelope.payload);
  kj::Array<capnp::word> words = capnp::messageToFlatArray(message);
  kj::ArrayPtr<const kj::byte> bytes = words.asBytes();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

StatusOr<gossip::Envelope> DecodeEnvelope(std::span<const std::byte> bytes,
                                          std::string_view expected_cluster,
                                          const DecodeLimits& limits) {
  if (bytes.size() > limits.max_header_bytes) {
    return ResourceExhaustedError("envelope of " + std::to_string(bytes.size()) +
                                  " bytes exceeds the limit of " +
                                  std::to_string(limits.max_header_bytes));
  }
  if (bytes.empty() || bytes.size() % sizeof(capnp::word) != 0) {
    return DataLossError("envelope of " + std::to_string(bytes.size()) +
                         " bytes is not a whole number of 8-byte words");
  }
  // ZeroMQ frames carry no alignment promise; capnp needs word alignment, so copy (headers are
  // small; tensors never pass through here).
  kj::Array<capnp::word> aligned = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
  std::memcpy(aligned.begin(), bytes.data(), bytes.size());

  capnp::ReaderOptions options;
  options.traversalLimitInWords = limits.traversal_limit_words;
  options.nestingLimit = limits.nesting_limit;
  gossip::Envelope out;
  try {
    capnp::FlatArrayMessageReader reader(aligned.asPtr(), options);
    auto root = reader.getRoot<wire::Envelope>();
    out.schema_version = root.getSchemaVersion();
    if (out.schema_version != gossip::kSchemaVersion) {
      return FailedPreconditionError("envelope schema version " +
                                     std::to_string(out.schema_version) + " is not supported " +
                                     "(this build speaks " +
                                     std::to_string(gossip::kSchemaVersion) + ")");
    }
    out.cluster_id = root.getClusterId().cStr();
    if (!expected_cluster.empty() && out.cluster_id != expected_cluster) {
      return FailedPreconditionError("envelope from cluster '" + out.cluster_id +
                                     "', this node is in cluster '" +
                                     std::string(expected_cluster) + "'");
    }
    out.sender_id = root.getSenderId();
    out.incarnation = root.getIncarnation();
    out.step_clock = root.getStepClock();
    out.sequence = root.getSequence();
    out.payload_frames = root.getPayloadFrames();
    auto payload = root.getPayload();
    switch (payload.which()) {
      case wire::Envelope::Payload::NONE:
        out.payload = gossip::NoPayload{};
        break;
      case wire::Envelope::Payload::HEARTBEAT:
        out.payload = gossip::Heartbeat{payload.getHeartbeat().getCounter()};
        break;
      default:
        return FailedPreconditionError("envelope payload kind " +
                                       std::to_string(static_cast<int>(payload.which())) +
                                       " is unknown to this build");
    }
  } catch (const kj::Exception& e) {
    if (e.getDescription().startsWith("Exceeded message traversal limit")) {
      return ResourceExhaustedError("envelope exceeds the traversal limit: " + Describe(e));
    }
    return DataLossError("malformed envelope: " + Describe(e));
  }
  return out;
}

}  // namespace murmur::proto
