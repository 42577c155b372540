#include "cli/node_command.h"

#include <fmt/format.h>
#include <prometheus/registry.h>
#include <signal.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "base/check.h"
#include "base/log.h"
#include "cli/command.h"
#include "cli/node_gossip.h"
#include "cli/placement.h"
#include "cli/run_dir.h"
#include "kernels/device.h"
#include "node/config/admin_port.h"
#include "node/config/secrets.h"
#include "node/config/train_config.h"
#include "node/observe/admin_server.h"
#include "node/observe/telemetry.h"
#include "node/peer/seeds.h"

namespace murmur::node {
namespace {

std::atomic<int> g_stops{0};

void OnStopSignal(int) { g_stops.fetch_add(1); }

}  // namespace

void InstallStopSignals() {
  struct sigaction sa {};
  sa.sa_handler = &OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

bool StopRequested() { return g_stops.load() > 0; }
int StopSignals() { return g_stops.load(); }

int RefuseNode(const Status& status) {
  std::fprintf(stderr, "murmur node: %s\n", status.ToString().c_str());
  return 2;
}

class NodeCommand : public ConfiguredCommand<NodeConfig> {
 public:
  explicit NodeCommand(CLI::App& app)
      : ConfiguredCommand(
            app, "node",
            "Run one peer: join the cluster through its seeds and train its shard by gossip (or a "
            "synchronous mode's tree or ring), or only keep membership",
            NodeSchema()) {
    subcommand()->add_flag(
        "--print-config", print_config_,
        "check every key, print the ones given as one TOML document (what --config reads, and "
        "a library program from MURMUR_PEER_CONFIG) and exit");
  }
  int Run() override;

 private:
  bool print_config_ = false;
  std::map<std::string, std::string> texts_;  // every key's resolved text
  std::set<std::string> given_;               // the keys a file, the environment or a flag gave
  // The keys, resolved and checked against each other (keys of another mode, checkpoint_every
  // without a directory, duration outside membership).
  StatusOr<NodeConfig> ResolveConfig();
};

namespace {

// What a training node works on: the whole data set and the model.
struct Workload {
  TrainTest data;
  Model<float> model;
};
StatusOr<Workload> LoadWorkload(const NodeConfig& config, const kernels::Device& device) {
  MURMUR_ASSIGN_OR_RETURN(TrainTest data, LoadTrainData(config.gossip.train));
  MURMUR_ASSIGN_OR_RETURN(
      Model<float> model,
      Model<float>::Create(TrainModelSpec(config.gossip.train, data.train), device));
  return Workload{std::move(data), std::move(model)};
}

// Where this node trains, from --device (kernels::ResolveDevice): every training mode trains
// where it is told; membership trains nothing, so `auto` is the CPU for it and an explicit GPU is
// refused. Never a silent fallback: every refusal says why (kFailedPrecondition, or
// kInvalidArgument for a bad value).
StatusOr<kernels::Device> NodeDevice(const NodeConfig& config) {
  const kernels::DeviceSpec& spec = config.gossip.train.device;
  if (config.mode == gossip::Mode::kMembership) {  // no GPU probe: it would only slow the start
    MURMUR_RETURN_IF_ERROR(PlaceNodes(spec, "", 1, 0, /*trains=*/false).status());
    return kernels::Device::Cpu();
  }
  MURMUR_ASSIGN_OR_RETURN(kernels::Device device, kernels::ResolveDevice(spec));
  MURMUR_RETURN_IF_ERROR(kernels::CheckTf32(config.gossip.train.tf32, device));
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
  if (!work.ok()) return RefuseNode(work.status());
  auto& data = work->data;
  auto& model = work->model;
  if (auto schedule = CodedSchedule(*options, data.train.rows); !schedule.ok()) {
    return RefuseNode(schedule.status());
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
  if (config.report != "none" || series.on())
    report = [&](const CodedProgress& p) {
      const std::string line = CodedProgressJson(p);
      series.Write((*peer)->id(), line);
      if (json) {
        std::printf("%s\n", line.c_str());
      } else if (config.report != "none") {
        const auto [mean, p95] = MeanAndP95(p.iteration_ms);
        std::printf(
            "node %llu: %s rank %lld (%s), iteration %llu, loss %s, iteration %.1f ms mean "
            "%.1f ms p95, late %llu\n",
            static_cast<unsigned long long>((*peer)->id()),
            std::string(gossip::ModeName(p.mode)).c_str(), static_cast<long long>(p.rank),
            p.role.c_str(), static_cast<unsigned long long>(p.iteration),
            std::isfinite(p.loss) ? fmt::format("{:.5f}", p.loss).c_str() : "-", mean, p95,
            static_cast<unsigned long long>(p.stats.late_dropped));
      }
      std::fflush(stdout);
    };
  auto result =
      RunCodedTrainer(*options, **peer, model, data.train, &data.test,
                      std::chrono::milliseconds(config.report_interval_ms), report, StopRequested);
  if (!result.ok()) {
    std::fprintf(stderr, "murmur node: %s\n", result.status().ToString().c_str());
    return 1;
  }
  (*peer)->Leave();
  return 0;
}

// `murmur node --mode membership`: the SWIM member alone, its view reported, until the duration
// or a stop signal.
int RunMembershipNode(const NodeConfig& config, const PeerNodeOptions& options,
                      NodeTelemetry& telemetry) {
  auto node = PeerNode::Start(options);
  if (!node.ok()) {
    std::fprintf(stderr, "murmur node: %s\n", node.status().ToString().c_str());
    return node.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  telemetry.AttachPeer(node->get());
  const auto start = std::chrono::steady_clock::now();
  auto next_report = start;
  Series series(config, &telemetry);
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  while (!StopRequested() && (config.duration <= 0 || elapsed() < config.duration)) {
    const size_t live = (*node)->LiveView().size();
    telemetry.SetJoined(live > 1 || options.seeds.empty(),
                        "no other member seen yet (seeds: " + config.seeds + ")");
    if ((config.report != "none" || series.on()) &&
        std::chrono::steady_clock::now() >= next_report) {
      next_report += std::chrono::milliseconds(config.report_interval_ms);
      const PeerSnapshot s = (*node)->Snapshot();
      const std::string line = SnapshotJson(s, elapsed());
      series.Write(s.id, line);
      if (config.report == "json") {
        std::printf("%s\n", line.c_str());
      } else if (config.report != "none") {
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

// A synchronous or membership node: its telemetry and admin port here, then its run.
int RunWithTelemetry(const NodeConfig& config, const PeerNodeOptions& options,
                     const kernels::Device& device) {
  // The injection from flag/env/file; the admin port may replace it at run time.
  StragglerOptions initial;
  AdminServer::Validator validate;
  if (gossip::IsSyncMode(config.mode)) {
    auto straggle = ParseCodedStraggle(config.mode, config.gossip.straggle);
    if (straggle.ok()) initial = *straggle;
    validate = [mode = config.mode](const StragglerOptions& o) {
      return CheckCodedStraggle(mode, o);
    };
  } else {
    validate = [](const StragglerOptions&) {
      return FailedPreconditionError(
          "membership mode trains nothing: there is nothing to slow down");
    };
  }
  // Metrics live in a registry owned here and handed to the telemetry (never a global one).
  prometheus::Registry registry;
  NodeTelemetry telemetry(registry, std::string(gossip::ModeName(config.mode)), initial);
  telemetry.SetDevice(device.ToString());
  auto admin = StartAdminPort(config.admin, config.admin_token_file, telemetry, validate);
  if (!admin.ok()) {
    std::fprintf(stderr, "murmur node: %s\n", std::string(admin.status().message()).c_str());
    return 2;
  }
  if (gossip::IsSyncMode(config.mode)) return RunCodedNode(config, options, &telemetry, device);
  return RunMembershipNode(config, options, telemetry);
}

}  // namespace

StatusOr<NodeConfig> NodeCommand::ResolveConfig() {
  MURMUR_ASSIGN_OR_RETURN(NodeConfig config, parser_.Resolve(std::getenv, &texts_, &given_));
  MURMUR_RETURN_IF_ERROR(RefuseOtherModeKeys(
      config.mode, parser_.GivenFlags(texts_, given_, OtherModeKeys(config.mode))));
  if (config.checkpoint_dir.empty() && given_.contains("checkpoint_every")) {
    return InvalidArgumentError(
        "checkpoint_every without checkpoint_dir: there is nowhere to write checkpoints");
  }
  if (config.mode != gossip::Mode::kMembership && config.duration > 0) {
    return InvalidArgumentError(fmt::format(
        "duration is how long a membership node runs; --mode {} ends on its budget ({})",
        gossip::ModeName(config.mode),
        config.mode == gossip::Mode::kGossip ? "epochs, target_accuracy or time_limit_s"
                                             : "iterations or time_limit_s"));
  }
  return config;
}

int NodeCommand::Run() {
  StatusOr<NodeConfig> config = ResolveConfig();
  StatusOr<PeerNodeOptions> options =
      config.ok() ? NodeOptionsFrom(*config) : StatusOr<PeerNodeOptions>(config.status());
  if (!options.ok()) {
    std::fprintf(stderr, "murmur node: %s\n", std::string(options.status().message()).c_str());
    return 2;
  }
  if (print_config_) {
    std::fputs(parser_.GivenDocument(texts_, given_).c_str(), stdout);
    return 0;
  }
  MURMUR_CHECK_OK(SetLogLevel(config->log_level));
  // Where it trains, decided before anything starts: a device it cannot use is exit 2.
  StatusOr<kernels::Device> device = NodeDevice(*config);
  if (!device.ok()) return RefuseNode(device.status());
  InstallStopSignals();
  if (!config->run_dir.empty()) {
    if (Status made = MakeRunDir(config->run_dir, "run_dir"); !made.ok()) return RefuseNode(made);
  }
  if (config->mode != gossip::Mode::kGossip &&
      (!config->checkpoint_dir.empty() || !config->save_model.empty())) {
    return RefuseNode(InvalidArgumentError(
        "checkpoint_dir and save_model are for --mode gossip; in the synchronous modes the "
        "root holds the one model"));
  }
  // Gossip runs on the library, which keeps the node's metrics and admin port itself (and checks
  // save_model's path before the run: Peer::Start).
  if (config->mode == gossip::Mode::kGossip) return RunGossipNode(*config, *options, *device);
  return RunWithTelemetry(*config, *options, *device);
}

std::unique_ptr<Command> MakeNodeCommand(CLI::App& app) {
  return std::make_unique<NodeCommand>(app);
}

}  // namespace murmur::node
