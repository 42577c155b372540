#include "gossip/transport/inproc_transport.h"

#include <map>
#include <mutex>
#include <vector>

#include "gossip/transport/queues.h"

namespace murmur::transport {

// The state of one bound transport, shared with the network so senders can deliver to it and it
// can flush its queues when a peer binds.
struct InProcState {
  explicit InProcState(const TransportOptions& o) : options(o), inbox(o.max_inbox_messages, o.max_inbox_bytes) {}
  void Flush(const std::string& peer, InProcNetwork& network);

  const TransportOptions options;
  std::string endpoint;
  Inbox inbox;
  std::mutex mu;  // guards queues and stats
  std::map<std::string, SendQueue> queues;
  TransportStats stats;
};

class InProcNetwork {
 public:
  Status Bind(std::string& endpoint, const std::shared_ptr<InProcState>& state) {
    std::vector<std::shared_ptr<InProcState>> others;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (endpoint.ends_with(":0") || endpoint.ends_with("*")) {
        endpoint = endpoint.substr(0, endpoint.find_last_of(":*")) + "-" + std::to_string(++next_);
      }
      auto it = bound_.find(endpoint);
      if (it != bound_.end() && !it->second.expired()) {
        return UnavailableError("inproc endpoint '" + endpoint + "' is already bound");
      }
      bound_[endpoint] = state;
      for (auto& [name, weak] : bound_) {
        if (auto other = weak.lock(); other && other != state) others.push_back(other);
      }
    }
    // A peer that comes back gets what was queued for it.
    for (auto& other : others) other->Flush(endpoint, *this);
    return OkStatus();
  }

  void Unbind(const std::string& endpoint) {
    std::lock_guard<std::mutex> lock(mu_);
    bound_.erase(endpoint);
  }

  // Delivers into the receiver's inbox; false when nobody is bound there.
  bool Deliver(const std::string& endpoint, const Message& message) {
    std::shared_ptr<InProcState> receiver;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = bound_.find(endpoint);
      if (it == bound_.end()) return false;
      receiver = it->second.lock();
    }
    if (!receiver) return false;
    bool oversized = false;  // as the ZeroMQ socket's maxmsgsize: a larger frame is refused
    for (const Frame& f : message.frames) oversized |= f.size() > receiver->options.max_frame_bytes;
    if (oversized) {
      std::lock_guard<std::mutex> lock(receiver->mu);
      ++receiver->stats.refused_malformed;
      return true;
    }
    if (message.header.size() == 0 || message.frames.size() > receiver->options.max_frames) {
      std::lock_guard<std::mutex> lock(receiver->mu);
      ++receiver->stats.refused_malformed;
      ++(message.header.size() == 0 ? receiver->stats.refused_empty_header
                                    : receiver->stats.refused_too_many_frames);
      return true;
    }
    receiver->inbox.Push(message);
    return true;
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::weak_ptr<InProcState>> bound_;
  uint64_t next_ = 0;
};

void InProcState::Flush(const std::string& peer, InProcNetwork& network) {
  std::lock_guard<std::mutex> lock(mu);
  auto it = queues.find(peer);
  if (it == queues.end()) return;
  while (!it->second.empty() && network.Deliver(peer, it->second.front())) {
    ++stats.sent_messages;
    stats.sent_bytes += it->second.front().bytes();
    it->second.PopFront();
  }
}

namespace {

class InProcTransport final : public Transport {
 public:
  InProcTransport(std::shared_ptr<InProcNetwork> network, std::shared_ptr<InProcState> state)
      : network_(std::move(network)), state_(std::move(state)) {}
  ~InProcTransport() override {
    network_->Unbind(state_->endpoint);
    state_->inbox.Close();
  }

  std::string endpoint() const override { return state_->endpoint; }

  void Send(std::string_view peer, Message message) override {
    const std::string name(peer);
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      auto it = state_->queues.try_emplace(name, state_->options.max_queued_messages,
                                           state_->options.max_queued_bytes).first;
      it->second.Push(std::move(message), state_->stats);
      state_->stats.peers = state_->queues.size();
    }
    state_->Flush(name, *network_);
  }

  std::optional<Message> Receive(std::chrono::milliseconds timeout) override {
    return state_->inbox.Pop(timeout);
  }

  void Forget(std::string_view peer) override {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->queues.erase(std::string(peer));
    state_->stats.peers = state_->queues.size();
  }

  TransportStats Stats() const override {
    TransportStats s;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      s = state_->stats;
    }
    state_->inbox.AddStats(s);
    return s;
  }

 private:
  std::shared_ptr<InProcNetwork> network_;
  std::shared_ptr<InProcState> state_;
};

}  // namespace

std::shared_ptr<InProcNetwork> MakeInProcNetwork() { return std::make_shared<InProcNetwork>(); }

StatusOr<std::unique_ptr<Transport>> CreateInProcTransport(std::shared_ptr<InProcNetwork> network,
                                                           const TransportOptions& options) {
  if (!options.listen.starts_with("inproc://")) {
    return InvalidArgumentError("inproc transport endpoint '" + options.listen +
                                "' must start with inproc://");
  }
  auto state = std::make_shared<InProcState>(options);
  state->endpoint = options.listen;
  MURMUR_RETURN_IF_ERROR(network->Bind(state->endpoint, state));
  return std::unique_ptr<Transport>(
      std::make_unique<InProcTransport>(std::move(network), std::move(state)));
}

}  // namespace murmur::transport
