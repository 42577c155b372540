#pragma once
// Serving this node's dense model to members that ask for it (SnapshotRequest{model}: a joiner,
// or a member far behind), in every phase. A dense model costs as much as ~100 compressed rounds
// to send, so requests are admitted by a token bucket (GossipNodeOptions::model_snapshot_burst at
// once, model_snapshots_per_s on average); one over the rate is answered with a refusal (a
// frameless reply of dimension 0) so that the requester asks another member at once instead of
// waiting out its snapshot timeout. A model holding a non-finite value is never served: the
// request is refused the same way (kRejectOwnModelNonFinite), and the token goes back.
//
// Invariants: at most burst + rate × elapsed models served; every request answered (the model or
// the refusal); every model served is finite. Sans-IO. Thread safety: none.

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

#include "base/clock.h"
#include "base/token_bucket.h"
#include "gossip/node_io.h"

namespace murmur::gossip {

class ModelServer {
 public:
  ModelServer(double per_second, double burst) : bucket_(per_second, burst) {}

  struct Answer {
    SendTo send;
    bool refused = false;     // `send` is the refusal
    std::string_view reason;  // why refused: kRejectSnapshotRate or kRejectOwnModelNonFinite
  };
  // The answer to `to`'s request at `now`, this node at `step`. `model` gives the model on the
  // host, read only when it is served.
  Answer Serve(NodeId to, uint64_t step, const std::function<std::span<const float>()>& model,
               TimePoint now);

  uint64_t served() const { return served_; }
  uint64_t refused() const { return refused_; }  // for either reason

 private:
  TokenBucket bucket_;
  uint64_t served_ = 0;
  uint64_t refused_ = 0;
};

}  // namespace murmur::gossip
