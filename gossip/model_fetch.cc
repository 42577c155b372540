#include "gossip/model_fetch.h"

#include <algorithm>
#include <utility>

#include "base/check.h"

namespace murmur::gossip {

std::optional<NodeId> ModelFetch::Ask(const std::vector<MemberEntry>& members,
                                      const std::function<uint64_t(NodeId)>& clock_of,
                                      TimePoint now) {
  NodeId best = 0;
  uint64_t clock = 0;
  for (const MemberEntry& m : members) {
    const bool skipped = std::find(skipped_.begin(), skipped_.end(), m.id) != skipped_.end();
    if (m.id != self_ && m.state == MemberState::kAlive && !skipped && clock_of(m.id) > clock) {
      best = m.id, clock = clock_of(m.id);
    }
  }
  if (best == 0) {
    skipped_.clear();
    return std::nullopt;
  }
  awaited_ = best;
  asked_at_ = now;
  refused_ = false;
  return best;
}

ModelFetch::ReplyResult ModelFetch::OnReply(NodeId from, const SnapshotReply& reply,
                                            std::span<const std::byte> frame,
                                            uint64_t step_clock) {
  if (from != awaited_ || from == 0) return {};
  if (reply.dimension == 0 && frame.empty()) {
    if (skipped_.size() < kMaxRefused) skipped_.push_back(from);
    refused_ = true;
    ReplyResult r;
    r.verdict = Reply::kRefused;
    return r;
  }
  coding::Update u;
  ReplyResult r;
  r.status = coding::DecodeUpdate(frame, dimension_, u, &r.failure);
  if (!r.status.ok() || !u.dense) {
    if (r.status.ok()) r.status = InvalidArgumentError("a sparse frame where a model was due");
    r.verdict = Reply::kMalformed;
    return r;
  }
  MURMUR_CHECK_EQ(u.values.size(), dimension_);
  model_ = Model{std::move(u.values), std::max(reply.round, step_clock)};
  r.verdict = Reply::kReceived;
  return r;
}

ModelFetch::Model ModelFetch::Take() {
  MURMUR_CHECK(model_.has_value()) << "no model received";
  Model m = *std::move(model_);
  model_.reset();
  awaited_ = 0;
  skipped_.clear();
  return m;
}

}  // namespace murmur::gossip
