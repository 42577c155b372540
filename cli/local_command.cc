// `murmur local`: N `murmur node` processes on loopback (local_cluster.h), a live table, a
// report at the end, and a clean stop on Ctrl-C or when done. One run loop serves every mode;
// a LocalMode says what a mode adds: its nodes' arguments, its table, its report.

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/command.h"
#include "cli/injection_lists.h"
#include "cli/local_cluster.h"
#include "cli/local_config.h"
#include "cli/local_mode.h"
#include "cli/local_run.h"
#include "cli/node_command.h"
#include "cli/placement.h"
#include "cli/progress.h"
#include "cli/run_dir.h"
#include "coding/compressor.h"
#include "gossip/gossip_node.h"
#include "gossip/sync_node.h"
#include "kernels/device.h"
#include "node/config/peer_keys.h"
#include "node/driver/step_breakdown.h"
#include "node/train/checkpoint.h"
#include "node/train/fashion_mnist.h"

namespace murmur::node {
namespace {

using gossip::Mode;

// What `murmur local` resolved, and which keys were given (a file, the environment or a flag)
// or derived from the given ones (n and L from --nodes).
struct LocalResolved {
  LocalConfig config;
  std::map<std::string, std::string> texts;
  std::set<std::string> given;
};

// The node keys `murmur local` hands each node in its document: the ones given to it (from a
// flag, the environment or its --config file, which the nodes do not read: it may hold keys
// only `local` knows), with their resolved text.
NodeKeys Forwarded(const ConfigParser<LocalConfig>& parser, const LocalResolved& r, bool coded) {
  std::vector<std::string> keys = coded ? CodedKeyNames() : std::vector<std::string>{};
  for (const auto& k : GossipKeyNames()) {
    if (k != "straggle" && k != "device") keys.push_back(k);  // each node gets its own device
  }
  const auto given = parser.GivenTexts(r.texts, r.given, keys);
  return NodeKeys(given.begin(), given.end());
}

class MembershipLocal : public LocalMode {
 public:
  explicit MembershipLocal(const LocalConfig& config) : config_(config) {}
  int processes() const override { return config_.nodes; }
  NodeKeys KeysOf(int) const override { return {{"mode", "membership"}}; }
  std::string Table(const LocalCluster& cluster, double t) const override {
    return cluster.Table(t);
  }
  bool plain_is_table() const override { return false; }
  std::string Plain(const LocalCluster& cluster, double t) const override {
    size_t seeing_all = 0;
    const size_t n = cluster.children().size();
    for (size_t i = 0; i < n; ++i) {
      bool all = true;
      for (size_t j = 0; j < n; ++j) all &= cluster.View(i, j) == '=' || cluster.View(i, j) == 'A';
      seeing_all += all;
    }
    return fmt::format("murmur local: {:.1f} s, {}/{} nodes see every node alive\n", t, seeing_all,
                       n);
  }
  void Observe(LocalCluster& cluster, double t, bool plain) override {
    if (converged_at_ < 0 && cluster.AllSeeAllAlive()) {
      converged_at_ = t;
      if (plain) std::fprintf(stderr, "murmur local: full view after %.2f s\n", t);
    }
  }
  bool ends_when_all_exit() const override { return false; }
  bool final_table_before_stop() const override { return true; }
  void BeforeStop(const LocalCluster& cluster, double) override {
    final_ok_ = cluster.AllSeeAllAlive();
  }
  bool Succeeded(const LocalCluster&, int) const override {
    return converged_at_ >= 0 && final_ok_;
  }
  void Print(const LocalCluster&, double wall, int killed, bool,
             const ReportOut& out) const override {
    {
      nlohmann::json j;
      j["nodes"] = config_.nodes;
      j["converged"] = converged_at_ >= 0;
      j["converged_after_s"] = converged_at_;
      j["full_view_at_end"] = final_ok_;
      if (PrintJson(j, wall, killed, out)) return;
    }
    std::printf("%d nodes: %s; %s at the end; stopped %s; %s\n", config_.nodes,
                converged_at_ >= 0 ? fmt::format("full view after {:.2f} s", converged_at_).c_str()
                                   : "never reached a full view",
                final_ok_ ? "full view" : "NOT a full view",
                killed == 0 ? "cleanly" : fmt::format("({} killed)", killed).c_str(),
                LogsLine(out).c_str());
  }

