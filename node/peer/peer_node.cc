#include "node/peer/peer_node.h"

#include <functional>
#include <future>
#include <optional>

#include "base/check.h"
#include "base/log.h"
#include "gossip/transport/zmq_transport.h"
#include "node/peer/seeds.h"

namespace murmur::node {

gossip::NodeId DeriveNodeId(const std::string& endpoint) {
  const uint64_t h = std::hash<std::string>{}(endpoint) & 0x7fffffffffffffffULL;
  return h == 0 ? 1 : h;
}

StatusOr<std::unique_ptr<PeerNode>> PeerNode::Start(PeerNodeOptions options) {
  options.transport.listen = options.listen;
  MURMUR_ASSIGN_OR_RETURN(auto transport, transport::CreateZmqTransport(options.transport));
  std::string endpoint = options.advertise.empty() ? transport->endpoint() : options.advertise;
  // Wildcard hosts (0.0.0.0, ::, and ZeroMQ's dual-stack form [::ffff:0.0.0.0]) are not
  // addresses a peer can dial.
  if (endpoint.find("0.0.0.0") != std::string::npos || endpoint.find("://*:") != std::string::npos ||
      endpoint.find("[::]") != std::string::npos) {
    return InvalidArgumentError("listening on '" + transport->endpoint() +
                                "' needs an advertised address peers can reach (--advertise)");
  }
  MURMUR_RETURN_IF_ERROR(transport::ValidateEndpoint(endpoint));
  const gossip::NodeId id = options.id != 0 ? options.id : DeriveNodeId(endpoint);
  if (options.incarnation == 0) {
    options.incarnation = static_cast<gossip::Incarnation>(
        std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::system_clock::now().time_since_epoch())
            .count());
  }
  options.membership.id = id;
  options.membership.address = endpoint;
  options.membership.incarnation = options.incarnation;
  options.membership.seeds = ResolveSeeds(options.seeds);
  options.membership.rng_seed = id ^ options.incarnation;
  MURMUR_RETURN_IF_ERROR(options.membership.Validate());
  return std::unique_ptr<PeerNode>(
      new PeerNode(std::move(options), std::move(transport), std::move(endpoint), id));
}

PeerNode::PeerNode(PeerNodeOptions options, std::unique_ptr<transport::Transport> transport,
                   std::string endpoint, gossip::NodeId id)
    : options_(std::move(options)),
      transport_(std::move(transport)),
      endpoint_(std::move(endpoint)),
      id_(id) {
  membership_ = std::make_unique<gossip::Membership>(options_.membership, clock_.Now());
  MURMUR_LOG_INFO("node {} listening on {} (advertised {}), cluster '{}', incarnation {}, {} seeds",
                  id_, transport_->endpoint(), endpoint_, options_.cluster_id,
                  options_.membership.incarnation, options_.membership.seeds.size());
  thread_ = std::thread([this] { Run(); });
}

PeerNode::~PeerNode() {
  Leave();
  if (thread_.joinable()) thread_.join();
}

void PeerNode::Leave() {
  leave_.store(true);
  if (thread_.joinable() && std::this_thread::get_id() != thread_.get_id()) thread_.join();
}

PeerSnapshot PeerNode::Snapshot() const {
  PeerSnapshot s;
  s.transport = transport_->Stats();
  std::lock_guard<std::mutex> lock(mu_);
  s.id = id_;
  s.endpoint = endpoint_;
  s.incarnation = membership_->incarnation();
  s.view_epoch = membership_->view_epoch();
  s.members = membership_->Members();
  s.rejected = rejected_;
  s.sender_key_mismatch = sender_key_mismatch_;
  s.membership_rejected = membership_->rejected();
  s.received = received_;
  s.sent = sent_;
  s.id_conflicts = id_conflicts_;
  s.unknown_destination = unknown_destination_;
  s.injected_drops = injected_drops_;
  s.injected_send_delay_s = ToSeconds(injected_send_delay_);
  s.sent_by_kind = sent_by_kind_;
  s.received_by_kind = received_by_kind_;
  std::lock_guard<std::mutex> training_lock(training_mu_);
  s.training_received = training_received_;
  s.training_dropped = training_dropped_;
  s.training_queue_bytes = training_bytes_;
  return s;
}

namespace {

size_t FrameBytes(const std::vector<transport::Frame>& frames) {
  size_t bytes = 0;
  for (const transport::Frame& f : frames) bytes += f.size();
  return bytes;
}

}  // namespace

std::optional<TrainingMessage> PeerNode::TakeTraining(Duration timeout) {
  std::unique_lock<std::mutex> lock(training_mu_);
  if (training_.empty() && timeout.count() > 0) {
    training_cv_.wait_for(lock, timeout, [this] { return !training_.empty(); });
  }
  if (training_.empty()) return std::nullopt;
  TrainingMessage m = std::move(training_.front());
  training_.pop_front();
  training_bytes_ -= FrameBytes(m.frames);
  return m;
}

