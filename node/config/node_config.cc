#include "node/config/node_config.h"

#include <chrono>
#include <string>

#include "node/config/secrets.h"
#include "node/peer/seeds.h"

namespace murmur::node {

const ConfigSchema<NodeConfig>& NodeSchema() {
  static const ConfigSchema<NodeConfig>* schema = [] {
    using C = NodeConfig;
    auto* s = new ConfigSchema<NodeConfig>();
    s->Enum("mode", &C::mode, "gossip", ModeChoices(),
            "gossip: train with CHOCO-SGD over compressed gossip; coded-tree: CodedReduce tree "
            "aggregation; tree, gc, ring: its baselines (uncoded tree, flat gradient coding, "
            "ring all-reduce); ps: parameter servers (--servers, --ps-sync); membership: only "
            "keep membership (no training)")
        .Integer("id", &C::id, int64_t{0}, int64_t{0}, int64_t{1} << 62,
                 "node id, unique in the cluster; 0 derives one from the advertised address")
        .Text("listen", &C::listen, "tcp://127.0.0.1:7070",
              "endpoint to bind: tcp://HOST:PORT (port 0: any free one) or ipc://PATH")
        .Text("advertise", &C::advertise, "",
              "endpoint peers use to reach this node (default: the bound one; required when "
              "listening on 0.0.0.0)")
        .Text("seeds", &C::seeds, "",
              "comma-separated HOST:PORT, tcp:// or ipc:// endpoints to join through; DNS names "
              "resolving to several addresses (a headless Service) give one seed each")
        .Text("cluster", &C::cluster, "murmur",
              "cluster id; messages from other clusters are rejected")
        .Integer("incarnation", &C::incarnation, int64_t{0}, int64_t{0}, int64_t{1} << 62,
                 "starting incarnation; 0 uses wall-clock milliseconds so a restart counts up")
        .Probes(&C::probe_interval_ms, 500,
                "SWIM protocol period: one probe and one digest round per period",
                &C::probe_timeout_ms, 200,
                "wait for a direct ack before asking others to probe (below the interval)")
        .Integer("suspicion_multiplier", &C::suspicion_multiplier, 4, 1, 1000,
                 "suspicion timeout = multiplier * max(1, log10 n) * probe interval")
        .Integer("gossip_fanout", &C::gossip_fanout, 3, 1, 64,
                 "members that receive this node's heartbeat digest each period")
        .Real("duration", &C::duration, "0", 0, 1e9,
              "membership: seconds to run, then leave; 0 runs until SIGINT or SIGTERM (the "
              "training modes end on their budget)")
        .Choice("report", &C::report, "none", {"none", "text", "json"},
                "periodic view on stdout: none, a text line, or one JSON object per line")
        .Integer("report_interval_ms", &C::report_interval_ms,
                 static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                      GossipPeerOptions{}.report_interval)
                                      .count()),
                 10, 3600000, "period of --report")
        .Text("run_dir", &C::run_dir, "",
              "keep this node's time series (its report lines, with the time and the injection "
              "in force) in RUN_DIR/series/node-ID.jsonl, for murmur report; empty: none")
        .LogLevel("log_level", &C::log_level, "info", "log verbosity (stderr)")
        .Text("admin", &C::admin, "",
              "HOST:PORT of the admin HTTP port (/metrics, /healthz, /status, /straggler); "
              "port 0 takes a free one; empty: no admin port. Containers use 0.0.0.0:9100")
        .Text("admin_token_file", &C::admin_token_file, "",
              "file holding the bearer token that PUT/DELETE on the admin port require "
              "(Authorization: Bearer TOKEN); without one they are refused. GETs stay open")
        .Text("cluster_key_file", &C::cluster_key_file, "",
              "CURVE keypair of the cluster (murmur keygen): peer links are authenticated and "
              "encrypted, and peers without the key are refused at the handshake")
        .Text("node_key_file", &C::node_key_file, "",
              "this node's own CURVE keypair, admitted by its peers' --allowed-keys-file")
        .Text("allowed_keys_file", &C::allowed_keys_file, "",
              "file or directory of the public keys admitted as clients, one per line: "
              "\"ID KEY\" binds the key to member ID (it speaks for no other), \"KEY\" speaks "
              "for any; without it, holders of the cluster key are, and speak for any member")
        .Bool("plaintext", &C::plaintext, false,
              "peer links without CURVE: anyone who reaches the port can join, send updates and "
              "read the model. For experiments on a network you trust")
        .Embed(GossipSchema(), &C::gossip, {})
        .Shards(&C::shard_index, &C::shard_count,
                "gossip: this node's shard of the training set (0-based)",
                "gossip: number of shards (the cluster size when every node has one)")
        .Integer("expect_members", &C::expect_members, 0, 0, 1 << 20,
                 "gossip: wait (up to 30 s) for this many live members before training; 0 waits "
                 "3 s for whoever is there")
        .Text("save_model", &C::save_model, "",
              "gossip: write the final parameters to this file (a checkpoint of kind model, "
              "loadable by murmur train --init-from)")
        .Text("checkpoint_dir", &C::checkpoint_dir, "",
              "gossip: keep this node's checkpoint here (model, momentum, public copy, clocks, "
              "RNG), written atomically every checkpoint_every steps and on SIGTERM; a restart "
              "resumes from it. Empty: none")
        .Integer("checkpoint_every", &C::checkpoint_every, int64_t{200}, int64_t{0},
                 int64_t{1} << 40,
                 "gossip: local steps between checkpoints; 0: only when the run ends or stops")
        .Embed(CodedSchema(), &C::coded, {});
    return s;
  }();
  return *schema;
}

