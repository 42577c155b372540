#include "gossip/joiner.h"

#include <algorithm>

#include "base/check.h"
#include "base/log.h"

namespace murmur::gossip {

Joiner::Joiner(const GossipNodeOptions& options, TimePoint start)
    : o_(&options),
      deadline_(start + (options.expect_members > 0 ? options.expect_wait : options.join_wait)) {}

Joiner::Decision Joiner::Advance(const JoinReading& r, ModelFetch& fetch,
                                 const std::vector<MemberEntry>& members,
                                 const std::function<uint64_t(NodeId)>& clock_of, TimePoint now) {
  return attempt_ == 0 ? WaitForMembers(r, fetch, members, clock_of, now)
                       : WaitForModel(r, fetch, members, clock_of, now);
}

Joiner::Decision Joiner::WaitForMembers(const JoinReading& r, ModelFetch& fetch,
                                        const std::vector<MemberEntry>& members,
                                        const std::function<uint64_t(NodeId)>& clock_of,
                                        TimePoint now) {
  const bool enough =
      o_->expect_members > 0 && static_cast<int>(r.live_members) >= o_->expect_members;
  if (!enough && now < deadline_ && !r.over) {
    return {Do::kWait, std::min(deadline_, now + std::chrono::milliseconds(20))};
  }
  // Peers only a few steps in are starting together with this node, which starts like them.
  const bool running = r.best_clock > static_cast<uint64_t>(o_->join_after_steps);
  const bool own_is_fresh = r.resumed && r.best_clock <= r.own_step + o_->resume_max_lag;
  if (running && !own_is_fresh && !r.over) {
    if (const std::optional<NodeId> to = fetch.Ask(members, clock_of, now)) {
      if (r.resumed) {
        MURMUR_LOG_WARN(
            "node {}: its checkpoint (step {}) is more than {} steps behind the cluster "
            "(step {}): joining with a peer's model",
            o_->self, r.own_step, o_->resume_max_lag, r.best_clock);
      }
      attempt_ = 1;
      return {Do::kAsk, now + o_->snapshot_timeout, *to, r.resumed};
    }
  }
  if (r.resumed) {
    MURMUR_LOG_INFO("node {}: resuming from its checkpoint at step {} (the cluster is at {})",
                    o_->self, r.own_step, r.best_clock);
  }
  return {Do::kStart};
}

Joiner::Decision Joiner::WaitForModel(const JoinReading& r, ModelFetch& fetch,
                                      const std::vector<MemberEntry>& members,
                                      const std::function<uint64_t(NodeId)>& clock_of,
                                      TimePoint now) {
  if (fetch.has_model()) {
    Decision d{Do::kStart};
    d.adopt = true;
    return d;
  }
  if (r.over) return {Do::kStart};
  if (fetch.Waiting(now, o_->snapshot_timeout)) {
    return {Do::kWait, fetch.asked_at() + o_->snapshot_timeout};
  }
  if (fetch.refused()) {
    MURMUR_LOG_INFO("node {}: node {} refused a model snapshot (over its rate; attempt {} of {})",
                    o_->self, fetch.awaited(), attempt_, o_->join_attempts);
  } else {
    MURMUR_LOG_WARN("node {}: no model snapshot from {} in {:.1f} s (attempt {} of {})", o_->self,
                    fetch.awaited(), ToSeconds(o_->snapshot_timeout), attempt_, o_->join_attempts);
  }
  if (attempt_ < o_->join_attempts) {
    if (const std::optional<NodeId> to = fetch.Ask(members, clock_of, now)) {
      ++attempt_;
      MURMUR_CHECK_LE(attempt_, o_->join_attempts);
      return {Do::kAsk, now + o_->snapshot_timeout, *to};
    }
  }
  fetch.Abandon();
  MURMUR_LOG_WARN("node {}: starting from its own model", o_->self);
  return {Do::kStart};
}

}  // namespace murmur::gossip
