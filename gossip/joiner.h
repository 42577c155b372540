#pragma once
// A gossip node's joining (gossip_node.h "joining"): wait for `expect_members` live members (up
// to `expect_wait`), or `join_wait` for whoever is there; then, when the cluster is further along
// than `join_after_steps`, ask its most advanced live member for its model (ModelFetch), asking
// again at once after a refusal, or after `snapshot_timeout` without a reply, up to
// `join_attempts` times, then start from the node's own model. A node resumed from its own
// checkpoint starts from it unless the cluster is more than `resume_max_lag` steps ahead. A stop,
// or a quorum of finished members (nobody more is coming), starts training at once, where the
// budget ends it.
//
// Invariants: the attempts never exceed join_attempts; once it asked, it never waits for members
// again. Sans-IO: the caller sends the request, adopts the model and starts training. Thread
// safety: none.

#include <cstdint>
#include <functional>
#include <vector>

#include "base/clock.h"
#include "gossip/envelope.h"
#include "gossip/gossip_node_options.h"
#include "gossip/model_fetch.h"

namespace murmur::gossip {

// Where the cluster and the node stand while it joins.
struct JoinReading {
  size_t live_members = 1;  // this node included
  uint64_t best_clock = 0;  // the most advanced live member (claims_ledger.h)
  uint64_t own_step = 0;
  bool resumed = false;  // from the node's own checkpoint
  bool over = false;     // a stop was requested or a quorum of the members finished
};

class Joiner {
 public:
  Joiner(const GossipNodeOptions& options, TimePoint start);

  enum class Do : uint8_t {
    kWait,   // look again at `until`
    kAsk,    // send the model request to `to`, then look again at `until`
    kStart,  // start training (after adopting the fetched model when `adopt`)
  };
  struct Decision {
    Do what = Do::kWait;
    TimePoint until{};
    NodeId to = 0;
    bool drop_resume = false;  // kAsk: the checkpoint is too far behind, join like a new node
    bool adopt = false;
  };
  // The next step of the join. `members` and `clock_of` choose whom the fetch asks.
  Decision Advance(const JoinReading& r, ModelFetch& fetch, const std::vector<MemberEntry>& members,
                   const std::function<uint64_t(NodeId)>& clock_of, TimePoint now);

  int attempt() const { return attempt_; }

 private:
  Decision WaitForMembers(const JoinReading& r, ModelFetch& fetch,
                          const std::vector<MemberEntry>& members,
                          const std::function<uint64_t(NodeId)>& clock_of, TimePoint now);
  Decision WaitForModel(const JoinReading& r, ModelFetch& fetch,
                        const std::vector<MemberEntry>& members,
                        const std::function<uint64_t(NodeId)>& clock_of, TimePoint now);

  const GossipNodeOptions* o_;  // the node's, which outlive the joiner
  TimePoint deadline_;  // of the wait for members
  int attempt_ = 0;     // model requests made (0: waiting for members)
};

}  // namespace murmur::gossip