 private:
  const LocalConfig& config_;
  double converged_at_ = -1;
  bool final_ok_ = false;
};

// `--exec` runs programs on the library (api/peer.h): only gossip, and only the keys
// a library peer takes; the rest concern murmur's own model and are refused with the reason.
Status CheckExec(const LocalResolved& r, const ConfigParser<LocalConfig>& parser) {
  const LocalConfig& config = r.config;
  if (config.mode != Mode::kGossip) {
    return InvalidArgumentError(
        fmt::format("exec: programs on the library train by gossip, not "
                    "--mode {}",
                    gossip::ModeName(config.mode)));
  }
  for (const auto& [key, text] : Forwarded(parser, r, false)) {
    if (key == "device" || PeerLibraryKeys().count(key) > 0) continue;
    if (key == "eval_every" || key == "target_accuracy") continue;  // with the program's evaluate
    return InvalidArgumentError(
        fmt::format("{}: does not apply with --exec: {}", key, WhyNotAPeerLibraryKey(key)));
  }
  return OkStatus();
}

// The network's latency is every node's send delay (netem is absent): added to each node's
// injection; a node given a send delay of its own as well is refused (which one would hold?).
Status AddLatency(const net::NetworkSpec& network, int processes,
                  std::map<int, std::string>& straggle) {
  if (network.latency.count() == 0) return OkStatus();
  const std::string delay =
      fmt::format("send_delay={}us",
                  std::chrono::duration_cast<std::chrono::microseconds>(network.latency).count());
  for (int i = 0; i < processes; ++i) {
    std::string& spec = straggle[i];
    if (spec.find("send_delay") != std::string::npos) {
      return InvalidArgumentError(fmt::format(
          "straggle: node {} has a send_delay of its own and the network's latency is a send "
          "delay too; give one of them",
          i + 1));
    }
    spec += (spec.empty() ? "" : ",") + delay;
  }
  return OkStatus();
}

// What a run on a network of namespaces needs, checked before anything starts.
Status CheckNetwork(const LocalConfig& config, int processes) {
  if (config.transport != LocalTransport::kTcp) {
    return InvalidArgumentError(
        "network: Unix-domain sockets (--transport ipc) do not cross a "
        "network; use --transport tcp with --network netns:...");
  }
  if (processes > 250) {
    return InvalidArgumentError(fmt::format(
        "network: a network of namespaces holds 250 nodes; this run has {}", processes));
  }
  for (const auto& [id, bps] : config.network.node_rate_bps) {
    if (id > processes) {
      return InvalidArgumentError(
          fmt::format("network: node{} has a rate but the run has {} nodes", id, processes));
    }
  }
  return net::CheckCanBuild();
}

// n and L from --nodes, recorded as given: the nodes are handed them.
Status NodesAsOneLayer(LocalResolved& r) {
  const bool shaped = r.given.count("n") > 0 || r.given.count("L") > 0;
  MURMUR_RETURN_IF_ERROR(NodesAsOneLayer(r.config.mode, r.config.nodes, shaped, r.config.coded));
  r.texts["n"] = std::to_string(r.config.coded.n);
  r.texts["L"] = std::to_string(r.config.coded.L);
  r.given.insert({"n", "L"});
  return OkStatus();
}

// The run's network of namespaces, after removing what killed runs left; said on stderr.
StatusOr<std::unique_ptr<net::NetnsNetwork>> BuildNetwork(const net::NetworkSpec& spec,
                                                          int processes) {
  InstallStopSignals();  // Ctrl-C while it is built still removes it
  for (const std::string& name : net::RemoveLeftovers()) {
    std::fprintf(stderr,
                 "murmur local: removed network namespace %s, left by a run that was killed\n",
                 name.c_str());
  }
  MURMUR_ASSIGN_OR_RETURN(std::unique_ptr<net::NetnsNetwork> network,
                          net::NetnsNetwork::Create(spec, processes));
  std::fprintf(stderr, "murmur local: network %s: %s; this machine is %s on it\n",
               network->tag().c_str(), spec.Describe().c_str(), network->host_address().c_str());
  return network;
}

int Refuse(const std::string& what) {
  std::fprintf(stderr, "murmur local: %s\n", what.c_str());
  return 2;
}

}  // namespace

// What a run will start, every key checked before any process does (a bad shape, injection,
// device or directory is exit 2).
struct LocalPlan {
  int processes = 0;
  std::optional<gossip::SyncPlan> sync;  // the synchronous modes' ranks
  std::map<int, std::string> straggle;   // a node's --straggle, by index
  std::vector<CrashPlan> crashes;
  std::vector<std::string> devices;  // each node's --device
};

class LocalCommand : public ConfiguredCommand<LocalConfig> {
 public:
  explicit LocalCommand(CLI::App& app)
      : ConfiguredCommand(
            app, "local",
            "Train with N node processes on this machine (gossip, or a synchronous mode's tree "
            "or ring), with a live table and a report; --mode membership only shows who sees whom",
            LocalSchema()) {}
  int Run() override;

