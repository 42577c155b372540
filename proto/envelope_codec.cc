#include "proto/envelope_codec.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>

#include <cmath>
#include <cstring>
#include <type_traits>

#include "proto/schemas/envelope.capnp.h"

namespace murmur::proto {
namespace {

std::string Describe(const kj::Exception& e) {
  return std::string(e.getDescription().cStr());
}

// Decode failures inside the converters; caught once in DecodeEnvelope.
struct Refusal {
  Rejection why;
  Status status;
};

void SetEntry(wire::MemberEntry::Builder b, const gossip::MemberEntry& e) {
  b.setId(e.id);
  b.setAddress(e.address);
  b.setIncarnation(e.incarnation);
  b.setState(static_cast<wire::MemberState>(e.state));
  b.setHeartbeat(e.heartbeat);
  b.setStepClock(e.step_clock);
  b.setSamples(e.samples);
  b.setFinished(e.finished);
}

void SetEntries(capnp::List<wire::MemberEntry>::Builder list,
                const std::vector<gossip::MemberEntry>& entries) {
  for (size_t i = 0; i < entries.size(); ++i) SetEntry(list[i], entries[i]);
}

std::string ReadText(capnp::Text::Reader text, const DecodeLimits& limits, const char* what) {
  if (text.size() > limits.max_text_bytes) {
    throw Refusal{Rejection::kOversized,
                  ResourceExhaustedError(std::string(what) + " of " + std::to_string(text.size()) +
                                         " bytes exceeds the limit of " +
                                         std::to_string(limits.max_text_bytes))};
  }
  std::string out(text.cStr(), text.size());
  // Addresses and ids are never binary; an embedded NUL would also not survive re-encoding
  // (found by fuzz/fuzz_envelope.cc).
  if (out.find('\0') != std::string::npos) {
    throw Refusal{Rejection::kInvalidField,
                  InvalidArgumentError(std::string(what) + " contains a NUL byte")};
  }
  return out;
}

gossip::MemberEntry ReadEntry(wire::MemberEntry::Reader r, const DecodeLimits& limits) {
  gossip::MemberEntry e;
  e.id = r.getId();
  e.address = ReadText(r.getAddress(), limits, "member address");
  e.incarnation = r.getIncarnation();
  const auto state = static_cast<uint16_t>(r.getState());
  if (state > static_cast<uint16_t>(gossip::MemberState::kLeft)) {
    throw Refusal{Rejection::kInvalidField,
                  InvalidArgumentError("member " + std::to_string(e.id) + " has unknown state " +
                                       std::to_string(state))};
  }
  e.state = static_cast<gossip::MemberState>(state);
  e.heartbeat = r.getHeartbeat();
  e.step_clock = r.getStepClock();
  e.samples = r.getSamples();
  e.finished = r.getFinished();
  return e;
}

std::vector<gossip::MemberEntry> ReadEntries(capnp::List<wire::MemberEntry>::Reader list,
                                             const DecodeLimits& limits) {
  if (list.size() > limits.max_members) {
    throw Refusal{Rejection::kOversized,
                  ResourceExhaustedError("member list of " + std::to_string(list.size()) +
                                         " entries exceeds the limit of " +
                                         std::to_string(limits.max_members))};
  }
  std::vector<gossip::MemberEntry> out;
  out.reserve(list.size());
  for (auto r : list) out.push_back(ReadEntry(r, limits));
  return out;
}

void SetPayload(wire::Envelope::Payload::Builder p, const gossip::Payload& payload) {
  std::visit(
      [&](const auto& v) {
        using P = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<P, gossip::NoPayload>) {
          p.setNone();
        } else if constexpr (std::is_same_v<P, gossip::Heartbeat>) {
          p.initHeartbeat().setCounter(v.counter);
        } else if constexpr (std::is_same_v<P, gossip::Ping>) {
          auto b = p.initPing();
          b.setProbeId(v.probe_id);
          SetEntries(b.initGossip(v.gossip.size()), v.gossip);
        } else if constexpr (std::is_same_v<P, gossip::Ack>) {
          auto b = p.initAck();
          b.setProbeId(v.probe_id);
          SetEntries(b.initGossip(v.gossip.size()), v.gossip);
        } else if constexpr (std::is_same_v<P, gossip::PingReq>) {
          auto b = p.initPingReq();
          b.setProbeId(v.probe_id);
          b.setTargetId(v.target_id);
          b.setTargetAddress(v.target_address);
          SetEntries(b.initGossip(v.gossip.size()), v.gossip);
        } else if constexpr (std::is_same_v<P, gossip::Join>) {
          SetEntry(p.initJoin().initSelf(), v.self);
        } else if constexpr (std::is_same_v<P, gossip::Digest>) {
          auto b = p.initDigest();
          SetEntries(b.initMembers(v.members.size()), v.members);
          b.setReplyWanted(v.reply_wanted);
        } else if constexpr (std::is_same_v<P, gossip::Leave>) {
          p.initLeave();
        } else if constexpr (std::is_same_v<P, gossip::UpdateHeader>) {
          auto b = p.initUpdate();
          b.setRound(v.round);
          b.setBaseSequence(v.base_sequence);
          b.setDimension(v.dimension);
          b.setDense(v.dense);
          b.setFromInitial(v.from_initial);
          b.setConsensus(v.consensus);
        } else if constexpr (std::is_same_v<P, gossip::SnapshotRequest>) {
          auto b = p.initSnapshotRequest();
          b.setFromSequence(v.from_sequence);
          b.setModel(v.model);
          b.setReplay(v.replay);
        } else if constexpr (std::is_same_v<P, gossip::SnapshotReply>) {
          auto b = p.initSnapshotReply();
          b.setRound(v.round);
          b.setDimension(v.dimension);
          b.setModel(v.model);
        } else if constexpr (std::is_same_v<P, gossip::CodedMessage>) {
          auto b = p.initCoded();
          b.setKind(static_cast<wire::CodedMessage::Kind>(v.kind));
          b.setIteration(v.iteration);
          b.setTreePosition(v.tree_position);
          b.setDimension(v.dimension);
        } else if constexpr (std::is_same_v<P, gossip::FinishMessage>) {
          auto b = p.initFinish();
          b.setKind(static_cast<wire::FinishMessage::Kind>(v.kind));
          b.setDimension(v.dimension);
          b.setContributors(v.contributors);
          b.setCollector(v.collector);
        } else {
          static_assert(sizeof(P) == 0, "every payload kind needs a wire form");
        }
      },
      payload);
}

gossip::UpdateHeader ReadUpdate(wire::UpdateHeader::Reader r) {
  // NaN would compare unequal to itself after a round trip and poison a neighbour's average
  // (found by fuzz/fuzz_envelope.cc); the node bounds the finite range (gossip_node.h).
  if (!std::isfinite(r.getConsensus())) {
    throw Refusal{Rejection::kInvalidField,
                  InvalidArgumentError("update header has a non-finite consensus estimate")};
  }
  return gossip::UpdateHeader{r.getRound(), r.getBaseSequence(), r.getDimension(),
                              r.getDense(), r.getFromInitial(),  r.getConsensus()};
}

gossip::CodedMessage ReadCoded(wire::CodedMessage::Reader r) {
  const auto kind = static_cast<uint16_t>(r.getKind());
  if (kind > static_cast<uint16_t>(gossip::CodedMessage::Kind::kPartialGradient)) {
    throw Refusal{Rejection::kInvalidField,
                  InvalidArgumentError("coded message has unknown kind " + std::to_string(kind))};
  }
  return gossip::CodedMessage{static_cast<gossip::CodedMessage::Kind>(kind), r.getIteration(),
                              r.getTreePosition(), r.getDimension()};
}

gossip::FinishMessage ReadFinish(wire::FinishMessage::Reader r) {
  const auto kind = static_cast<uint16_t>(r.getKind());
  if (kind > static_cast<uint16_t>(gossip::FinishMessage::Kind::kReceipt)) {
    throw Refusal{Rejection::kInvalidField,
                  InvalidArgumentError("finish message has unknown kind " + std::to_string(kind))};
  }
  return gossip::FinishMessage{static_cast<gossip::FinishMessage::Kind>(kind), r.getDimension(),
                               r.getContributors(), r.getCollector()};
}

gossip::Payload ReadPayload(wire::Envelope::Payload::Reader p, const DecodeLimits& limits) {
  using W = wire::Envelope::Payload;
  switch (p.which()) {
    case W::NONE:
      return gossip::NoPayload{};
    case W::HEARTBEAT:
      return gossip::Heartbeat{p.getHeartbeat().getCounter()};
    case W::PING: {
      auto r = p.getPing();
      return gossip::Ping{r.getProbeId(), ReadEntries(r.getGossip(), limits)};
    }
    case W::ACK: {
      auto r = p.getAck();
      return gossip::Ack{r.getProbeId(), ReadEntries(r.getGossip(), limits)};
    }
    case W::PING_REQ: {
      auto r = p.getPingReq();
      return gossip::PingReq{r.getProbeId(), r.getTargetId(),
                             ReadText(r.getTargetAddress(), limits, "ping-req target address"),
                             ReadEntries(r.getGossip(), limits)};
    }
    case W::JOIN:
      return gossip::Join{ReadEntry(p.getJoin().getSelf(), limits)};
    case W::DIGEST: {
      auto r = p.getDigest();
      return gossip::Digest{ReadEntries(r.getMembers(), limits), r.getReplyWanted()};
    }
    case W::LEAVE:
      return gossip::Leave{};
    case W::UPDATE:
      return ReadUpdate(p.getUpdate());
    case W::SNAPSHOT_REQUEST: {
      auto r = p.getSnapshotRequest();
      return gossip::SnapshotRequest{r.getFromSequence(), r.getModel(), r.getReplay()};
    }
    case W::SNAPSHOT_REPLY: {
      auto r = p.getSnapshotReply();
      return gossip::SnapshotReply{r.getRound(), r.getDimension(), r.getModel()};
    }
    case W::CODED:
      return ReadCoded(p.getCoded());
    case W::FINISH:
      return ReadFinish(p.getFinish());
  }
  throw Refusal{Rejection::kUnknownPayload,
                FailedPreconditionError("envelope payload kind " +
                                        std::to_string(static_cast<int>(p.which())) +
                                        " is unknown to this build")};
}

}  // namespace

