#pragma once
// What a gossip peer is configured with: one struct, resolved once where its keys enter
// (node/config: NodeOptionsFrom for `peer`, GossipOptionsFrom for the rest, for `murmur node`;
// api/peer_options.h for a library caller, which composes it with the library's own keys) and
// handed on whole. GossipSession gives `peer` to PeerNode and `node` to gossip::GossipNode,
// filling the machine's per-run fields (self, incarnation, device, shard_rows, budget_samples,
// lr_schedule, expect_members) from the rest below; nothing is copied field by field between
// the resolver and the machines.

#include <chrono>
#include <cstdint>
#include <optional>

#include "base/clock.h"
#include "base/lr_schedule.h"
#include "base/status.h"
#include "gossip/gossip_node_options.h"
#include "node/peer/peer_node.h"
#include "node/peer/straggler.h"
#include "node/train/trainer.h"

namespace murmur::node {

struct GossipPeerOptions {
  // The machines' own options. `peer`: listen, seeds, keys, membership timing. `node`:
  // compression, topology, H, the outer optimizer, soft sync, the target accuracy and time
  // limit, evaluations, joining, the finish.
  PeerNodeOptions peer;
  gossip::GossipNodeOptions node;

  // The run. Budget: it ends at the first of epochs, node.target_accuracy and node.time_limit
  // (0 = not used; at least one is set).
  double epochs = 3;          // passes over the whole training set, all members' samples
  int64_t epoch_samples = 0;  // the whole cluster's samples per epoch; required with epochs
  int64_t shard_samples = 0;  // this process's per local epoch; 0: epoch_samples / members
  int expect_members = 0;     // members to wait for before training (0: start at once)
  // murmur's Trainer: batch size, optimizer, shuffling seed, and the rate's shape, which gives
  // each step's rate over the cluster's samples when `schedule_rate`.
  TrainOptions train;
  bool schedule_rate = false;   // false: the caller's optimizer keeps its own rate
  uint64_t init_seed = 1;       // the cluster's common initial model
  bool per_node_init = false;   // every node draws its own initial model (murmur's Trainer)
  bool same_init = false;       // every member starts from exactly the same values: no snapshot
  int64_t eval_samples = 1000;  // test rows used by the periodic evaluations
  // The steps' loss is a language model's mean cross-entropy per token in nats: the reports
  // give its perplexity, exp(loss), beside it.
  bool language_model = false;
  StragglerOptions straggler;   // injected slowness (resilience experiments)

  // The session's own limits.
  Duration report_interval = std::chrono::seconds(1);  // progress calls, at most this often
  // No other member answered this long after the start (and there are seeds other than this
  // node): the run ends with kUnavailable. 0: it trains on alone, saying so.
  Duration join_timeout = std::chrono::seconds(30);
  // After this many refusals of messages that carry a model of another size, the run ends with
  // kFailedPrecondition (the processes train different models); 0: they are only counted.
  int wrong_dimension_limit = 0;

  // The budget rule, stated once: at least one of epochs, target accuracy and time limit.
  Status CheckBudget() const;
  // Every rule across keys (kInvalidArgument naming the key): the budget, an epoch budget's
  // size, the linear scaling rule's members, the evaluation. The machine's own rules
  // (GossipNodeOptions::Validate) are GossipNode::Create's, once the session filled them in.
  Status Validate() const;

  // What the session derives for the machine: samples of one local epoch, the cluster's
  // samples to train (0: another budget ends the run), and the cluster's rate schedule.
  // REQUIRES: Validate() is ok.
  int64_t ShardRows() const;
  int64_t BudgetSamples() const;
  StatusOr<std::optional<LrSchedule>> Schedule() const;
};

}  // namespace murmur::node