 private:
  // The keys, and the cross-key rules the parser cannot check; `texts` as the run records them.
  StatusOr<LocalResolved> Resolve() const;
  StatusOr<LocalPlan> Plan(LocalResolved& r) const;
  // Starts the planned processes (after the run directory and the network) and runs them.
  int Start(const LocalResolved& r, LocalPlan plan) const;
};

StatusOr<LocalResolved> LocalCommand::Resolve() const {
  LocalResolved r;
  MURMUR_ASSIGN_OR_RETURN(r.config, parser_.Resolve(std::getenv, &r.texts, &r.given));
  LocalConfig& config = r.config;
  if (gossip::IsSyncMode(config.mode) && r.given.count("nodes") > 0) {
    MURMUR_RETURN_IF_ERROR(NodesAsOneLayer(r));
  }
  if (!config.run_dir.empty()) {
    config.run_dir = std::filesystem::absolute(config.run_dir).lexically_normal().string();
    r.texts["run_dir"] = config.run_dir;
  }
  if (config.probe_timeout_ms >= config.probe_interval_ms) {
    return InvalidArgumentError("probe_timeout_ms must be below probe_interval_ms");
  }
  MURMUR_RETURN_IF_ERROR(RefuseOtherModeKeys(
      config.mode, parser_.GivenFlags(r.texts, r.given, OtherModeKeys(config.mode))));
  if (!config.run_dir.empty() &&
      std::filesystem::exists(std::filesystem::path(config.run_dir) / "result.json")) {
    return InvalidArgumentError("run_dir: '" + config.run_dir +
                                "' already holds a run (result.json); give a new directory, or "
                                "remove that one");
  }
  return r;
}

namespace {

// The synchronous modes' ranks (none for gossip and membership), and the mode's own checks.
StatusOr<std::optional<gossip::SyncPlan>> ShapeOf(const LocalConfig& config,
                                                  std::map<std::string, std::string>& texts) {
  if (config.mode == Mode::kGossip) {
    MURMUR_RETURN_IF_ERROR(GossipOptionsFrom(config.gossip).status());
  }
  if (!gossip::IsSyncMode(config.mode)) return std::optional<gossip::SyncPlan>();
  MURMUR_RETURN_IF_ERROR(CodedOptionsFrom(config.mode, config.coded, config.gossip).status());
  MURMUR_ASSIGN_OR_RETURN(gossip::SyncPlan plan, SyncPlanFrom(config.mode, config.coded));
  if (plan.processes > 256) {
    return InvalidArgumentError(fmt::format("{} needs {} processes; local runs start at most 256",
                                            gossip::ModeName(config.mode), plan.processes));
  }
  // The run's record (config.toml) names its workers as nodes, so that it repeats the run
  // (NodesAsOneLayer accepts nodes with n and L when they agree).
  texts["nodes"] = std::to_string(plan.workers);
  return std::optional<gossip::SyncPlan>(std::move(plan));
}

// The injected stragglers and crashes.
Status PlanInjections(const LocalConfig& config, LocalPlan& p) {
  const int roots = p.sync.has_value() ? static_cast<int>(p.sync->processes - p.sync->workers) : 0;
  MURMUR_ASSIGN_OR_RETURN(
      p.straggle, ParseStraggleList(config.straggle, p.processes, p.sync.has_value(), roots));
  MURMUR_RETURN_IF_ERROR(AddLatency(config.network, p.processes, p.straggle));
  if (p.sync.has_value()) {
    for (const auto& [i, spec] : p.straggle) {
      if (auto o = ParseCodedStraggle(config.mode, spec); !o.ok()) {
        return InvalidArgumentError(
            fmt::format("straggle: node {} (rank {}): {}", i + 1, i, o.status().message()));
      }
    }
  }
  MURMUR_ASSIGN_OR_RETURN(p.crashes, ParseCrashList(config.crash, p.processes));
  if (!p.crashes.empty() && p.sync.has_value()) {
    return InvalidArgumentError(
        "crash: injected crashes are for gossip and membership (a synchronous tree or ring does "
        "not take a restarted member back)");
  }
  return OkStatus();
}

// Where each node trains; a GPU this machine or mode cannot give is refused before any starts.
StatusOr<std::vector<std::string>> Placement(const LocalConfig& config, int processes) {
  const bool trains = config.mode != Mode::kMembership;
  // A program's model is where the program puts it: only an explicit --device cuda places its
  // ranks on GPUs (MURMUR_DEVICE; the library checks the buffer is there); otherwise "auto":
  // the program's own choice, which the library does not check.
  const bool placed = config.exec.empty() || config.gossip.train.device.wants_gpu();
  if (!placed) return std::vector<std::string>(static_cast<size_t>(processes), "auto");
  MURMUR_ASSIGN_OR_RETURN(std::vector<std::string> devices,
                          PlaceNodes(config.gossip.train.device, config.gpus, processes,
                                     trains ? kernels::CudaDeviceCount() : 0, trains));
  // A node placed on the CPU would refuse --tf32 once started: refused here, before any starts.
  if (std::find(devices.begin(), devices.end(), "cpu") != devices.end()) {
    MURMUR_RETURN_IF_ERROR(kernels::CheckTf32(config.gossip.train.tf32, kernels::Device::Cpu()));
  }
  return devices;
}

}  // namespace

StatusOr<LocalPlan> LocalCommand::Plan(LocalResolved& r) const {
  const LocalConfig& config = r.config;
  LocalPlan p;
  MURMUR_ASSIGN_OR_RETURN(p.sync, ShapeOf(config, r.texts));
  p.processes = p.sync.has_value() ? static_cast<int>(p.sync->processes) : config.nodes;
  if (!config.exec.empty()) {
    MURMUR_RETURN_IF_ERROR(CheckExec(r, parser_));
  } else if (config.mode != Mode::kMembership && config.gossip.train.task == "fashion-mnist") {
    // Data that is not there would fail every node: said once, before any starts.
    MURMUR_RETURN_IF_ERROR(CheckFashionMnistFiles(config.gossip.train.data_dir));
  }
  MURMUR_RETURN_IF_ERROR(PlanInjections(config, p));
  if (config.network.netns) MURMUR_RETURN_IF_ERROR(CheckNetwork(config, p.processes));
  MURMUR_ASSIGN_OR_RETURN(p.devices, Placement(config, p.processes));
  return p;
}

int LocalCommand::Start(const LocalResolved& r, LocalPlan plan) const {
  const LocalConfig& config = r.config;
  if (!config.run_dir.empty()) {
    Status made = MakeRunDir(std::filesystem::path(config.run_dir) / "logs", "run_dir");
    std::set<std::string> unread;
    for (const std::string& k : OtherModeKeys(config.mode)) unread.insert(k);
    if (config.mode == Mode::kGossip && config.gossip.outer.has_value()) {
      unread.insert(PlainRoundKeys().begin(), PlainRoundKeys().end());
    }
    if (made.ok()) {
      made = WriteRunFile(config.run_dir, "config.toml", parser_.ResolvedToml(r.texts, unread));
    }
    if (!made.ok()) return Refuse(std::string(made.message()));
  }
  char dir_template[] = "/tmp/murmur-local-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) {
    std::fprintf(stderr, "murmur local: cannot create a temporary directory\n");
    return 1;
  }
  const std::filesystem::path dir = dir_template;
  std::unique_ptr<net::NetnsNetwork> network;
  if (config.network.netns) {
    auto made = BuildNetwork(config.network, plan.processes);
    if (!made.ok()) {
      std::fprintf(stderr, "murmur local: cannot build the network: %s\n",
                   made.status().ToString().c_str());
      return 1;
    }
    network = *std::move(made);
  }
  std::unique_ptr<LocalMode> mode;
  if (plan.sync.has_value()) {
    mode = MakeCodedLocal(config, *std::move(plan.sync), Forwarded(parser_, r, true),
                          std::move(plan.devices));
  } else if (config.mode == Mode::kGossip) {
    mode = MakeGossipLocal(config, Forwarded(parser_, r, false), dir, std::move(plan.devices));
  } else {
    mode = std::make_unique<MembershipLocal>(config);
  }
  return RunLocal(config, *mode, dir, plan.straggle, std::move(plan.crashes), network.get());
}

int LocalCommand::Run() {
  StatusOr<LocalResolved> resolved = Resolve();
  if (!resolved.ok()) return Refuse(std::string(resolved.status().message()));
  StatusOr<LocalPlan> plan = Plan(*resolved);
  if (!plan.ok()) return Refuse(std::string(plan.status().message()));
  const LocalConfig* config = &resolved->config;
  if (config->dry_run) {
    std::printf(
        "murmur local: would run %d %s process%s%s on %s; every key checked, nothing started\n",
        plan->processes, std::string(gossip::ModeName(config->mode)).c_str(),
        plan->processes == 1 ? "" : "es",
        config->exec.empty() ? "" : (" of: " + config->exec).c_str(),
        config->network.Describe().c_str());
    return 0;
  }
  return Start(*resolved, *std::move(plan));
}

std::unique_ptr<Command> MakeLocalCommand(CLI::App& app) {
  return std::make_unique<LocalCommand>(app);
}

}  // namespace murmur::node