std::string_view RejectionName(Rejection r) {
  switch (r) {
    case Rejection::kNone: return "none";
    case Rejection::kOversized: return "oversized";
    case Rejection::kMalformed: return "malformed";
    case Rejection::kVersion: return "version";
    case Rejection::kCluster: return "cluster";
    case Rejection::kUnknownPayload: return "unknown_payload";
    case Rejection::kInvalidField: return "invalid_field";
    case Rejection::kFramesMissing: return "frames_missing";
    case Rejection::kCount: break;
  }
  return "unknown";
}

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
  SetPayload(root.getPayload(), envelope.payload);
  kj::Array<capnp::word> words = capnp::messageToFlatArray(message);
  kj::ArrayPtr<const kj::byte> bytes = words.asBytes();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

StatusOr<gossip::Envelope> DecodeEnvelope(std::span<const std::byte> bytes,
                                          std::string_view expected_cluster,
                                          const DecodeLimits& limits, Rejection* why) {
  Rejection ignored;
  Rejection& reason = why != nullptr ? *why : ignored;
  reason = Rejection::kNone;
  if (bytes.size() > limits.max_header_bytes) {
    reason = Rejection::kOversized;
    return ResourceExhaustedError("envelope of " + std::to_string(bytes.size()) +
                                  " bytes exceeds the limit of " +
                                  std::to_string(limits.max_header_bytes));
  }
  if (bytes.empty() || bytes.size() % sizeof(capnp::word) != 0) {
    reason = Rejection::kMalformed;
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
      reason = Rejection::kVersion;
      return FailedPreconditionError("envelope schema version " +
                                     std::to_string(out.schema_version) + " is not supported " +
                                     "(this build speaks " +
                                     std::to_string(gossip::kSchemaVersion) + ")");
    }
    out.cluster_id = ReadText(root.getClusterId(), limits, "cluster id");
    if (!expected_cluster.empty() && out.cluster_id != expected_cluster) {
      reason = Rejection::kCluster;
      return FailedPreconditionError("envelope from cluster '" + out.cluster_id +
                                     "', this node is in cluster '" +
                                     std::string(expected_cluster) + "'");
    }
    out.sender_id = root.getSenderId();
    out.incarnation = root.getIncarnation();
    out.step_clock = root.getStepClock();
    out.sequence = root.getSequence();
    out.payload_frames = root.getPayloadFrames();
    out.payload = ReadPayload(root.getPayload(), limits);
  } catch (const Refusal& refusal) {
    reason = refusal.why;
    return refusal.status;
  } catch (const kj::Exception& e) {
    if (e.getDescription().startsWith("Exceeded message traversal limit")) {
      reason = Rejection::kOversized;
      return ResourceExhaustedError("envelope exceeds the traversal limit: " + Describe(e));
    }
    reason = Rejection::kMalformed;
    return DataLossError("malformed envelope: " + Describe(e));
  }
  const uint32_t required = gossip::RequiredPayloadFrames(out.payload);
  if (out.payload_frames != required) {
    reason = Rejection::kInvalidField;
    return InvalidArgumentError("envelope announces " + std::to_string(out.payload_frames) +
                                " payload frames; its payload kind carries " +
                                std::to_string(required));
  }
  return out;
}

Status CheckPayloadFrames(const gossip::Envelope& envelope, size_t frames_received,
                          Rejection* why) {
  if (frames_received == envelope.payload_frames) {
    if (why != nullptr) *why = Rejection::kNone;
    return OkStatus();
  }
  if (why != nullptr) *why = Rejection::kFramesMissing;
  return InvalidArgumentError("envelope announces " + std::to_string(envelope.payload_frames) +
                              " payload frames but " + std::to_string(frames_received) +
                              " arrived");
}

}  // namespace murmur::proto
