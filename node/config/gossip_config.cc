#include "node/config/gossip_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace murmur::node {

coding::CompressorOptions GossipCompressor(const GossipConfig& c) {
  if (c.compress.has_value()) return *c.compress;
  return gossip::AutoCompressor(c.outer.has_value());
}

namespace {

// Each key's default, written from a default-constructed option struct: the one default of the
// setting (GossipNodeOptions, SoftSyncOptions, OuterOptions, GossipPeerOptions).
std::string Number(double v) { return fmt::format("{}", v); }
std::string Seconds(Duration d) { return Number(std::chrono::duration<double>(d).count()); }
int Millis(Duration d) {
  return static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
}

}  // namespace

std::string GossipAveraging(const GossipConfig& c) {
  const std::string choco = coding::CompressorSpec(GossipCompressor(c));
  if (!c.outer.has_value()) return "CHOCO-SGD " + choco;
  return "outer " + gossip::OuterSpec(c.outer) + " over CHOCO " + choco;
}

const ConfigSchema<GossipConfig>& GossipSchema() {
  static const ConfigSchema<GossipConfig>* schema = [] {
    using C = GossipConfig;
    const GossipPeerOptions trainer;
    const gossip::GossipNodeOptions& node = trainer.node;
    const gossip::SoftSyncOptions& sync = node.soft_sync;
    auto* s = new ConfigSchema<GossipConfig>();
    s->Given(&C::given)
        .Embed(
            TrainSchema(), &C::train,
            {"epochs", "compress", "progress", "json", "log_level", "shard_index", "shard_count",
             "init_from", "save_model"},
            // N nodes averaging batches of 64 take N times fewer steps than one node: the linear
            // scaling rule's larger step. Nesterov for the cluster modes (their tuning is in
            // bench/results/2026-11-28-history.md, "Gossip against exact all-reduce").
            {{"lr", "0.05"}, {"lr_schedule", "auto"}, {"nesterov", "true"}},
            {{"lr_schedule",
              "learning-rate schedule over the cluster's sample budget: auto (cosine with a "
              "warm-up of min(0.2, epochs / 15) epochs unless warmup_epochs is set, when the run "
              "has an epoch budget; constant otherwise), constant, step:F1,F2[,factor=K] (× K at "
              "those fractions of the budget), cosine[:final=R] (down to R × lr)"},
             {"nesterov",
              "Nesterov momentum (on by default for the cluster modes; --momentum 0 needs "
              "--nesterov=false)"},
             {"device",
              "where to train: auto (a CUDA GPU when one is visible, else cpu), cpu, cuda, cuda:N. "
              "Gossip keeps its model, CHOCO copies and mixing on that device; the synchronous "
              "modes compute their weighted gradients there. murmur local spreads its nodes "
              "over the GPUs round-robin (--gpus)"}})
        .Real("epochs", &C::epochs, Number(trainer.epochs), 0, 100000,
              "budget: passes over the whole training set, counted over every node's samples "
              "(0: none)")
        .Parsed(
            "compress", &C::compress, "auto",
            "auto or an operator spec (see `murmur train --help`)",
            "compression operator for the model differences CHOCO sends (error feedback is "
            "implicit). auto: int8 under an outer optimizer, topk:0.01,values=fp16 without",
            +[](std::string_view text) { return ParseCompressorKey(text, "auto"); })
        .Real("consensus_target", &C::consensus_target, Number(node.consensus_target), 0, 10,
              "consensus control (Kong et al. 2021): while a node's estimate of the relative "
              "consensus distance (its own, averaged over recent rounds, and its mixing peers', "
              "which their updates carry: the mean) is under this, it gossips every "
              "consensus_slack x H steps instead of every H (0: off)")
        .Integer("consensus_slack", &C::consensus_slack, node.consensus_slack, 1, 1000,
                 "consensus control: how many times fewer rounds under the target")
        .Parsed("outer", &C::outer, gossip::OuterSpec(node.outer),
                "none, or nesterov|momentum|sgd[:every=H,lr=ETA,momentum=MU,start=EPOCH,rounds=R,"
                "overlap=K]",
                "outer optimizer (DiLoCo's, decentralized): every H inner steps the round's mix "
                "of the model with the neighbours' gives the averaged pseudo-gradient (anchor - "
                "mixed model), an outer step (the default's lr and momentum unless given) moves "
                "the anchor and the next inner steps start from it. From local epoch `start` on; "
                "then H is `every` (or, when a node's share of the budget holds fewer than R x H "
                "steps, the largest power of two that leaves R rounds) and local_steps and "
                "consensus control no longer apply. overlap=K: the node steps on while its "
                "round's updates are in flight and mixes once they are in or after min(K, H-1) "
                "steps, keeping those steps (for thin links; 0 waits at most a quarter round)",
                &gossip::ParseOuterSpec)
        .Real("gamma", &C::gamma, Number(node.choco.gamma), 0, 1,
              "CHOCO consensus step; 0 picks the operator's default (0.05 for top-1 %)")
        .Real("clip_fraction", &C::clip_fraction, Number(node.choco.clip_fraction), 0, 0.99,
              "robust mixing (ClippedGossip): each round the farthest neighbours, up to this "
              "fraction of the round's mixing weight, pull no farther than the nearer "
              "neighbours' distance, so one member cannot drag the others' models; 0: off")
        .Enum("topology", &C::topology, gossip::TopologyName(node.choco.sampling.topology),
              {{"ring", gossip::Topology::kRing},
               {"exponential", gossip::Topology::kExponential},
               {"random", gossip::Topology::kRandom}},
              "who mixes with whom each round")
        .Integer("random_peers", &C::random_peers, node.choco.sampling.random_peers, 2, 64,
                 "peers per node for topology random: exactly this many (every other member when "
                 "the view has fewer; at least 2: one each would pair nodes off for good)")
        .Integer("local_steps", &C::local_steps, node.local_steps, 0, 100000,
                 "H: local SGD steps between gossip rounds (1: plain decentralized SGD). 0: every "
                 "2nd step with twice top-k's kept fraction (and its default gamma) while the "
                 "cluster has at most 4 members, every step above 4 or for other operators (a "
                 "small ring mixes fast: about the same bytes and accuracy in half the rounds)")
        .Real("post_local_epoch", &C::post_local_epoch, Number(node.post_local_epoch), -1, 100000,
              "post-local SGD: from this local epoch on use post_local_steps (-1: never)")
        .Integer("post_local_steps", &C::post_local_steps, node.post_local_steps, 1, 100000,
                 "H after post_local_epoch")
        .Integer("max_lead", &C::max_lead, static_cast<int>(sync.max_lead), -1, 1 << 30,
                 "S: steps a node may run ahead of a neighbour (-1: unbounded, 0: lock-step)")
        .Integer("max_wait_ms", &C::max_wait_ms, Millis(sync.max_wait), 0, 3600000,
                 "W: longest wait for a neighbour before marking it a straggler (with "
                 "max_wait_steps: W's ceiling)")
        .Real("max_wait_steps", &C::max_wait_steps, Number(sync.max_wait_steps), 0, 1e9,
              "W scales with the run: this many of the node's own measured step times, at least "
              "250 ms and at most max_wait_ms (0: W = max_wait_ms), so a slow neighbour is marked "
              "within about as many steps in a short run as in a long one")
        .Real("straggler_hold_s", &C::straggler_hold_s, Seconds(sync.straggler_hold), 0, 86400,
              "how long a straggler is not waited for")
        .Real("staleness_scale", &C::staleness_scale, Number(sync.staleness_scale), 0, 1e9,
              "steps of lag that halve a neighbour's mixing weight (0: no damping)")
        .Real("target_accuracy", &C::target_accuracy, Number(node.target_accuracy), 0, 1,
              "budget: stop when a node's test accuracy reaches this (0: none)")
        .Real("time_limit_s", &C::time_limit_s, Seconds(node.time_limit), 0, 1e9,
              "budget: seconds of training (0: none)")
        .Real("finish_wait_s", &C::finish_wait_s, Seconds(node.finish_wait), 0, 86400,
              "consensus finish: once the budget is spent every node sends its model to the "
              "lowest live id and adopts the members' average; how long a node waits for it "
              "(the collector averages what it has after half of it). The collector's link "
              "carries every member's fp16 model in and the average out, so on a thin link it "
              "takes about members x model bytes / rate. 0: no finish, every node keeps its own "
              "model")
        .Integer("eval_every", &C::eval_every, static_cast<int>(node.eval_every), -1, 1 << 30,
                 "steps between test evaluations on eval_samples rows, so the live table, "
                 "/metrics, the dashboards and the reports show accuracy during the run (-1: "
                 "about 20 evaluations over an epoch budget, every 200 steps without one; 0: "
                 "only at the end)")
        .Integer("eval_samples", &C::eval_samples, static_cast<int>(trainer.eval_samples), 1,
                 1 << 30, "test rows of the periodic evaluations (the final one uses all)")
        .Text("straggle", &C::straggle, "",
              "straggler injection for this node: slowdown=F, delay=D, exp=D, pause=A..B, "
              "send_delay=D, drop=P (e.g. slowdown=4); empty or none: no injection")
        .Choice("init", &C::init, trainer.per_node_init ? "per-node" : "common",
                {"common", "per-node"},
                "initial model: the cluster's seeded one, or a different one per node");
    return s;
  }();
  return *schema;
}