bool PeerNode::SendTo(gossip::NodeId to, gossip::Payload payload,
                      std::vector<transport::Frame> frames) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto member = membership_->Find(to);
  if (!member.has_value()) {
    ++unknown_destination_;
    return false;
  }
  const bool update = std::holds_alternative<gossip::UpdateHeader>(payload);
  Emit(member->address, std::move(payload), std::move(frames),
       update ? transport::Traffic::kUpdate : transport::Traffic::kControl);
  return true;
}

void PeerNode::SetProgress(uint64_t step_clock, uint64_t samples, bool finished) {
  std::lock_guard<std::mutex> lock(mu_);
  step_clock_ = step_clock;
  membership_->SetProgress(step_clock, samples, finished);
}

std::vector<gossip::NodeId> PeerNode::LiveView() const {
  std::lock_guard<std::mutex> lock(mu_);
  return membership_->LiveView();
}

std::vector<gossip::MemberEntry> PeerNode::Members() const {
  std::lock_guard<std::mutex> lock(mu_);
  return membership_->Members();
}

void PeerNode::SetSendInjection(Duration delay, double drop, uint64_t seed) {
  std::lock_guard<std::mutex> lock(mu_);
  send_delay_ = delay;
  send_drop_ = drop;
  injection_rng_.seed(seed);
}

void PeerNode::Emit(const std::string& address, gossip::Payload payload,
                    std::vector<transport::Frame> frames, transport::Traffic traffic) {
  if (send_drop_ > 0 && std::uniform_real_distribution<double>(0, 1)(injection_rng_) < send_drop_) {
    ++injected_drops_;
    return;
  }
  gossip::Envelope e;
  e.cluster_id = options_.cluster_id;
  e.sender_id = id_;
  e.incarnation = membership_->incarnation();
  e.step_clock = step_clock_;
  e.sequence = ++sequence_;
  e.payload_frames = static_cast<uint32_t>(frames.size());
  e.payload = std::move(payload);
  const MessageKind kind = KindOf(e.payload);
  transport::Message m{transport::Frame::FromString(proto::EncodeEnvelope(e)), std::move(frames),
                       traffic, std::nullopt};
  ++sent_;
  TrafficCount& count = sent_by_kind_[static_cast<size_t>(kind)];
  ++count.messages;
  count.bytes += m.header.bytes().size();
  for (const auto& f : m.frames) count.bytes += f.bytes().size();
  if (send_delay_.count() > 0) {
    injected_send_delay_ += send_delay_;
    delayed_.push_back({clock_.Now() + send_delay_, address, std::move(m)});
    return;
  }
  transport_->Send(address, std::move(m));
}

void PeerNode::ReleaseDelayed(TimePoint now) {
  while (!delayed_.empty() && delayed_.front().due <= now) {
    transport_->Send(delayed_.front().address, std::move(delayed_.front().message));
    delayed_.pop_front();
  }
}

void PeerNode::Reject(proto::Rejection why, const Status& status) {
  const uint64_t count = ++rejected_[static_cast<size_t>(why)];
  if (count == 1 || count % 1000 == 0) {
    MURMUR_LOG_WARN("node {}: rejected a message ({}, {} so far): {}", id_,
                    proto::RejectionName(why), count, status.ToString());
  }
}

void PeerNode::Handle(const transport::Message& message, TimePoint now) {
  proto::Rejection why = proto::Rejection::kNone;
  auto envelope = proto::DecodeEnvelope(message.header.bytes(), options_.cluster_id,
                                        proto::DecodeLimits(), &why);
  if (!envelope.ok()) return Reject(why, envelope.status());
  if (Status s = proto::CheckPayloadFrames(*envelope, message.frames.size(), &why); !s.ok()) {
    return Reject(why, s);
  }
  if (message.speaker.has_value() && *message.speaker != envelope->sender_id) {
    // The sender's key is bound to another member: it speaks only for itself.
    const uint64_t count = ++sender_key_mismatch_;
    if (count == 1 || count % 1000 == 0) {
      MURMUR_LOG_WARN(
          "node {}: refused a message naming sender {} over a link whose key is "
          "member {}'s ({}, {} so far)",
          id_, envelope->sender_id, *message.speaker, kSenderKeyMismatch, count);
    }
    return;
  }
  ++received_;
  const gossip::Payload& p = envelope->payload;
  TrafficCount& count = received_by_kind_[static_cast<size_t>(KindOf(p))];
  ++count.messages;
  count.bytes += message.header.bytes().size();
  for (const auto& f : message.frames) count.bytes += f.bytes().size();
  if (KindOf(p) != MessageKind::kMembership) {
    std::lock_guard<std::mutex> lock(training_mu_);
    const size_t bytes = FrameBytes(message.frames);
    // The protocols repair holes (replays, snapshots); never block the driver.
    while (!training_.empty() && (training_.size() >= options_.max_training_queue ||
                                  training_bytes_ + bytes > options_.max_training_queue_bytes)) {
      training_bytes_ -= FrameBytes(training_.front().frames);
      training_.pop_front();
      ++training_dropped_;
    }
    training_bytes_ += bytes;
    training_.push_back({std::move(*envelope), message.frames});
    ++training_received_;
    training_cv_.notify_one();
    return;
  }
  membership_->Step(*envelope, now);
}

