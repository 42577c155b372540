#include "gossip/transport/zmq_transport.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <zmq.hpp>

#include "base/check.h"
#include "base/log.h"
#include "base/spec.h"
#include "gossip/transport/queues.h"

namespace murmur::transport {
namespace {

// ZeroMQ calls this when it no longer needs a zero-copy frame.
void ReleaseFrame(void*, void* hint) { delete static_cast<std::shared_ptr<const void>*>(hint); }

// Frames up to this size are copied into the ZeroMQ message: a copy of a header costs less than
// zero-copy's bookkeeping (a shared owner, ZeroMQ's content block, the release call on its I/O
// thread), and up to 33 bytes ZeroMQ keeps the bytes inside the message itself.
constexpr size_t kCopyAtMost = 1024;

zmq::message_t ToZmq(const Frame& frame) {
  if (frame.size() <= kCopyAtMost) return zmq::message_t(frame.data(), frame.size());
  return zmq::message_t(const_cast<std::byte*>(frame.data()), frame.size(), &ReleaseFrame,
                        new std::shared_ptr<const void>(frame.owner()));
}

class ZmqTransport final : public Transport {
 public:
  ZmqTransport(const TransportOptions& options, zmq::context_t context, zmq::socket_t zap,
               zmq::socket_t monitor, zmq::socket_t router, std::string endpoint, int wake_fd)
      : options_(options),
        context_(std::move(context)),
        zap_(std::move(zap)),
        monitor_(std::move(monitor)),
        router_(std::move(router)),
        endpoint_(std::move(endpoint)),
        wake_fd_(wake_fd),
        inbox_(options.max_inbox_messages, options.max_inbox_bytes) {
    thread_ = std::thread([this] { Run(); });
  }

  ~ZmqTransport() override {
    stop_.store(true);
    Wake();
    thread_.join();
    inbox_.Close();
    {
      std::lock_guard<std::timed_mutex> router(router_mu_);
      router_.close();
    }
    ::close(wake_fd_);
    // The socket file of a bound ipc:// endpoint is ours; ZeroMQ leaves it behind.
    if (endpoint_.starts_with("ipc://")) ::unlink(endpoint_.substr(6).c_str());
  }

  std::string endpoint() const override { return endpoint_; }

  void Send(std::string_view peer, Message message) override {
    {
      std::lock_guard<std::mutex> sockets(sockets_mu_);
      if (SendDirect(peer, message)) return;
      std::lock_guard<std::mutex> lock(mu_);
      commands_.push_back({std::string(peer), std::move(message), false});
    }
    Wake();
  }

  // The caller's thread reads the ROUTER itself: a message reaches the consumer
  // without a hand-off through the I/O thread (a wake-up and a context switch per message). What
  // the socket holds is moved into the inbox first, so a slow consumer gets the inbox's drop
  // policy as before; while nobody receives, messages wait in ZeroMQ's bounded pipes (rcvhwm per
  // sender) and then back-pressure the sender's queue. Concurrent callers take turns on the
  // socket (router_mu_); one that cannot get it in time takes what the inbox holds.
  std::optional<Message> Receive(std::chrono::milliseconds timeout) override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::unique_lock<std::timed_mutex> router(router_mu_, std::defer_lock);
    if (!router.try_lock_until(deadline)) return inbox_.Pop(std::chrono::milliseconds(0));
    while (true) {
      ReceiveAll();
      if (auto m = inbox_.Pop(std::chrono::milliseconds(0))) return m;
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0 || stop_.load()) return std::nullopt;
      zmq::pollitem_t item{router_.handle(), 0, ZMQ_POLLIN, 0};
      try {
        zmq::poll(&item, 1, left);
      } catch (const zmq::error_t& e) {
        if (e.num() != EINTR) MURMUR_LOG_ERROR("transport: poll failed: {}", e.what());
      }
    }
  }

