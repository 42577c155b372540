#include "node/app/command.h"
#include "node/app/node_command.h"

#include <signal.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <thread>

#include <prometheus/registry.h>

#include "base/check.h"
#include "base/log.h"
#include "kernels/device.h"
#include "node/app/placement.h"
#include "node/observe/admin_server.h"
#include "node/observe/telemetry.h"
#include "node/peer/seeds.h"
#include "node/train/sharding.h"
#include "node/app/secrets.h"
#include "node/app/run_dir.h"
#include "node/app/train_config.h"
#include <fmt/format.h>
#include <cmath>

namespace murmur::node {
namespace {

std::atomic<bool> g_stop{false};

void OnStopSignal(int) { g_stop.store(true); }

}  // namespace

void InstallStopSignals() {
  struct sigaction sa {};
  sa.sa_handler = &OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

bool StopRequested() { return g_stop.load(); }

const ConfigSchema<NodeConfig>& NodeSchema() {
  static const ConfigSchema<NodeConfig>* schema = [] {
    using C = NodeConfig;
    auto* s = new ConfigSchema<NodeConfig>();
    s->Enum("mode", &C::mode, "gossip", ModeChoices(),
              "gossip: train with CHOCO-SGD over compressed gossip; coded-tree: CodedReduce tree "
              "aggregation; tree, gc, ring: its baselines (uncoded tree, flat gradient coding, "
              "ring all-reduce); membership: only keep membership (no training)")
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
        .Integer("probe_interval_ms", &C::probe_interval_ms, 500, 10, 600000,
                 "SWIM protocol period: one probe and one digest round per period")
        .Integer("probe_timeout_ms", &C::probe_timeout_ms, 200, 1, 600000,
                 "wait for a direct ack before asking others to probe (below the interval)")
        .Integer("suspicion_multiplier", &C::suspicion_multiplier, 4, 1, 1000,
                 "suspicion timeout = multiplier * max(1, log10 n) * probe interval")
        .Integer("gossip_fanout", &C::gossip_fanout, 3, 1, 64,
                 "members that receive this node's heartbeat digest each period")
        .Real("duration", &C::duration, "0", 0, 1e9,
              "seconds to run, then leave; 0 runs until SIGINT or SIGTERM")
        .Choice("report", &C::report, "none", {"none", "text", "json"},
                "periodic view on stdout: none, a text line, or one JSON object per line")
        .Integer("report_interval_ms", &C::report_interval_ms, 1000, 10, 3600000,
                 "period of --report")
        .Text("run_dir", &C::run_dir, "",
              "keep this node's time series (its report lines, with the time and the injection "
              "in force) in RUN_DIR/series/node-ID.jsonl, for murmur report; empty: none")
        .Choice("log_level", &C::log_level, "info",
                {"trace", "debug", "info", "warn", "error", "off"}, "log verbosity (stderr)")
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
              "public keys (one per line) of the nodes admitted as clients; without it, "
              "holders of the cluster key are")
        .Bool("plaintext", &C::plaintext, false,
              "peer links without CURVE: anyone who reaches the port can join, send updates and "
              "read the model. For experiments on a network you trust")
        .Embed(GossipSchema(), &C::gossip, {})
        .Integer("shard_index", &C::shard_index, 0, 0, 1 << 20,
                 "gossip: this node's shard of the training set (0-based)")
        .Integer("shard_count", &C::shard_count, 1, 1, 1 << 20,
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
        .Integer("checkpoint_every", &C::checkpoint_every, int64_t{200}, int64_t{0}, int64_t{1} << 40,
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


class NodeCommand : public ConfiguredCommand<NodeConfig> {
 public:
  explicit NodeCommand(CLI::App& app)
      : ConfiguredCommand(app, "node",
                          "Run one peer: join the cluster through its seeds and train its shard by gossip (or a "
                          "synchronous mode's tree or ring), or only keep membership",
                          NodeSchema()) {}
  int Run() override;
};

namespace {

// A bad configuration: exit 2 with what and why.
int Refuse(const Status& status) {
  std::fprintf(stderr, "murmur node: %s\n", status.ToString().c_str());
  return 2;
}

// What a training node works on: the whole data set and the model.
struct Workload {
  TrainTest data;
  Model<float> model;
};
StatusOr<Workload> LoadWorkload(const NodeConfig& config, const kernels::Device& device) {
  MURMUR_ASSIGN_OR_RETURN(TrainTest data, LoadTrainData(config.gossip.train));
  MURMUR_ASSIGN_OR_RETURN(
      Model<float> model, Model<float>::Create(TrainModelSpec(config.gossip.train, data.train), device));
  return Workload{std::move(data), std::move(model)};
}

// Where this node trains, from --device (kernels::ResolveDevice): every training mode trains
// where it is told; membership trains nothing, so `auto` is the CPU for it and an explicit GPU is
// refused. Never a silent fallback: every refusal says why (kFailedPrecondition, or
// kInvalidArgument for a bad value).
StatusOr<kernels::Device> NodeDevice(const NodeConfig& config) {
  const std::string& spec = config.gossip.train.device;
  if (config.mode == gossip::Mode::kMembership) {  // no GPU probe: it would only slow the start
    MURMUR_RETURN_IF_ERROR(PlaceNodes(spec, "", 1, 0, /*trains=*/false).status());
    return kernels::Device::Cpu();
  }
  MURMUR_ASSIGN_OR_RETURN(kernels::Device device, kernels::ResolveDevice(spec));
  device.allow_tf32 = config.gossip.train.tf32;
  return device;
}

// The node's time series in its run directory (run_dir.h), or nothing without --run-dir.
class Series {
 public:
  Series(const NodeConfig& config, NodeTelemetry* telemetry) : telemetry_(telemetry) {
    if (!config.run_dir.empty()) writer_.emplace(config.run_dir);
  }
  bool on() const { return writer_.has_value(); }
  void Write(uint64_t id, const std::string& line) {
    if (!writer_) return;
    const std::string injection =
        telemetry_ != nullptr ? StraggleSpec(telemetry_->straggler().Current().options) : "";
    writer_->Write(id, line, injection);
  }

 private:
  NodeTelemetry* telemetry_;
  std::optional<SeriesWriter> writer_;
};

int RunCodedNode(const NodeConfig& config, const PeerNodeOptions& peer_options,
                 NodeTelemetry* telemetry, const kernels::Device& device) {
  auto options = CodedOptionsFrom(config.mode, config.coded, config.gossip);
  if (!options.ok()) {
    std::fprintf(stderr, "murmur node: %s\n", std::string(options.status().message()).c_str());
    return 2;
  }
  auto work = LoadWorkload(config, device);
  if (!work.ok()) return Refuse(work.status());
  auto& data = work->data;
  auto& model = work->model;
  if (auto schedule = CodedSchedule(*options, data.train.rows); !schedule.ok()) {
    return Refuse(schedule.status());
  }
  auto peer = PeerNode::Start(peer_options);
  if (!peer.ok()) {
    std::fprintf(stderr, "murmur node: %s\n", peer.status().ToString().c_str());
    return peer.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  options->telemetry = telemetry;
  if (telemetry != nullptr) telemetry->AttachPeer(peer->get());
  struct Detach {
    NodeTelemetry* t;
    ~Detach() {
      if (t != nullptr) t->AttachPeer(nullptr);
    }
  } detach{telemetry};
  const bool json = config.report == "json";
  Series series(config, telemetry);
  std::function<void(const CodedProgress&)> report;
  if (config.report != "none" || series.on()) report = [&](const CodedProgress& p) {
    const std::string line = CodedProgressJson(p);
    series.Write((*peer)->id(), line);
    if (json) {
      std::printf("%s\n", line.c_str());
    } else if (config.report != "none") {
      const auto [mean, p95] = MeanAndP95(p.iteration_ms);
      std::printf("node %llu: %s rank %lld (%s), iteration %llu, loss %s, iteration %.1f ms mean "
                  "%.1f ms p95, late %llu\n",
                  static_cast<unsigned long long>((*peer)->id()), p.mode.c_str(),
                  static_cast<long long>(p.rank), p.role.c_str(),
                  static_cast<unsigned long long>(p.iteration),
                  std::isfinite(p.loss) ? fmt::format("{:.5f}", p.loss).c_str() : "-", mean, p95,
                  static_cast<unsigned long long>(p.stats.late_dropped));
    }
    std::fflush(stdout);
  };
  auto result = RunCodedTrainer(*options, **peer, model, data.train, &data.test,
                                std::chrono::milliseconds(config.report_interval_ms), report,
                                StopRequested);
  if (!result.ok()) {
    std::fprintf(stderr, "murmur node: %s\n", result.status().ToString().c_str());
    return 1;
  }
  (*peer)->Leave();
  return 0;
}

int RunGossipNode(const NodeConfig& config, const PeerNodeOptions& peer,
                  NodeTelemetry* telemetry, const kernels::Device& device) {
  auto options = GossipOptionsFrom(config.gossip);
  if (!options.ok()) {
    std::fprintf(stderr, "murmur node: %s\n", std::string(options.status().message()).c_str());
    return 2;
  }
  if (config.shard_index >= config.shard_count) {
    std::fprintf(stderr, "murmur node: shard_index %d must be less than shard_count %d\n",
                 config.shard_index, config.shard_count);
    return 2;
  }
  auto work = LoadWorkload(config, device);
  if (!work.ok()) return Refuse(work.status());
  auto& data = work->data;
  auto& model = work->model;
  auto strategy = ParseShardStrategy(config.gossip.train.shard_strategy);
  auto rows = ShardRows(data.train.rows, config.shard_index, config.shard_count, *strategy);
  if (!rows.ok()) return Refuse(rows.status());
  options->peer = peer;
  options->telemetry = telemetry;
  options->dataset_rows = data.train.rows;
  options->node.expect_members = config.expect_members;
  options->save_model = config.save_model;
  options->checkpoint.dir = config.checkpoint_dir;
  options->checkpoint.every = config.checkpoint_every;
  // What a resumed checkpoint must have been written by: the same cluster, data, shard and
  // compression (the model is checked separately).
  options->checkpoint.identity = fmt::format(
      "cluster {}, task {}, shard {}/{} ({}), compress {}", config.cluster, config.gossip.train.task,
      config.shard_index, config.shard_count, config.gossip.train.shard_strategy,
      config.gossip.compress);
  if (!config.checkpoint_dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(config.checkpoint_dir, error);
    if (error || !std::filesystem::is_directory(config.checkpoint_dir)) {
      return Refuse(InvalidArgumentError("checkpoint_dir: cannot create '" + config.checkpoint_dir +
                                         "': " + error.message()));
    }
  }
  // Each node shuffles its own shard in its own order.
  options->train.seed = config.gossip.train.seed * 1000003ULL + static_cast<uint64_t>(config.shard_index);
  options->report_interval = std::chrono::milliseconds(config.report_interval_ms);
  const bool json = config.report == "json";
  Series series(config, telemetry);
  GossipProgressFn report;
  if (config.report != "none" || series.on()) report = [&](const GossipProgress& p) {
    const std::string line = GossipProgressJson(p, false);
    series.Write(p.id, line);
    if (json) {
      std::printf("%s\n", line.c_str());
    } else if (config.report != "none") {
      std::printf("node %llu: step %lld, loss %.4f, accuracy %s, sent %.2f MB, lag %llu\n",
                  static_cast<unsigned long long>(p.id), static_cast<long long>(p.step), p.loss,
                  p.accuracy >= 0 ? fmt::format("{:.4f}", p.accuracy).c_str() : "-",
                  static_cast<double>(p.bytes_sent) / 1e6, static_cast<unsigned long long>(p.max_lag));
    }
    std::fflush(stdout);
  };
  auto result = RunGossipTrainer(*options, model, data.train, *std::move(rows), &data.test,
                                 report, StopRequested);
  // A checkpoint of another model, run or node: the operator must choose. Options the driver
  // cannot use (the learning-rate schedule for this data and budget) are refused before joining.
  if (result.status().code() == StatusCode::kFailedPrecondition ||
      result.status().code() == StatusCode::kInvalidArgument) {
    return Refuse(result.status());
  }
  if (!result.ok()) {
    std::fprintf(stderr, "murmur node: %s\n", result.status().ToString().c_str());
    return 1;
  }
  const std::string final_line = GossipProgressJson(*result, true);
  series.Write(result->id, final_line);
  if (json) {
    std::printf("%s\n", final_line.c_str());
  } else if (config.report != "none") {
    std::printf("node %llu: done (%s) at step %lld, test accuracy %.4f, %.2f MB sent\n",
                static_cast<unsigned long long>(result->id), result->end_reason.c_str(),
                static_cast<long long>(result->step), result->accuracy,
                static_cast<double>(result->bytes_sent) / 1e6);
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace

int NodeCommand::Run() {
  StatusOr<NodeConfig> config = parser_.Resolve(std::getenv);
  StatusOr<PeerNodeOptions> options =
      config.ok() ? NodeOptionsFrom(*config) : StatusOr<PeerNodeOptions>(config.status());
  if (!options.ok()) {
    std::fprintf(stderr, "murmur node: %s\n", std::string(options.status().message()).c_str());
    return 2;
  }
  MURMUR_CHECK_OK(SetLogLevel(config->log_level));
  // Where it trains, decided before anything starts: a device it cannot use is exit 2.
  StatusOr<kernels::Device> device = NodeDevice(*config);
  if (!device.ok()) return Refuse(device.status());
  InstallStopSignals();
  // The injection from flag/env/file; the admin port may replace it at run time.
  StragglerOptions initial;
  AdminServer::Validator validate;
  if (gossip::IsSyncMode(config->mode)) {
    auto straggle = ParseCodedStraggle(config->mode, config->gossip.straggle);
    if (straggle.ok()) initial = *straggle;
    validate = [mode = config->mode](const StragglerOptions& o) {
      return CheckCodedStraggle(mode, o);
    };
  } else if (config->mode == gossip::Mode::kGossip) {
    if (auto straggle = ParseStraggle(config->gossip.straggle); straggle.ok()) initial = *straggle;
  } else {
    validate = [](const StragglerOptions&) {
      return FailedPreconditionError("membership mode trains nothing: there is nothing to slow down");
    };
  }
  // Metrics live in a registry owned here and handed to the telemetry (never a global one).
  prometheus::Registry registry;
  NodeTelemetry telemetry(registry, std::string(gossip::ModeName(config->mode)), initial);
  telemetry.SetDevice(device->ToString());
  std::unique_ptr<AdminServer> admin;
  if (!config->admin.empty()) {
    std::string token;
    if (!config->admin_token_file.empty()) {
      auto loaded = LoadAdminToken(config->admin_token_file);
      if (!loaded.ok()) return Refuse(loaded.status());
      token = *loaded;
    }
    auto started = AdminServer::Start(config->admin, telemetry, validate, token);
    if (!started.ok()) {
      std::fprintf(stderr, "murmur node: %s\n", std::string(started.status().message()).c_str());
      return 2;
    }
    admin = *std::move(started);
    MURMUR_LOG_INFO("admin port: http://{}:{}/ (metrics, healthz, status, straggler); changes "
                    "{}", admin->host(), admin->port(),
                    token.empty() ? "refused (no --admin-token-file)" : "need the bearer token");
  }
  if (!config->run_dir.empty()) {
    if (Status made = MakeRunDir(config->run_dir, "run_dir"); !made.ok()) return Refuse(made);
  }
  if (config->mode != gossip::Mode::kGossip &&
      (!config->checkpoint_dir.empty() || !config->save_model.empty())) {
    return Refuse(InvalidArgumentError(
        "checkpoint_dir and save_model are for --mode gossip; in the synchronous modes the "
        "root holds the one model"));
  }
  if (config->mode == gossip::Mode::kGossip) {
    return RunGossipNode(*config, *options, &telemetry, *device);
  }
  if (gossip::IsSyncMode(config->mode)) return RunCodedNode(*config, *options, &telemetry, *device);
  auto node = PeerNode::Start(*options);
  if (!node.ok()) {
    std::fprintf(stderr, "murmur node: %s\n", node.status().ToString().c_str());
    return node.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  telemetry.AttachPeer(node->get());
  const auto start = std::chrono::steady_clock::now();
  auto next_report = start;
  Series series(*config, &telemetry);
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  while (!StopRequested() && (config->duration <= 0 || elapsed() < config->duration)) {
    const size_t live = (*node)->LiveView().size();
    telemetry.SetJoined(live > 1 || options->seeds.empty(),
                        "no other member seen yet (seeds: " + config->seeds + ")");
    if ((config->report != "none" || series.on()) && std::chrono::steady_clock::now() >= next_report) {
      next_report += std::chrono::milliseconds(config->report_interval_ms);
      const PeerSnapshot s = (*node)->Snapshot();
      const std::string line = SnapshotJson(s, elapsed());
      series.Write(s.id, line);
      if (config->report == "json") {
        std::printf("%s\n", line.c_str());
      } else if (config->report != "none") {
        size_t alive = 0;
        for (const auto& m : s.members) alive += m.state == gossip::MemberState::kAlive;
        std::printf("node %llu: %zu members, %zu alive, view epoch %llu\n",
                    static_cast<unsigned long long>(s.id), s.members.size(), alive,
                    static_cast<unsigned long long>(s.view_epoch));
      }
      std::fflush(stdout);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  MURMUR_LOG_INFO("node {}: leaving", (*node)->id());
  telemetry.AttachPeer(nullptr);
  (*node)->Leave();
  return 0;
}

std::unique_ptr<Command> MakeNodeCommand(CLI::App& app) { return std::make_unique<NodeCommand>(app); }

}  // namespace murmur::node