void PeerNode::Flush() {
  for (gossip::Outgoing& out : membership_->TakeOutput()) {
    Emit(out.address, std::move(out.payload), {}, transport::Traffic::kMembership);
  }
  for (const gossip::MemberEvent& ev : membership_->TakeEvents()) {
    if (ev.kind == gossip::MemberEvent::Kind::kIdConflict) {
      ++id_conflicts_;
      MURMUR_LOG_ERROR("node {}: {} also claims id {}: every node needs its own id (--id)", id_,
                       ev.address, ev.id);
      continue;
    }
    MURMUR_LOG_INFO("node {}: member {} {} (incarnation {})", id_, ev.id,
                    gossip::MemberEventName(ev.kind), ev.incarnation);
    if (ev.kind == gossip::MemberEvent::Kind::kForgotten || ev.kind == gossip::MemberEvent::Kind::kLeft) {
      // Nothing more will be sent there; free the connection and its queue.
      transport_->Forget(ev.address);
    }
  }
}

void PeerNode::Run() {
  const Duration tick = options_.membership.probe_interval / 20;
  TimePoint next_resolve = clock_.Now() + options_.reresolve_seeds;
  // DNS can block for seconds (a Service with no ready pods); the driver must keep probing and
  // acking meanwhile, so names are re-resolved on another thread and picked up when ready.
  std::future<std::vector<std::string>> resolving;
  std::vector<transport::Message> batch;
  while (!leave_.load()) {
    auto message = transport_->Receive(std::chrono::duration_cast<std::chrono::milliseconds>(tick) +
                                       std::chrono::milliseconds(1));
    const TimePoint now = clock_.Now();
    std::optional<std::vector<std::string>> seeds;
    if (resolving.valid() && resolving.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      seeds = resolving.get();
    } else if (!resolving.valid() && now >= next_resolve) {
      next_resolve = now + options_.reresolve_seeds;
      resolving = std::async(std::launch::async, ResolveSeeds, options_.seeds, nullptr);
    }
    // What else is waiting is taken before the lock: the training thread's sends and views take
    // mu_ too, and the transport's reads (system calls) would hold them up; with more processes
    // than cores, this thread may be descheduled while holding it.
    batch.clear();
    if (message.has_value()) {
      batch.push_back(std::move(*message));
      for (int i = 0; i < 256; ++i) {
        auto more = transport_->Receive(std::chrono::milliseconds(0));
        if (!more.has_value()) break;
        batch.push_back(std::move(*more));
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    for (const transport::Message& m : batch) Handle(m, now);
    if (seeds.has_value()) membership_->SetSeeds(std::move(*seeds));
    membership_->Tick(now);
    Flush();
    ReleaseDelayed(now);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    membership_->Leave(clock_.Now());
    Flush();
    ReleaseDelayed(TimePoint::max());
  }
  // The Leave messages are queued on the transport, which hands what is queued to its sockets
  // when it stops and gives them its linger to reach the peers.
}

std::string_view MessageKindName(MessageKind kind) {
  switch (kind) {
    case MessageKind::kMembership: return "membership";
    case MessageKind::kUpdate: return "update";
    case MessageKind::kSnapshot: return "snapshot";
    case MessageKind::kCoded: return "coded";
    case MessageKind::kFinish: return "finish";
    case MessageKind::kCount: break;
  }
  return "unknown";
}

MessageKind KindOf(const gossip::Payload& payload) {
  // NoPayload: a gossip node's step-clock announcement between rounds (GossipNode::AnnounceClock).
  if (std::holds_alternative<gossip::UpdateHeader>(payload) ||
      std::holds_alternative<gossip::NoPayload>(payload)) {
    return MessageKind::kUpdate;
  }
  if (std::holds_alternative<gossip::SnapshotRequest>(payload) ||
      std::holds_alternative<gossip::SnapshotReply>(payload)) {
    return MessageKind::kSnapshot;
  }
  if (std::holds_alternative<gossip::CodedMessage>(payload)) return MessageKind::kCoded;
  if (std::holds_alternative<gossip::FinishMessage>(payload)) return MessageKind::kFinish;
  return MessageKind::kMembership;
}

transport::Frame SharedFrame(std::shared_ptr<const std::vector<std::byte>> bytes) {
  const std::span<const std::byte> view(*bytes);
  return transport::Frame(std::move(bytes), view);
}


}  // namespace murmur::node
