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
#include "cli/local_cluster.h"
#include "cli/local_config.h"
#include "cli/local_mode.h"
#include "cli/node_command.h"
#include "cli/placement.h"
#include "cli/progress.h"
#include "cli/run_dir.h"
#include "coding/compressor.h"
#include "gossip/gossip_node.h"
#include "gossip/sync_node.h"
#include "kernels/device.h"
#include "node/config/peer_keys.h"
#include "node/config/step_breakdown.h"
#include "node/train/checkpoint.h"
#include "node/train/fashion_mnist.h"

namespace murmur::node {
namespace {

using gossip::Mode;

// The loop every mode shares: spawn, poll and draw until done, stop, report, clean up.
int RunLocal(const LocalConfig& config, LocalMode& mode, const std::filesystem::path& dir,
             const std::map<int, std::string>& straggle, std::vector<CrashPlan> crashes,
             const net::NetnsNetwork* network) {
  LocalClusterOptions co;
  co.nodes = mode.processes();
  co.mode = std::string(gossip::ModeName(config.mode));
  co.cluster = config.cluster;
  co.transport = config.transport;
  co.probe_interval_ms = config.probe_interval_ms;
  co.probe_timeout_ms = config.probe_timeout_ms;
  co.node_log_level = config.node_log_level;
  co.admin = config.admin;
  co.admin_token_file = config.admin_token_file;
  co.secure = config.secure;
  co.prometheus_targets = config.prometheus_targets;
  co.run_dir = config.run_dir;
  co.exec = config.exec;
  co.network = network;
  LocalCluster cluster(co, dir, [&](int i) {
    std::vector<std::string> a = mode.NodeArgs(i);
    if (auto it = straggle.find(i); it != straggle.end())
      a.insert(a.end(), {"--straggle", it->second});
    return a;
  });
  InstallStopSignals();
  if (Status s = cluster.Spawn(); !s.ok()) {
    std::fprintf(stderr, "murmur local: %s\n", s.ToString().c_str());
    cluster.Stop(std::chrono::milliseconds(2000));
    return 1;
  }
  for (const auto& [i, spec] : straggle) cluster.children()[static_cast<size_t>(i)].straggle = spec;
  const bool tty =
      config.progress == "tty" || (config.progress == "auto" && ::isatty(STDERR_FILENO));
  const bool plain = config.progress == "plain" || (config.progress == "auto" && !tty);
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  auto all_exited = [&] {
    return std::all_of(cluster.children().begin(), cluster.children().end(),
                       [](const Child& c) { return c.exited; }) &&
           std::none_of(crashes.begin(), crashes.end(),
                        [](const CrashPlan& p) { return p.down > 0 && !p.restarted; });
  };
  // Injected crashes and restarts, when their time comes.
  auto crash = [&](double t) {
    for (CrashPlan& p : crashes) {
      if (!p.killed && t >= p.at) {
        p.killed = true;
        cluster.Crash(static_cast<size_t>(p.index));
        std::fprintf(stderr, "murmur local: %.1f s: node %d crashed (SIGKILL, injected)%s\n", t,
                     p.index + 1,
                     p.down > 0 ? fmt::format("; back in {:g} s", p.down).c_str() : "");
      } else if (p.killed && !p.restarted && p.down > 0 && t >= p.at + p.down) {
        p.restarted = true;
        const Status s = cluster.Restart(static_cast<size_t>(p.index));
        std::fprintf(stderr, "murmur local: %.1f s: node %d %s\n", t, p.index + 1,
                     s.ok() ? "restarted" : ("could not restart: " + s.ToString()).c_str());
      }
    }
  };
  double next_draw = 0, next_line = 1;
  std::vector<std::string> plain_printed;  // the table rows plain progress printed last
  size_t drawn_lines = 0;
  auto draw = [&](const std::string& table) {
    if (drawn_lines > 0) std::fprintf(stderr, "\033[%zuA\033[J", drawn_lines);
    std::fputs(table.c_str(), stderr);
    drawn_lines = tty ? static_cast<size_t>(std::count(table.begin(), table.end(), '\n')) : 0;
  };
  // Lines for the user above the live table (which is drawn again under them).
  auto say = [&](const std::string& text) {
    if (drawn_lines > 0) std::fprintf(stderr, "\033[%zuA\033[J", drawn_lines);
    drawn_lines = 0;
    next_draw = 0;
    std::fputs(text.c_str(), stderr);
  };
  // The --exec programs' own output, by node, as it comes.
  auto relay = [&] {
    std::string text;
    for (const auto& [i, line] : cluster.TakeProgramLines()) {
      text += fmt::format("node {} | {}\n", i + 1, line);
    }
    if (!text.empty()) say(text);
  };
  // A node that ends with a failure is shown at once: its id, how it ended, its log's last lines.
  std::vector<NodeFailure> failures;
  auto announce = [&](double t) {
    for (size_t i = 0; i < cluster.children().size(); ++i) {
      const Child& c = cluster.children()[i];
      const bool failed = c.exited && !c.down && c.status != 0;
      if (!failed || std::any_of(failures.begin(), failures.end(),
                                 [&](const NodeFailure& f) { return f.index == i; })) {
        continue;
      }
      failures.push_back({i, c.status, LastLines(c.log, 8)});
      std::string text =
          fmt::format("murmur local: {:.1f} s: node {} {} (log: {}); its last lines:\n", t, i + 1,
                      ExitText(c.status), c.log);
      for (const std::string& line : failures.back().last_lines) text += "  | " + line + "\n";
      say(text);
    }
  };
  while (!StopRequested() && (config.duration <= 0 || elapsed() < config.duration) &&
         !(mode.ends_when_all_exit() && all_exited())) {
    cluster.Poll(std::chrono::milliseconds(50));
    const double t = elapsed();
    relay();
    announce(t);
    crash(t);
    mode.Observe(cluster, t, plain);
    if (tty && t >= next_draw) {
      next_draw = t + 0.25;
      draw(mode.Table(cluster, t));
    } else if (plain && t >= next_line) {
      next_line = t + mode.plain_period();
      const std::string out = mode.Plain(cluster, t);
      std::fputs((mode.plain_is_table() ? PlainChanges(out, t, plain_printed) : out).c_str(),
                 stderr);
    }
  }
  double wall = elapsed();
  const bool show = config.progress != "none";
  if (mode.final_table_before_stop()) {
    mode.BeforeStop(cluster, wall);
    if (show) draw(mode.Table(cluster, wall));
  }
  const int killed = cluster.Stop(std::chrono::milliseconds(5000));
  relay();
  if (show && !mode.final_table_before_stop()) draw(mode.Table(cluster, wall));
  const bool ok = mode.Succeeded(cluster, killed);
  const bool keep = !ok || config.keep_logs;
  ReportOut out;
  out.json = config.json;
  out.run_dir = config.run_dir;
  // With a run directory the logs are there and stay; the temporary directory keeps the rest.
  out.keep = keep || !config.run_dir.empty();
  out.network = config.network.Describe();
  out.logs = config.run_dir.empty() ? dir.string()
                                    : (std::filesystem::path(config.run_dir) / "logs").string();
  if (!failures.empty()) {
    out.failure = fmt::format("node {} {}", failures[0].index + 1, ExitText(failures[0].status));
  }
  for (const CrashPlan& p : crashes) {
    if (!p.killed) continue;
    out.crashes.push_back({static_cast<size_t>(p.index), p.at, p.restarted ? p.at + p.down : -1.0});
  }
  mode.Print(cluster, wall, killed, ok, out);
  if (!keep) {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  if (ok) return 0;
  for (const NodeFailure& f : failures) {
    std::fprintf(stderr, "murmur local: node %zu %s: %s\n", f.index + 1, ExitText(f.status).c_str(),
                 f.last_lines.empty() ? "(its log is empty)" : f.last_lines.back().c_str());
  }
  return FailureExitCode(failures);
}

// The keys `murmur local` forwards to its nodes as flags, when they are not the default (from
// a flag, the environment or the --config file, which the nodes do not read: it may hold keys
// only `local` knows).
std::vector<std::string> Forwarded(const ConfigParser<LocalConfig>& parser,
                                   const std::map<std::string, std::string>& texts, bool coded) {
  std::vector<std::string> keys = coded ? CodedKeyNames() : std::vector<std::string>{};
  for (const auto& k : GossipKeyNames()) {
    if (k != "straggle" && k != "device") keys.push_back(k);  // each node gets its own device
  }
  return parser.ResolvedFlags(texts, keys);
}

class MembershipLocal : public LocalMode {
 public:
  explicit MembershipLocal(const LocalConfig& config) : config_(config) {}
  int processes() const override { return config_.nodes; }
  std::vector<std::string> NodeArgs(int) const override { return {"--mode", "membership"}; }
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
Status CheckExec(const LocalConfig& config, const std::map<std::string, std::string>& texts,
                 const ConfigParser<LocalConfig>& parser) {
  if (config.mode != Mode::kGossip) {
    return InvalidArgumentError(
        fmt::format("exec: programs on the library train by gossip, not "
                    "--mode {}",
                    gossip::ModeName(config.mode)));
  }
  if (!config.run_dir.empty()) {
    return InvalidArgumentError(
        "run_dir: a library program's nodes write no time series yet; "
        "leave --run-dir out with --exec");
  }
  for (const std::string& flag : Forwarded(parser, texts, false)) {
    std::string key = flag.substr(2, flag.find('=') - 2);
    std::replace(key.begin(), key.end(), '-', '_');
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
  if (config.transport != "tcp") {
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

Status NodesAsOneLayer(const std::set<std::string>& given,
                       std::map<std::string, std::string>& texts, LocalConfig& config) {
  const bool shaped = given.count("n") > 0 || given.count("L") > 0;
  MURMUR_RETURN_IF_ERROR(NodesAsOneLayer(config.mode, config.nodes, shaped, config.coded));
  texts["n"] = std::to_string(config.coded.n);
  texts["L"] = std::to_string(config.coded.L);
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

class LocalCommand : public ConfiguredCommand<LocalConfig> {
 public:
  explicit LocalCommand(CLI::App& app)
      : ConfiguredCommand(
            app, "local",
            "Train with N node processes on this machine (gossip, or a synchronous mode's tree "
            "or ring), with a live table and a report; --mode membership only shows who sees whom",
            LocalSchema()) {}
  int Run() override;
};

int LocalCommand::Run() {
  std::map<std::string, std::string> texts;
  std::set<std::string> given;
  StatusOr<LocalConfig> resolved = parser_.Resolve(std::getenv, &texts, &given);
  if (resolved.ok() && gossip::IsSyncMode(resolved->mode) && given.count("nodes") > 0) {
    if (Status s = NodesAsOneLayer(given, texts, *resolved); !s.ok()) resolved = s;
  }
  if (resolved.ok() && !resolved->run_dir.empty()) {
    resolved->run_dir = std::filesystem::absolute(resolved->run_dir).lexically_normal().string();
    texts["run_dir"] = resolved->run_dir;
  }
  if (resolved.ok() && resolved->probe_timeout_ms >= resolved->probe_interval_ms) {
    resolved = InvalidArgumentError("probe_timeout_ms must be below probe_interval_ms");
  }
  if (!resolved.ok()) return Refuse(std::string(resolved.status().message()));
  const LocalConfig& config = *resolved;
  if (Status s = RefuseOtherModeKeys(config.mode,
                                     parser_.ResolvedFlags(texts, OtherModeKeys(config.mode)));
      !s.ok()) {
    return Refuse(std::string(s.message()));
  }
  // Check everything before any process starts: a bad shape or injection is exit 2.
  std::unique_ptr<LocalMode> mode;
  int processes = config.nodes;
  std::optional<gossip::SyncPlan> plan;
  if (gossip::IsSyncMode(config.mode)) {
    auto options = CodedOptionsFrom(config.mode, config.coded, config.gossip);
    if (!options.ok()) return Refuse(std::string(options.status().message()));
    auto made = SyncPlanFrom(config.mode, config.coded);
    if (!made.ok()) return Refuse(std::string(made.status().message()));
    if (made->processes > 256) {
      return Refuse(fmt::format("{} needs {} processes; local runs start at most 256",
                                gossip::ModeName(config.mode), made->processes));
    }
    processes = static_cast<int>(made->processes);
    // The run's record (config.toml) names its workers as nodes, so that it repeats the run
    // (NodesAsOneLayer accepts nodes with n and L when they agree).
    texts["nodes"] = std::to_string(made->workers);
    plan = *std::move(made);
  } else if (config.mode == Mode::kGossip) {
    if (auto options = GossipOptionsFrom(config.gossip); !options.ok()) {
      return Refuse(std::string(options.status().message()));
    }
  }
  if (!config.exec.empty()) {
    if (Status s = CheckExec(config, texts, parser_); !s.ok())
      return Refuse(std::string(s.message()));
  } else if (config.mode != Mode::kMembership && config.gossip.train.task == "fashion-mnist") {
    // Data that is not there would fail every node: said once, before any starts.
    if (Status s = CheckFashionMnistFiles(config.gossip.train.data_dir); !s.ok()) {
      return Refuse(std::string(s.message()));
    }
  }
  const int roots = plan.has_value() ? static_cast<int>(plan->processes - plan->workers) : 0;
  auto straggle = ParseStraggleList(config.straggle, processes, plan.has_value(), roots);
  if (!straggle.ok()) return Refuse(std::string(straggle.status().message()));
  if (Status s = AddLatency(config.network, processes, *straggle); !s.ok()) {
    return Refuse(std::string(s.message()));
  }
  if (plan.has_value()) {
    for (const auto& [i, spec] : *straggle) {
      if (auto o = ParseCodedStraggle(config.mode, spec); !o.ok()) {
        return Refuse(
            fmt::format("straggle: node {} (rank {}): {}", i + 1, i, o.status().message()));
      }
    }
  }
  if (config.network.netns) {
    if (Status s = CheckNetwork(config, processes); !s.ok())
      return Refuse(std::string(s.message()));
  }
  auto crashes = ParseCrashList(config.crash, processes);
  if (!crashes.ok()) return Refuse(std::string(crashes.status().message()));
  if (!crashes->empty() && plan.has_value()) {
    return Refuse(
        "crash: injected crashes are for gossip and membership (a synchronous tree or "
        "ring does not take a restarted member back)");
  }
  // Where each node trains; a GPU this machine or mode cannot give is refused before any starts.
  const bool trains = config.mode != Mode::kMembership;
  // A program's model is where the program puts it: only an explicit --device cuda places its
  // ranks on GPUs (MURMUR_DEVICE; the library checks the buffer is there); otherwise "auto":
  // the program's own choice, which the library does not check.
  const bool placed = config.exec.empty() || config.gossip.train.device.wants_gpu();
  auto devices = placed ? PlaceNodes(config.gossip.train.device, config.gpus, processes,
                                     trains ? kernels::CudaDeviceCount() : 0, trains)
                        : StatusOr<std::vector<std::string>>(
                              std::vector<std::string>(static_cast<size_t>(processes), "auto"));
  if (!devices.ok()) return Refuse(std::string(devices.status().message()));
  // A node placed on the CPU would refuse --tf32 once started: refused here, before any starts.
  if (std::find(devices->begin(), devices->end(), "cpu") != devices->end()) {
    if (Status s = kernels::CheckTf32(config.gossip.train.tf32, kernels::Device::Cpu()); !s.ok()) {
      return Refuse(std::string(s.message()));
    }
  }
  if (!config.run_dir.empty() &&
      std::filesystem::exists(std::filesystem::path(config.run_dir) / "result.json")) {
    return Refuse("run_dir: '" + config.run_dir +
                  "' already holds a run (result.json); give a "
                  "new directory, or remove that one");
  }
  if (config.dry_run) {
    std::printf(
        "murmur local: would run %d %s process%s%s on %s; every key checked, nothing started\n",
        processes, std::string(gossip::ModeName(config.mode)).c_str(), processes == 1 ? "" : "es",
        config.exec.empty() ? "" : (" of: " + config.exec).c_str(),
        config.network.Describe().c_str());
    return 0;
  }
  if (!config.run_dir.empty()) {
    Status made = MakeRunDir(std::filesystem::path(config.run_dir) / "logs", "run_dir");
    if (made.ok()) made = WriteRunFile(config.run_dir, "config.toml", parser_.ResolvedToml(texts));
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
    auto made = BuildNetwork(config.network, processes);
    if (!made.ok()) {
      std::fprintf(stderr, "murmur local: cannot build the network: %s\n",
                   made.status().ToString().c_str());
      return 1;
    }
    network = *std::move(made);
  }
  if (plan.has_value()) {
    mode = MakeCodedLocal(config, *std::move(plan), Forwarded(parser_, texts, true),
                          *std::move(devices));
  } else if (config.mode == Mode::kGossip) {
    mode = MakeGossipLocal(config, Forwarded(parser_, texts, false), dir, *std::move(devices));
  } else {
    mode = std::make_unique<MembershipLocal>(config);
  }
  return RunLocal(config, *mode, dir, *straggle, *std::move(crashes), network.get());
}

std::unique_ptr<Command> MakeLocalCommand(CLI::App& app) {
  return std::make_unique<LocalCommand>(app);
}

}  // namespace murmur::node
