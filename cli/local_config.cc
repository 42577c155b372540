#include "cli/local_config.h"

#include <vector>

namespace murmur::node {

const ConfigSchema<LocalConfig>& LocalSchema() {
  static const ConfigSchema<LocalConfig>* schema = [] {
    using C = LocalConfig;
    auto* s = new ConfigSchema<LocalConfig>();
    s->Enum("mode", &C::mode, "gossip", ModeChoices(),
            "gossip: train Fashion-MNIST (or the task) with CHOCO-SGD, one shard per node; "
            "coded-tree: CodedReduce over an n-ary tree of L layers (N + 1 processes); tree, "
            "gc, ring: its baselines on the same N workers; ps: --servers K parameter servers "
            "and N workers (full, async or ssp:S); membership: only show who sees whom")
        .Integer("nodes", &C::nodes, 4, 1, 256,
                 "nodes to start (gossip, membership); in coded-tree, tree, gc and ring, when "
                 "given, the workers of a one-layer shape (n = nodes, L = 1; without it n and L "
                 "decide)")
        .Real("duration", &C::duration, "0", 0, 1e9,
              "seconds to run before stopping every node; 0: until the budget is spent "
              "(gossip) or Ctrl-C (membership)")
        .Real("stop_grace_s", &C::stop_grace_s, "30", 0, 86400,
              "seconds a stop (Ctrl-C, --duration) gives every process to end its run and its own "
              "work after the training loop (an --exec program's evaluation and save) before "
              "SIGKILL; a second Ctrl-C ends them at once")
        .Real("unresponsive_s", &C::unresponsive_s, "10", 1, 86400,
              "seconds a node may write no report line before its final one (or 4 times its "
              "longest silence so far, when longer: slow steps; 6 times it before its first line: "
              "start-up) before it is called "
              "unresponsive (stopped, hung, swapped out); its peers go on without it once their "
              "membership declares it dead, and once every other node has ended it is killed "
              "(SIGKILL) and named as the run's failure, so it cannot hold the run")
        .Text("cluster", &C::cluster, "local", "cluster id given to every node")
        .Enum("transport", &C::transport, "tcp",
              {{"tcp", LocalTransport::kTcp}, {"ipc", LocalTransport::kIpc}},
              "loopback TCP on free ports, or Unix-domain sockets in a temporary directory")
        .Parsed("network", &C::network, "loopback",
                "loopback, or netns:rate=R[,burst=B][,topology=star|two-racks][,uplink=R]"
                "[,latency=D][,nodeK=R]",
                "where the nodes talk: loopback, or a network of the run's own (root; ip and tc): "
                "a namespace per node behind a link shaped by tc tbf to `rate` each way (100mbit, "
                "1gbit), nodeK=R a node of its own rate (a thin link), topology=two-racks two "
                "bridges joined by `uplink`, latency a send delay per message (netem is absent); "
                "removed at the end, and a killed run's leftovers by the next run",
                &net::ParseNetworkSpec)
        .Probes(&C::probe_interval_ms, 200, "SWIM protocol period of every node",
                &C::probe_timeout_ms, 80, "direct-ack wait of every node")
        .Progress(&C::progress,
                  "live table on stderr: redrawn (tty), a line per second (plain), or none")
        .SummaryJson(&C::json)
        .Text("run_dir", &C::run_dir, "",
              "keep the run in this directory for murmur report: the command, the resolved "
              "config (config.toml), the summary (result.json), the node logs and every node's "
              "time series; refused if it already holds a run. Empty: none")
        .LogLevel("node_log_level", &C::node_log_level, "info",
                  "log level of the node processes (their logs go to files, listed at the end)")
        .Bool("dry_run", &C::dry_run, false,
              "check every key and the run's shape as a run would, say what would run, and start "
              "nothing (exit 0, or 2 with the reason): murmur experiment checks every cell so")
        .Bool("keep_logs", &C::keep_logs, false,
              "keep the node logs after a run that succeeded (a failed run always keeps them)")
        .Bool("admin", &C::admin, true,
              "give every node an admin HTTP port on 127.0.0.1 (/metrics, /healthz, /status, "
              "/straggler); the ports are printed at the start")
        .Text("admin_token_file", &C::admin_token_file, "",
              "bearer token the nodes' admin ports require for changes (murmur ctl "
              "--token-file); created with a fresh token when it does not exist; empty: a fresh "
              "token in the run's temporary directory, printed at the start")
        .Bool("secure", &C::secure, false,
              "CURVE on every peer link with a fresh cluster key and a key per node bound to its "
              "id, so no node can speak for another (default: plaintext, since every node is on "
              "this machine's loopback)")
        .Text("prometheus_targets", &C::prometheus_targets, "",
              "write the nodes' admin ports to this file as Prometheus file_sd targets, e.g. "
              "/tmp/murmur-targets/local.json, where ops/prometheus/prometheus-file-sd.yml "
              "looks; empty: none")
        .StraggleList(&C::straggle, "")
        .Text(
            "exec", &C::exec, "",
            "gossip: run this shell command as each node instead of `murmur node` (your own "
            "model on murmur's Python or C++ library, e.g. 'python3 train.py'). Each process "
            "gets MURMUR_RANK (0-based), MURMUR_WORLD_SIZE, MURMUR_NODE_ID and its node's keys "
            "(one document, MURMUR_PEER_CONFIG, which the library reads); with --device cuda also "
            "MURMUR_DEVICE, the GPU it is placed on, where the library checks its model is "
            "(without it the program's model is where the program puts it); the live table, "
            "the report, --straggle and --crash apply as for murmur's own nodes. It runs under "
            "bash -c in "
            "a process group of its own (stopped with SIGTERM: the Python module then ends "
            "the run cleanly); its output goes to the node's log")
        .CrashList(&C::crash, " (SIGKILL). A node crashed for good does not fail the run")
        .Text("gpus", &C::gpus, "",
              "GPU ordinals to spread the nodes over round-robin with --device auto or cuda, "
              "e.g. 0,2 (empty: every visible GPU); several nodes may share one")
        .Embed(GossipSchema(), &C::gossip, {"straggle"})
        .Embed(CodedSchema(), &C::coded, {});
    return s;
  }();
  return *schema;
}

}  // namespace murmur::node