const std::vector<std::string>& PlainRoundKeys() {
  static const std::vector<std::string> keys = {"local_steps", "post_local_epoch",
                                                "post_local_steps", "consensus_target",
                                                "consensus_slack"};
  return keys;
}

std::vector<std::string> GossipKeyNames() {
  std::vector<std::string> out;
  for (const auto& key : GossipSchema().keys()) out.push_back(key.name);
  return out;
}

StatusOr<GossipPeerOptions> GossipOptionsFrom(const GossipConfig& c) {
  GossipPeerOptions o;
  TrainConfig train = c.train;
  train.compress.reset();
  train.shard_index = 0;  // per node, checked by the node
  train.shard_count = 1;
  train.epochs = c.epochs > 0 ? std::max(1, static_cast<int>(std::ceil(c.epochs))) : 0;
  ResolveAutoSchedule(train, c.epochs);
  MURMUR_RETURN_IF_ERROR(ValidateTrainConfig(train));
  if (c.epochs > 0 && train.warmup_epochs >= c.epochs) {
    return InvalidArgumentError("warmup_epochs must be less than the epochs of the budget");
  }
  o.train = TrainOptionsFrom(train);
  o.init_seed = c.train.seed;
  o.per_node_init = c.init == "per-node";
  // Under an outer optimizer its `every` is H: the keys that set CHOCO's own rounds would be
  // ignored, so giving one is refused.
  const bool plain_round_key =
      std::any_of(PlainRoundKeys().begin(), PlainRoundKeys().end(),
                  [&c](const std::string& k) { return c.given.contains(k); });
  if (c.outer.has_value() && plain_round_key) {
    return InvalidArgumentError(
        "local_steps, post_local_epoch, post_local_steps, consensus_target and consensus_slack "
        "set plain CHOCO rounds (--outer none); under --outer " +
        gossip::OuterSpec(c.outer) + " a round is every H steps (its every=)");
  }
  o.node.choco.compressor = GossipCompressor(c);
  o.node.choco.gamma = c.gamma;
  o.node.choco.clip_fraction = c.clip_fraction;
  o.node.consensus_target = c.consensus_target;
  o.node.consensus_slack = c.consensus_slack;
  o.node.outer = c.outer;
  o.node.choco.sampling.topology = c.topology;
  o.node.choco.sampling.random_peers = c.random_peers;
  o.node.local_steps = c.local_steps;
  o.node.post_local_epoch = c.post_local_epoch;
  o.node.post_local_steps = c.post_local_steps;
  o.node.soft_sync.max_lead = c.max_lead;
  o.node.soft_sync.max_wait = std::chrono::milliseconds(c.max_wait_ms);
  o.node.soft_sync.max_wait_steps = c.max_wait_steps;
  o.node.soft_sync.straggler_hold = std::chrono::milliseconds(static_cast<int64_t>(c.straggler_hold_s * 1000));
  o.node.soft_sync.staleness_scale = c.staleness_scale;
  o.epochs = c.epochs;
  o.node.target_accuracy = c.target_accuracy;
  o.node.time_limit = std::chrono::milliseconds(static_cast<int64_t>(c.time_limit_s * 1000));
  o.node.finish_wait = std::chrono::milliseconds(static_cast<int64_t>(c.finish_wait_s * 1000));
  o.node.eval_every = c.eval_every;
  o.eval_samples = c.eval_samples;
  auto straggle = ParseStraggle(c.straggle);
  if (!straggle.ok()) return straggle.status();
  o.straggler = *straggle;
  MURMUR_RETURN_IF_ERROR(o.CheckBudget());
  return o;
}

}  // namespace murmur::node
