#pragma once
// Asking a member for its dense model (a SnapshotRequest{model}): when a node joins a running
// cluster (gossip_node.h "joining") and when it falls far behind ("training", catch-up). The
// fetch asks the most advanced alive member that has not refused; a refusal (a member over its
// snapshot rate answers with a frameless reply of dimension 0) marks that member skipped until a
// model arrives, so the next request goes to another at once.
//
// Invariants: a reply counts only from the member asked; a received model has the node's
// dimension and was decoded as a dense frame; taking the model ends the fetch (nothing awaited,
// refusals forgotten). At most kMaxRefused members are remembered as refusing. Sans-IO: the
// caller sends the request and keeps the clock. Thread safety: none.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "coding/update_codec.h"
#include "gossip/envelope.h"

namespace murmur::gossip {

// Whether a node that caught up by its neighbours' average (`averaged`) or could not should also
// ask for a dense model, which costs ~100 compressed rounds (asked at most once per model_retry):
// without a fresher copy, once far behind the most advanced member (4 S: stopped or cut off, not
// merely slow); under an outer optimizer after every catch-up, since the copies hold the
// neighbours' models before their last outer step (eta / (1 - mu) times the averaged progress at
// steady momentum, outer_optimizer.h).
inline bool WantsDenseModel(bool averaged, bool outer_active, uint64_t step, uint64_t best_clock,
                            int64_t max_lead) {
  const uint64_t far = 4 * static_cast<uint64_t>(max_lead < 1 ? 1 : max_lead);
  return averaged ? outer_active : best_clock >= step + far;
}

class ModelFetch {
 public:
  static constexpr size_t kMaxRefused = 64;

  ModelFetch(NodeId self, uint32_t dimension) : self_(self), dimension_(dimension) {}

  // The member to ask now: the alive one (not this node) with the highest clock by `clock_of`
  // that has not refused; recorded as awaited from `now`. None when there is none (the refusals
  // are then forgotten, so that the next attempt may ask any member again).
  std::optional<NodeId> Ask(const std::vector<MemberEntry>& members,
                            const std::function<uint64_t(NodeId)>& clock_of, TimePoint now);

  enum class Reply : uint8_t {
    kIgnored,    // not from the member awaited (late, or never asked)
    kRefused,    // the member is over its snapshot rate
    kReceived,   // a model to adopt (has_model)
    kMalformed,  // not a dense model of this dimension (`failure`, `status`)
  };
  struct ReplyResult {
    Reply verdict = Reply::kIgnored;
    coding::DecodeFailure failure = coding::DecodeFailure::kNone;
    Status status;
  };
  // A SnapshotReply{model} from `from` whose message carried `step_clock`.
  ReplyResult OnReply(NodeId from, const SnapshotReply& reply, std::span<const std::byte> frame,
                      uint64_t step_clock);

  // A request is out, not refused, and asked less than `wait` before `now`.
  bool Waiting(TimePoint now, Duration wait) const {
    return awaited_ != 0 && !refused_ && now - asked_at_ < wait;
  }
  NodeId awaited() const { return awaited_; }  // 0: none
  bool refused() const { return refused_; }
  TimePoint asked_at() const { return asked_at_; }
  bool has_model() const { return model_.has_value(); }
  // Bytes of the model received and not yet taken.
  uint64_t HeldBytes() const { return model_ ? model_->values.capacity() * sizeof(float) : 0; }

  struct Model {
    std::vector<float> values;
    uint64_t clock = 0;  // the step it was at: the reply's round or its message's clock
  };
  // The model received; the fetch is over. Only when has_model().
  Model Take();
  // Stops waiting for the awaited member (the node starts from its own model).
  void Abandon() { awaited_ = 0; }

 private:
  const NodeId self_;
  const uint32_t dimension_;
  NodeId awaited_ = 0;
  TimePoint asked_at_{};
  bool refused_ = false;          // the awaited member refused: ask the next at once
  std::vector<NodeId> skipped_;   // members that refused, skipped until a model arrives
  std::optional<Model> model_;
};

}  // namespace murmur::gossip