  void Forget(std::string_view peer) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      commands_.push_back({std::string(peer), Message{}, true});
    }
    Wake();
  }

  TransportStats Stats() const override {
    TransportStats s;
    {
      std::lock_guard<std::mutex> lock(stats_mu_);
      s = stats_;
    }
    inbox_.AddStats(s);
    return s;
  }

 private:
  struct Command {
    std::string peer;
    Message message;
    bool forget;
  };
  // A peer's connections: membership messages on one of their own, so that SWIM's probes and
  // acks do not wait behind a model on a thin link (there they waited seconds and live members
  // were declared dead); everything else on the other. Each lane has its own queue and order.
  struct Lane {
    Lane(zmq::socket_t s, const TransportOptions& o)
        : dealer(std::move(s)), queue(o.max_queued_messages, o.max_queued_bytes) {}
    zmq::socket_t dealer;
    SendQueue queue;
  };
  static constexpr size_t kLanes = 2;
  static constexpr std::chrono::milliseconds kStopDrain{500};
  static size_t LaneOf(const Message& m) { return m.traffic == Traffic::kMembership ? 0 : 1; }
  struct Peer {
    std::array<std::optional<Lane>, kLanes> lanes;  // each made on first use
    uint64_t last_used = 0;  // use_counter_ at the latest message queued
    size_t queued() const {
      size_t n = 0;
      for (const auto& lane : lanes) n += lane.has_value() ? lane->queue.size() : 0;
      return n;
    }
  };

  // One eventfd write per wake-up of the I/O thread, however many sends queue before it runs:
  // each write is a system call and may preempt the caller for the woken thread.
  void Wake() {
    if (wake_pending_.exchange(true, std::memory_order_acq_rel)) return;
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof(one));
  }

  // The peer's lane for `m`, made (after closing the least recently used peer when max_peers are
  // open) when there is none; nullptr when no socket can be made (out of file descriptors).
  Lane* LaneFor(const std::string& endpoint, const Message& m) {
    auto it = peers_.find(endpoint);
    if (it == peers_.end()) {
      if (peers_.size() >= std::max<size_t>(1, options_.max_peers)) {
        auto lru = std::min_element(peers_.begin(), peers_.end(), [](const auto& a, const auto& b) {
          return a.second.last_used < b.second.last_used;
        });
        stats_.dropped_control += lru->second.queued();
        ++stats_.evicted_peers;
        peers_.erase(lru);
      }
      it = peers_.emplace(endpoint, Peer{}).first;
    }
    Peer& peer = it->second;
    peer.last_used = ++use_counter_;
    std::optional<Lane>& lane = peer.lanes[LaneOf(m)];
    if (lane.has_value()) return &*lane;
    try {
      lane.emplace(Connect(endpoint), options_);
      return &*lane;
    } catch (const zmq::error_t& e) {
      if (dropped_logged_++ % 1000 == 0) {
        MURMUR_LOG_WARN("transport: no socket for '{}': {} ({} messages dropped so far)", endpoint,
                        e.what(), stats_.dropped_no_socket + 1);
      }
      return nullptr;
    }
  }

  // A DEALER connecting to `endpoint`; throws zmq::error_t when no socket can be made.
  zmq::socket_t Connect(const std::string& endpoint) {
    zmq::socket_t dealer(context_, zmq::socket_type::dealer);
    dealer.set(zmq::sockopt::immediate, 1);
    dealer.set(zmq::sockopt::ipv6, 1);
    // Messages ZeroMQ holds per peer beyond our queue (where the drop policy applies). At 64, a
    // sender streaming 4 KB messages handed most of them to the I/O thread (0.88x raw ZeroMQ's
    // throughput in bench/transport_bench.cc); at 256, 0.93-1.26x.
    dealer.set(zmq::sockopt::sndhwm, 256);
    dealer.set(zmq::sockopt::linger, 500);
    dealer.set(zmq::sockopt::reconnect_ivl, static_cast<int>(options_.reconnect_min.count()));
    dealer.set(zmq::sockopt::reconnect_ivl_max, static_cast<int>(options_.reconnect_max.count()));
    if (options_.curve.enabled()) {
      dealer.set(zmq::sockopt::curve_serverkey, options_.curve.server.public_key);
      dealer.set(zmq::sockopt::curve_publickey, options_.curve.client.public_key);
      dealer.set(zmq::sockopt::curve_secretkey, options_.curve.client.secret_key);
    }
    try {
      dealer.connect(endpoint);
    } catch (const zmq::error_t& e) {
      // A malformed or unresolvable endpoint: keep a socket that never connects, so messages
      // for it are dropped by the queue policy like any absent peer.
      MURMUR_LOG_WARN("transport: cannot connect to '{}': {}", endpoint, e.what());
    }
    return dealer;
  }

  // Taken and applied under sockets_mu_ (held by the caller), so a direct send cannot slip in
  // between taking a command and queueing it.
  void ApplyCommands() {
    std::deque<Command> commands;
    {
      std::lock_guard<std::mutex> lock(mu_);
      commands.swap(commands_);
    }
    std::lock_guard<std::mutex> lock(stats_mu_);
    for (Command& c : commands) {
      if (c.forget) {
        peers_.erase(c.peer);
        continue;
      }
      Lane* lane = LaneFor(c.peer, c.message);
      if (lane == nullptr) {
        ++stats_.dropped_no_socket;
        continue;
      }
      lane->queue.Push(std::move(c.message), stats_);
    }
    stats_.peers = peers_.size();
  }

  // Hands `m` to the socket unless it would block (not connected, or at the high-water mark);
  // false leaves `m` as it was. REQUIRES sockets_mu_.
  bool SendNow(zmq::socket_t& dealer, const Message& m) {
    const bool more = !m.frames.empty();
    auto sent =
        dealer.send(ToZmq(m.header), more ? zmq::send_flags::dontwait | zmq::send_flags::sndmore
                                          : zmq::send_flags::dontwait);
    if (!sent.has_value()) return false;
    // The rest of a multipart message is accepted once its first part was (atomic delivery).
    for (size_t i = 0; i < m.frames.size(); ++i) {
      const bool last = i + 1 == m.frames.size();
      dealer.send(ToZmq(m.frames[i]), last ? zmq::send_flags::none : zmq::send_flags::sndmore);
    }
    std::lock_guard<std::mutex> lock(stats_mu_);
    ++stats_.sent_messages;
    stats_.sent_bytes += m.bytes();
    return true;
  }

  // The caller's thread sends itself when nothing is ahead of `m`: no command is pending (one
  // could be for this peer) and the peer's queue is empty, so the order of sends holds and the
  // I/O thread is not woken (a wake-up and a context switch per message). The sockets
  // move between the two threads only under sockets_mu_ (ZeroMQ allows that with a full
  // barrier); the I/O thread never polls a DEALER whose queue is empty, so it is never inside a
  // poll on the socket used here. False (and `m` unchanged) when the I/O thread must take it.
  // REQUIRES sockets_mu_.
  bool SendDirect(std::string_view peer, const Message& m) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!commands_.empty()) return false;
    }
    auto it = peers_.find(peer);
    if (it == peers_.end()) return false;
    std::optional<Lane>& lane = it->second.lanes[LaneOf(m)];
    if (!lane.has_value() || !lane->queue.empty() || !SendNow(lane->dealer, m)) return false;
    it->second.last_used = ++use_counter_;
    return true;
  }

  // Sends queued messages until each lane's socket would block. REQUIRES sockets_mu_.
  void Flush(Peer& peer) {
    for (std::optional<Lane>& lane : peer.lanes) {
      if (!lane.has_value()) continue;
      while (!lane->queue.empty() && SendNow(lane->dealer, lane->queue.front())) {
        lane->queue.PopFront();
      }
    }
  }

  // Moves what the ROUTER holds into the inbox, at most 64 messages or 256 KB at a time: small
  // messages are batched per call, large ones taken one per call (no call holds many large
  // buffers at once). REQUIRES router_mu_.
  void ReceiveAll() {
    size_t moved_bytes = 0;
    for (int batch = 0; batch < 64 && moved_bytes < (size_t{256} << 10); ++batch) {
      zmq::message_t part;
      if (!router_.recv(part, zmq::recv_flags::dontwait).has_value()) return;
      // One owner for all of a message's parts; its frames point into them (a part of up to 33
      // bytes holds its bytes inline, so no part moves once a frame points at it).
      auto parts = std::make_shared<std::vector<zmq::message_t>>();
      parts->reserve(4);
      parts->push_back(std::move(part));
      while (parts->back().more()) {
        zmq::message_t next;
        (void)router_.recv(next, zmq::recv_flags::none);
        parts->push_back(std::move(next));
      }
      // [routing id][header][frames...]
      const size_t n = parts->size();
      if (n < 2 || (*parts)[1].size() == 0 || n - 2 > options_.max_frames) {
        std::lock_guard<std::mutex> lock(stats_mu_);
        ++stats_.refused_malformed;
        ++(n >= 2 && (*parts)[1].size() > 0 ? stats_.refused_too_many_frames
                                            : stats_.refused_empty_header);
        continue;
      }
      auto frame = [&](size_t i) {
        const zmq::message_t& p = (*parts)[i];
        return Frame(parts,
                     std::span<const std::byte>(static_cast<const std::byte*>(p.data()), p.size()));
      };
      Message m;
      m.header = frame(1);
      m.speaker = Speaker((*parts)[1]);
      m.frames.reserve(n - 2);
      for (size_t i = 2; i < n; ++i) m.frames.push_back(frame(i));
      moved_bytes += m.bytes();
      inbox_.Push(std::move(m));
    }
  }

  // The member bound to the connection's key (the User-Id the ZAP handler gave it), if any.
  std::optional<uint64_t> Speaker(zmq::message_t& part) const {
    if (!options_.curve.enabled()) return std::nullopt;
    const char* user_id = zmq_msg_gets(part.handle(), "User-Id");
    if (user_id == nullptr) return std::nullopt;
    const StatusOr<uint64_t> id = ParseNumber<uint64_t>(user_id, "User-Id");
    if (!id.ok() || *id == 0) return std::nullopt;
    return *id;
  }

  // ZAP (RFC 27): [version, request id, domain, address, identity, mechanism, key] in,
  // [version, request id, status, text, user id, metadata] out. Admits the cluster's client key
  // (unless only_allowed) and the allowlist (CurveOptions::Admit).
  void AnswerZap() {
    for (int batch = 0; batch < 64; ++batch) {
      std::vector<zmq::message_t> parts;
      zmq::message_t part;
      if (!zap_.recv(part, zmq::recv_flags::dontwait).has_value()) return;
      parts.push_back(std::move(part));
      while (parts.back().more()) {
        zmq::message_t next;
        (void)zap_.recv(next, zmq::recv_flags::none);
        parts.push_back(std::move(next));
      }
      std::optional<uint64_t> member;
      if (parts.size() >= 7 && parts[5].to_string_view() == "CURVE" && parts[6].size() == 32) {
        std::array<char, 41> key{};
        zmq_z85_encode(key.data(), static_cast<const uint8_t*>(parts[6].data()), 32);
        member = options_.curve.Admit(std::string_view(key.data(), 40));
      }
      const bool admitted = member.has_value();
      if (!admitted) {
        std::lock_guard<std::mutex> lock(stats_mu_);
        ++stats_.refused_auth;
      }
      // The user id: the bound member's id, which ZeroMQ attaches to every message of the
      // connection; empty for a key that speaks for any member.
      const std::string user_id = member.value_or(0) != 0 ? std::to_string(*member) : std::string();
      const std::string request_id = parts.size() >= 2 ? parts[1].to_string() : std::string();
      zap_.send(zmq::buffer(std::string_view("1.0")), zmq::send_flags::sndmore);
      zap_.send(zmq::buffer(request_id), zmq::send_flags::sndmore);
      zap_.send(zmq::buffer(std::string_view(admitted ? "200" : "400")), zmq::send_flags::sndmore);
      zap_.send(zmq::buffer(std::string_view(admitted ? "OK" : "key not admitted")),
                zmq::send_flags::sndmore);
      zap_.send(zmq::buffer(user_id), zmq::send_flags::sndmore);
      zap_.send(zmq::buffer(std::string_view("")), zmq::send_flags::none);
    }
  }

  // Socket-monitor events of the ROUTER: [event id (uint16) + value (uint32)], [endpoint].
  void ReadMonitor() {
    for (int batch = 0; batch < 64; ++batch) {
      zmq::message_t event, address;
      if (!monitor_.recv(event, zmq::recv_flags::dontwait).has_value()) return;
      if (event.more()) (void)monitor_.recv(address, zmq::recv_flags::none);
      if (event.size() < 2) continue;
      uint16_t id = 0;
      std::memcpy(&id, event.data(), sizeof(id));
      if (id & (ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)) {
        std::lock_guard<std::mutex> lock(stats_mu_);
        ++stats_.handshake_failures;
      } else if (id & ZMQ_EVENT_DISCONNECTED) {
        std::lock_guard<std::mutex> lock(stats_mu_);
        ++stats_.inbound_disconnects;
      }
    }
  }

  // A POLLOUT item for every lane with a backlog. REQUIRES sockets_mu_.
  void PollBacklogged(std::vector<zmq::pollitem_t>& items) {
    for (auto& [endpoint, peer] : peers_) {
      for (std::optional<Lane>& lane : peer.lanes) {
        if (!lane.has_value() || lane->queue.empty()) continue;
        items.push_back({lane->dealer.handle(), 0, ZMQ_POLLOUT, 0});
      }
    }
  }

  // What is still queued at Stop (a final model, a Leave) gets up to kStopDrain to reach a
  // socket: a lane made at the end (a first message to that peer) is still connecting, and with
  // ZMQ_IMMEDIATE it takes nothing until it has. Then each socket's linger bounds delivery.
  void DrainOnStop() {
    const auto deadline = std::chrono::steady_clock::now() + kStopDrain;
    std::vector<zmq::pollitem_t> items;
    while (true) {
      items.clear();
      {
        std::lock_guard<std::mutex> sockets(sockets_mu_);
        ApplyCommands();
        for (auto& [endpoint, peer] : peers_) Flush(peer);
        PollBacklogged(items);
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (items.empty() || left.count() <= 0) return;
      try {
        zmq::poll(items, left);
      } catch (const zmq::error_t& e) {
        if (e.num() != EINTR) return;
      }
    }
  }

  void Run() {
    std::vector<zmq::pollitem_t> items;
    while (!stop_.load()) {
      items.clear();
      items.push_back({nullptr, wake_fd_, ZMQ_POLLIN, 0});
      const bool secure = options_.curve.enabled();
      items.push_back({monitor_.handle(), 0, ZMQ_POLLIN, 0});
      if (secure) items.push_back({zap_.handle(), 0, ZMQ_POLLIN, 0});
      {
        std::lock_guard<std::mutex> sockets(sockets_mu_);
        PollBacklogged(items);
      }
      try {
        zmq::poll(items, std::chrono::milliseconds(100));
      } catch (const zmq::error_t& e) {
        if (e.num() == EINTR) continue;
        MURMUR_LOG_ERROR("transport: poll failed: {}", e.what());
        continue;
      }
      if (items[0].revents & ZMQ_POLLIN) {
        uint64_t count;
        [[maybe_unused]] ssize_t n = ::read(wake_fd_, &count, sizeof(count));
      }
      if (items[1].revents & ZMQ_POLLIN) ReadMonitor();
      if (secure && (items[2].revents & ZMQ_POLLIN)) AnswerZap();
      // Cleared before the commands are taken: a Send after this point wakes the thread again.
      wake_pending_.store(false, std::memory_order_release);
      {
        std::lock_guard<std::mutex> sockets(sockets_mu_);
        ApplyCommands();
        for (auto& [endpoint, peer] : peers_) Flush(peer);
      }
    }
    DrainOnStop();
    std::lock_guard<std::mutex> sockets(sockets_mu_);
    peers_.clear();
    if (monitor_) monitor_.close();
    if (zap_) zap_.close();
  }

  const TransportOptions options_;
  zmq::context_t context_;
  zmq::socket_t zap_;      // CURVE only: the ZAP handler (inproc://zeromq.zap.01)
  zmq::socket_t monitor_;  // the ROUTER's disconnects and (CURVE) handshake failures
  std::timed_mutex router_mu_;  // held by the Receive caller that reads router_
  zmq::socket_t router_;
  const std::string endpoint_;
  const int wake_fd_;
  Inbox inbox_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> wake_pending_{false};  // an eventfd write is outstanding

  std::mutex mu_;
  std::deque<Command> commands_;
  mutable std::mutex stats_mu_;
  TransportStats stats_;

  // The DEALERs and their queues: the I/O thread's, and a sender's for a direct send.
  std::mutex sockets_mu_;
  std::map<std::string, Peer, std::less<>> peers_;
  uint64_t use_counter_ = 0;
  uint64_t dropped_logged_ = 0;
  std::thread thread_;
};

}  // namespace