StatusOr<PeerNodeOptions> NodeOptionsFrom(const NodeConfig& c) {
  PeerNodeOptions o;
  o.id = static_cast<gossip::NodeId>(c.id);
  o.listen = c.listen;
  if (Status s = transport::ValidateEndpoint(c.listen); !s.ok()) {
    return InvalidArgumentError("listen: " + std::string(s.message()));
  }
  o.advertise = c.advertise;
  if (!c.advertise.empty()) {
    if (Status s = transport::ValidateEndpoint(c.advertise); !s.ok()) {
      return InvalidArgumentError("advertise: " + std::string(s.message()));
    }
  }
  auto seeds = ParseSeedList(c.seeds);
  if (!seeds.ok()) return InvalidArgumentError("seeds: " + std::string(seeds.status().message()));
  o.seeds = *seeds;
  if (c.cluster.empty() || c.cluster.size() > 128) {
    return InvalidArgumentError("cluster: must be 1 to 128 characters");
  }
  o.cluster_id = c.cluster;
  o.incarnation = static_cast<gossip::Incarnation>(c.incarnation);
  MURMUR_ASSIGN_OR_RETURN(o.transport.curve, LoadCurveOptions(c.cluster_key_file, c.node_key_file,
                                                              c.allowed_keys_file, c.plaintext));
  MURMUR_ASSIGN_OR_RETURN(o.id, OwnIdentity(o.transport.curve, o.id));
  o.membership.probe_interval = std::chrono::milliseconds(c.probe_interval_ms);
  o.membership.probe_timeout = std::chrono::milliseconds(c.probe_timeout_ms);
  o.membership.suspicion_multiplier = c.suspicion_multiplier;
  o.membership.gossip_fanout = c.gossip_fanout;
  o.membership.join_retry = std::max<Duration>(o.membership.probe_interval * 2, std::chrono::milliseconds(200));
  o.membership.dead_gossip = o.membership.probe_interval * 5;
  if (c.probe_timeout_ms >= c.probe_interval_ms) {
    return InvalidArgumentError("probe_timeout_ms (" + std::to_string(c.probe_timeout_ms) +
                                ") must be below probe_interval_ms (" +
                                std::to_string(c.probe_interval_ms) + ")");
  }
  return o;
}


}  // namespace murmur::node
