// SyncNode's incoming messages: those that arrive before the ranks are assembled are held (a
// bounded few per sender), the others checked (sender, frame, the tensor's length for the
// mode, its bytes and values) and handed to the node's role; every refusal is counted by
// reason.

#include <fmt/format.h>

#include <algorithm>

#include "base/check.h"
#include "base/log.h"
#include "coding/update_codec.h"
#include "coding/vector_ops.h"
#include "gossip/sync_node.h"

namespace murmur::gossip {

void SyncNode::Reject(std::string_view reason, NodeId from, const std::string& why) {
  ++s_.rejected_messages;
  if (observer_ != nullptr) observer_->Rejected(reason);
  if (rejections_logged_++ % 1000 == 0) {
    MURMUR_LOG_WARN("node {} ({} rank {}): message from {} rejected ({} so far): {}", o_.self,
                    ModeName(plan_.mode), rank_, from, s_.rejected_messages, why);
  }
}

void SyncNode::Step(const Incoming& m, TimePoint now) {
  if (phase_ == Phase::kAssembling) {
    // A ring rank's predecessor can send N - 1 reduce-scatter chunks to a rank still settling
    // (each of its steps needs only its own predecessor's chunk), and every one is needed.
    const auto processes = static_cast<size_t>(plan_.processes);
    const size_t share =
        std::max<size_t>(plan_.mode == Mode::kRing ? processes : 1, kMaxEarlyMessages / processes);
    const size_t capacity = std::max(kMaxEarlyMessages, share);
    size_t& waiting = early_from_[m.from];
    if (waiting >= share) {
      // Superseded: a synchronous peer that sent `share` newer messages is past this one.
      auto oldest = std::find_if(early_.begin(), early_.end(),
                                 [&](const Early& e) { return e.message.from == m.from; });
      MURMUR_CHECK(oldest != early_.end()) << "early_from_ counts early_";
      early_.erase(oldest);
      --waiting;
      ++s_.early_dropped;
    } else if (early_.size() >= capacity) {
      if (waiting == 0) early_from_.erase(m.from);
      return Reject(kRejectProtocol, m.from,
                    fmt::format("more than {} messages before the ranks were assembled, from "
                                "more senders than the {} of the plan",
                                capacity, plan_.processes));
    }
    ++waiting;
    Early e{m, std::vector<std::byte>(m.frame.begin(), m.frame.end())};
    e.message.frame = {};
    early_.push_back(std::move(e));
    return;
  }
  // After the end nothing changes any more: a late answer must not complete an iteration (an
  // SGD step after the final evaluation, "finished" announced as false again). Only ps server 0
  // still takes the other servers' final slices while it waits to evaluate.
  if (phase_ != Phase::kRunning && !(IsServer() && rank_ == 0 && evaluating_final_)) return;
  Handle(m, now);
}

// The length of the tensor a message from `sender` must carry (the model, a ps slice or a ring
// chunk); none when it is refused (counted).
std::optional<size_t> SyncNode::ExpectedLength(const Incoming& m, const CodedMessage& header,
                                               int64_t sender) {
  if (plan_.mode == Mode::kPs) {
    // A server's slice (a model from a server, or a gradient slice for this server).
    const int64_t slice = sender < plan_.ps.servers ? sender : rank_;
    if (slice >= plan_.ps.servers) {
      Reject(kRejectProtocol, m.from, "a worker's message to a worker");
      return std::nullopt;
    }
    const auto [begin, end] = PsSlice(params_.size(), plan_.ps.servers, slice);
    return end - begin;
  }
  if (ring_) {
    if (header.tree_position >= 2 * (plan_.processes - 1)) {
      Reject(kRejectProtocol, m.from, "ring step out of range");
      return std::nullopt;
    }
    return ring_->ExpectedLength(header.tree_position);
  }
  return params_.size();
}

// The message's tensor, decoded, finite and dense; false when it is refused (counted).
bool SyncNode::DecodeTensor(const Incoming& m, size_t expected, int64_t sender, coding::Update& u) {
  coding::DecodeFailure failure = coding::DecodeFailure::kNone;
  // Only a ps worker's push to its server may be compressed (--compress); the rest is dense.
  const bool compressed_push = server_ && sender >= plan_.ps.servers && o_.push_compress;
  if (Status s = coding::DecodeUpdate(m.frame, static_cast<uint32_t>(expected), u, &failure);
      !s.ok() || (!u.dense && !compressed_push)) {
    Reject(failure == coding::DecodeFailure::kNone ? kRejectProtocol
                                                   : coding::DecodeFailureName(failure),
           m.from, fmt::format("payload {}: {}", coding::DecodeFailureName(failure), s.message()));
    return false;
  }
  if (auto bad = coding::FirstNonFinite(u.values)) {
    Reject(coding::DecodeFailureName(coding::DecodeFailure::kNonFinite), m.from,
           fmt::format("non-finite value at index {}", *bad));
    return false;
  }
  if (!u.dense) {
    std::vector<float> dense(expected);
    coding::Densify(u, dense);
    u.values = std::move(dense);
  }
  return true;
}

void SyncNode::Handle(const Incoming& m, TimePoint now) {
  const auto* header = std::get_if<CodedMessage>(&m.payload);
  if (header == nullptr) {
    return Reject(kRejectWrongMode, m.from,
                  "not a CodedReduce message (is every node started with the same --mode?)");
  }
  auto it = rank_of_.find(m.from);
  if (it == rank_of_.end()) {
    return Reject(kRejectUnknownSender, m.from,
                  "sender is not a member of this run's tree or ring");
  }
  if (m.frames != 1) return Reject(kRejectFrames, m.from, "expected one tensor frame");
  const int64_t sender = it->second;
  const std::optional<size_t> expected = ExpectedLength(m, *header, sender);
  coding::Update u;
  if (!expected.has_value() || !DecodeTensor(m, *expected, sender, u)) return;
  if (observer_ != nullptr) {
    observer_->Staleness(static_cast<double>(s_.iteration) -
                         static_cast<double>(header->iteration));
  }
  const CodedStats before = stats();
  if (server_ && sender < plan_.ps.servers) {
    TakeFinalSlice(sender, *header, u.values, now);
  } else if (phase_ != Phase::kRunning) {
    return;  // server 0 waiting for the final slices: no more updates
  } else if (server_) {
    server_->Step(sender, *header, u.values);
    Dispatch(server_->TakeOutput(), now);
  } else if (worker_) {
    worker_->Step(sender, *header, u.values);
    Dispatch(worker_->TakeOutput(), now);
  } else if (tree_) {
    tree_->Step(sender, *header, u.values, now);
    Dispatch(tree_->TakeOutput(), now);
  } else {
    ring_->Step(sender, *header, u.values);
    Dispatch(ring_->TakeOutput(), now);
  }
  const CodedStats after = stats();
  if (after.rejected != before.rejected) {
    Reject(kRejectProtocol, m.from,
           "the protocol refused it (wrong sender, kind, length or iteration)");
  } else if (after.late_dropped == before.late_dropped && after.duplicates == before.duplicates) {
    // Progress: a message the protocol took (what it already had, a resend, is none, or two
    // ranks resending to each other would hold off the stall bound for good).
    last_progress_ = now;
  }
  MaybeCompute(now);
}

}  // namespace murmur::gossip