StatusOr<std::unique_ptr<Transport>> CreateZmqTransport(const TransportOptions& options) {
  MURMUR_RETURN_IF_ERROR(ValidateEndpoint(options.listen));
  std::string listen = options.listen;
  if (listen.starts_with("tcp://") && listen.ends_with(":0")) {
    listen = listen.substr(0, listen.size() - 1) + "*";  // ZeroMQ's "any free port"
  }
  const CurveOptions& curve = options.curve;
  if (curve.enabled()) {
    MURMUR_RETURN_IF_ERROR(ValidateCurveKey(curve.server.public_key, "the cluster public key"));
    MURMUR_RETURN_IF_ERROR(ValidateCurveKey(curve.server.secret_key, "the cluster secret key"));
    MURMUR_RETURN_IF_ERROR(ValidateCurveKey(curve.client.public_key, "the node public key"));
    MURMUR_RETURN_IF_ERROR(ValidateCurveKey(curve.client.secret_key, "the node secret key"));
    if (!zmq_has("curve")) {
      return UnavailableError("this ZeroMQ build has no CURVE support (it needs libsodium)");
    }
  }
  try {
    zmq::context_t context(1);
    zmq::socket_t zap, monitor;
    zmq::socket_t router(context, zmq::socket_type::router);
    router.set(zmq::sockopt::rcvhwm, 1024);
    router.set(zmq::sockopt::ipv6, 1);
    router.set(zmq::sockopt::linger, 0);
    router.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(options.max_frame_bytes));
    if (curve.enabled()) {
      // The handler is bound before any socket authenticates: with none, libzmq admits all.
      zap = zmq::socket_t(context, zmq::socket_type::rep);
      zap.bind("inproc://zeromq.zap.01");
      router.set(zmq::sockopt::curve_server, 1);
      router.set(zmq::sockopt::curve_secretkey, curve.server.secret_key);
      router.set(zmq::sockopt::zap_domain, "murmur");
    }
    const std::string monitor_endpoint = "inproc://murmur-router-monitor";
    if (zmq_socket_monitor(router.handle(), monitor_endpoint.c_str(),
                           ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                               ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                               ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) != 0) {
      return InternalError("transport: cannot monitor the ROUTER socket");
    }
    monitor = zmq::socket_t(context, zmq::socket_type::pair);
    monitor.connect(monitor_endpoint);
    router.bind(listen);
    std::string endpoint = router.get(zmq::sockopt::last_endpoint);
    const int wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd < 0) return InternalError("transport: eventfd failed");
    MURMUR_LOG_INFO("transport: {} on {}", curve.enabled() ? "CURVE (authenticated, encrypted)"
                                                           : "plaintext (unauthenticated)",
                    endpoint);
    return std::unique_ptr<Transport>(std::make_unique<ZmqTransport>(
        options, std::move(context), std::move(zap), std::move(monitor), std::move(router),
        std::move(endpoint), wake_fd));
  } catch (const zmq::error_t& e) {
    // A port another process holds, or an address not of this machine, is the caller's to
    // change (exit 2 at the commands), not a passing failure.
    if (e.num() == EADDRINUSE || e.num() == EADDRNOTAVAIL) {
      return InvalidArgumentError("transport: cannot listen on '" + options.listen + "': " +
                                  e.what() + " (give another --listen)");
    }
    return UnavailableError("transport: cannot listen on '" + options.listen + "': " + e.what());
  }
}

}  // namespace murmur::transport
