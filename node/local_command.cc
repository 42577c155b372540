// `murmur local`: N `murmur node` processes on loopback, a live table of who sees whom, and a
// clean stop (SIGTERM -> graceful leave; SIGKILL after a grace period) on Ctrl-C or when done.

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/log.h"
#include "node/gossip_trainer.h"
#include "node/node_command.h"

namespace murmur::node {
namespace {

struct LocalConfig {
  std::string mode;
  int nodes = 0;
  double duration = 0;
  std::string cluster;
  std::string transport;
  int probe_interval_ms = 0;
  int probe_timeout_ms = 0;
  std::string progress;
  bool json = false;
  std::string node_log_level;
  bool keep_logs = false;
  bool admin = true;
  std::string prometheus_targets;
  std::string straggle;  // "node=3,slowdown=4;node=5,delay=10ms"
  GossipConfig gossip;
  CodedConfig coded;
};

const ConfigSchema<LocalConfig>& LocalSchema() {
  static const ConfigSchema<LocalConfig>* schema = [] {
    using C = LocalConfig;
    auto* s = new ConfigSchema<LocalConfig>();
    s->Choice("mode", &C::mode, "gossip",
              {"gossip", "membership", "coded-tree", "tree", "gc", "ring"},
              "gossip: train Fashion-MNIST (or the task) with CHOCO-SGD, one shard per node; "
              "coded-tree: CodedReduce over an n-ary tree of L layers (N + 1 processes); tree, "
              "gc, ring: its baselines on the same N workers; membership: only show who sees whom")
        .Integer("nodes", &C::nodes, 4, 1, 256,
                 "node processes to start on 127.0.0.1 (gossip, membership; the other modes "
                 "start as many as their shape needs)")
        .Real("duration", &C::duration, "0", 0, 1e9,
              "seconds to run before stopping every node; 0: until the budget is spent "
              "(gossip) or Ctrl-C (membership)")
        .Text("cluster", &C::cluster, "local", "cluster id given to every node")
        .Choice("transport", &C::transport, "tcp", {"tcp", "ipc"},
                "loopback TCP on free ports, or Unix-domain sockets in a temporary directory")
        .Integer("probe_interval_ms", &C::probe_interval_ms, 200, 10, 600000,
                 "SWIM protocol period of every node")
        .Integer("probe_timeout_ms", &C::probe_timeout_ms, 80, 1, 600000,
                 "direct-ack wait of every node")
        .Choice("progress", &C::progress, "auto", {"auto", "tty", "plain", "none"},
                "live table on stderr: redrawn (tty), a line per second (plain), or none")
        .Bool("json", &C::json, false, "print the final summary as one JSON object on stdout")
        .Choice("node_log_level", &C::node_log_level, "info",
                {"trace", "debug", "info", "warn", "error", "off"},
                "log level of the node processes (their logs go to files, listed at the end)")
        .Bool("keep_logs", &C::keep_logs, false,
              "keep the node logs after a run that succeeded (a failed run always keeps them)")
        .Bool("admin", &C::admin, true,
              "give every node an admin HTTP port on 127.0.0.1 (/metrics, /healthz, /status, "
              "/straggler); the ports are printed at the start")
        .Text("prometheus_targets", &C::prometheus_targets, "",
              "write the nodes' admin ports to this file as Prometheus file_sd targets (see "
              "ops/prometheus/prometheus-local.yml)")
        .Text("straggle", &C::straggle, "",
              "straggler injection per node: node=K,<injection> (K 0-based; injection as in "
              "`murmur node --straggle`), several separated by ';', e.g. node=3,slowdown=4")
        .Embed(GossipSchema(), &C::gossip, {"straggle"})
        .Embed(CodedSchema(), &C::coded, {});
    return s;
  }();
  return *schema;
}

struct Child {
  pid_t pid = -1;
  int out_fd = -1;
  std::string endpoint;
  std::string buffer;
  // From the latest --report json line, parsed once when it arrives.
  std::map<uint64_t, char> sees;  // member id -> state letter
  uint64_t heartbeat = 0, alive = 0, rejected = 0;
  // Gossip mode: the latest progress line and the final one.
  nlohmann::json progress;
  nlohmann::json final_report;
  bool new_accuracy = false;
  std::string straggle;  // injected into this node
  std::string admin;     // HOST:PORT of its admin port ("" without)
  bool exited = false;
  int status = 0;
};

// Free loopback ports, all held open while choosing so they differ.
std::vector<int> FreePorts(int n) {
  std::vector<int> fds, ports;
  for (int i = 0; i < n; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      if (fd >= 0) ::close(fd);
      continue;
    }
    fds.push_back(fd);
    ports.push_back(ntohs(addr.sin_port));
  }
  for (int fd : fds) ::close(fd);
  return ports;
}

char StateChar(const std::string& state);

// Keeps what the table needs from one report line (SnapshotJson's format). A line that does not
// have that shape is ignored: the table shows the previous one.
void Absorb(Child& c, const nlohmann::json& report) {
  if (report.contains("kind") && report.contains("mode")) {  // coded progress (CodedProgressJson)
    if (report["kind"] == "final") c.final_report = report;
    c.progress = report;
    return;
  }
  if (report.contains("kind")) {  // gossip progress (GossipProgressJson)
    if (!report.contains("accuracy") || !report.contains("step")) return;
    const auto& before = c.progress;
    c.new_accuracy |= !report["accuracy"].is_null() &&
                      (before.is_null() || before.value("accuracy_step", -1) != report["accuracy_step"]);
    if (report["kind"] == "final") c.final_report = report;
    c.progress = report;
    return;
  }
  try {
    std::map<uint64_t, char> sees;
    for (const auto& m : report.at("members")) {
      sees[m.at("id").get<uint64_t>()] = StateChar(m.at("state").get<std::string>());
    }
    uint64_t rejected = 0;
    for (const auto& [k, v] : report.at("rejected").items()) rejected += v.get<uint64_t>();
    c.heartbeat = report.at("members").at(0).at("heartbeat").get<uint64_t>();
    c.alive = report.at("alive").get<uint64_t>();
    c.rejected = rejected;
    c.sees = std::move(sees);
  } catch (const nlohmann::json::exception&) {
  }
}

char StateChar(const std::string& state) {
  if (state == "alive") return 'A';
  if (state == "suspect") return 'S';
  if (state == "dead") return 'D';
  if (state == "left") return 'L';
  return '?';
}

class LocalCluster {
 public:
  LocalCluster(const LocalConfig& config, std::filesystem::path dir,
               std::function<std::vector<std::string>(int)> extra_args = nullptr)
      : config_(config), dir_(std::move(dir)), extra_args_(std::move(extra_args)) {}

  Status Spawn() {
    const int n = config_.nodes;
    std::vector<std::string> endpoints, admins;
    // Transport and admin ports drawn together so they all differ.
    const int need = (config_.transport == "tcp" ? n : 0) + (config_.admin ? n : 0);
    const std::vector<int> ports = FreePorts(need);
    if (static_cast<int>(ports.size()) != need) return UnavailableError("could not find free ports");
    size_t next_port = 0;
    if (config_.admin) {
      for (int i = 0; i < n; ++i) admins.push_back("127.0.0.1:" + std::to_string(ports[next_port++]));
    }
    if (config_.transport == "tcp") {
      for (int i = 0; i < n; ++i) endpoints.push_back("tcp://127.0.0.1:" + std::to_string(ports[next_port++]));
    } else {
      for (int i = 0; i < n; ++i) endpoints.push_back("ipc://" + (dir_ / ("node-" + std::to_string(i) + ".sock")).string());
    }
    // Two seeds: any node can join while one of them is down.
    std::string seeds = endpoints[0] + (n > 1 ? "," + endpoints[1] : "");
    char exe[4096];
    const ssize_t len = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (len <= 0) return InternalError("cannot find the murmur executable (/proc/self/exe)");
    exe[len] = '\0';
    for (int i = 0; i < n; ++i) {
      std::vector<std::string> args = {
          exe, "node", "--id", std::to_string(i + 1), "--listen", endpoints[i], "--seeds", seeds,
          "--cluster", config_.cluster, "--probe-interval-ms",
          std::to_string(config_.probe_interval_ms), "--probe-timeout-ms",
          std::to_string(config_.probe_timeout_ms), "--report", "json", "--report-interval-ms",
          "200", "--log-level", config_.node_log_level};
      if (config_.admin) args.insert(args.end(), {"--admin", admins[i]});
      if (extra_args_) {
        for (auto& a : extra_args_(i)) args.push_back(std::move(a));
      } else {
        args.insert(args.end(), {"--mode", "membership"});
      }
      int pipe_fds[2];
      if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return InternalError("pipe failed");
      const std::string log = (dir_ / ("node-" + std::to_string(i) + ".log")).string();
      const pid_t pid = ::fork();
      if (pid < 0) return InternalError("fork failed");
      if (pid == 0) {
        ::dup2(pipe_fds[1], STDOUT_FILENO);
        const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (log_fd >= 0) ::dup2(log_fd, STDERR_FILENO);
        // Ctrl-C reaches the whole foreground group; the parent decides when children stop. If
        // the parent dies without stopping them (SIGKILL), they leave on their own.
        ::signal(SIGINT, SIG_IGN);
        ::prctl(PR_SET_PDEATHSIG, SIGTERM);
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        ::execv(exe, argv.data());
        ::_exit(127);
      }
      ::close(pipe_fds[1]);
      ::fcntl(pipe_fds[0], F_SETFL, O_NONBLOCK);
      Child c;
      c.pid = pid;
      c.out_fd = pipe_fds[0];
      c.endpoint = endpoints[i];
      if (config_.admin) c.admin = admins[i];
      children_.push_back(std::move(c));
    }
    if (config_.admin) {
      std::string list;
      for (int i = 0; i < n; ++i) list += (i ? ", " : "") + admins[i];
      std::fprintf(stderr, "murmur local: admin ports (node 0..%d): %s\n", n - 1, list.c_str());
    }
    if (!config_.prometheus_targets.empty()) return WriteTargets(admins);
    return OkStatus();
  }

  // Prometheus file_sd: one target group per node, labelled with its index and the mode.
  Status WriteTargets(const std::vector<std::string>& admins) const {
    if (admins.empty()) return InvalidArgumentError("--prometheus-targets needs --admin");
    nlohmann::json groups = nlohmann::json::array();
    for (size_t i = 0; i < admins.size(); ++i) {
      groups.push_back({{"targets", {admins[i]}},
                        {"labels", {{"node", std::to_string(i)}, {"mode", config_.mode}}}});
    }
    const std::string tmp = config_.prometheus_targets + ".tmp";
    {
      std::ofstream out(tmp);
      out << groups.dump(2) << "\n";
      if (!out) return UnavailableError("cannot write '" + tmp + "'");
    }
    // Renamed into place: Prometheus never reads a half-written file.
    if (std::rename(tmp.c_str(), config_.prometheus_targets.c_str()) != 0) {
      return UnavailableError("cannot write '" + config_.prometheus_targets + "'");
    }
    return OkStatus();
  }

  // Reads whatever the children printed, waiting up to `wait`.
  void Poll(std::chrono::milliseconds wait) {
    std::vector<pollfd> fds;
    for (auto& c : children_) {
      if (c.out_fd >= 0) fds.push_back({c.out_fd, POLLIN, 0});
    }
    ::poll(fds.data(), fds.size(), static_cast<int>(wait.count()));
    for (auto& c : children_) {
      if (c.out_fd < 0) continue;
      char buf[65536];
      ssize_t got;
      while ((got = ::read(c.out_fd, buf, sizeof(buf))) > 0) c.buffer.append(buf, static_cast<size_t>(got));
      if (got == 0) {
        ::close(c.out_fd);
        c.out_fd = -1;
      }
      size_t nl;
      while ((nl = c.buffer.find('\n')) != std::string::npos) {
        auto parsed = nlohmann::json::parse(c.buffer.substr(0, nl), nullptr, false);
        if (!parsed.is_discarded()) Absorb(c, parsed);
        c.buffer.erase(0, nl + 1);
      }
    }
    for (auto& c : children_) {
      if (!c.exited && ::waitpid(c.pid, &c.status, WNOHANG) == c.pid) c.exited = true;
    }
  }

  // node i's view of node j: 'A', 'S', 'D', 'L', '.' (unknown) or '=' (itself).
  char View(size_t i, size_t j) const {
    if (i == j) return '=';
    const auto& sees = children_[i].sees;
    auto it = sees.find(j + 1);
    return it == sees.end() ? '.' : it->second;
  }
  bool AllSeeAllAlive() const {
    for (size_t i = 0; i < children_.size(); ++i) {
      if (children_[i].exited) return false;
      for (size_t j = 0; j < children_.size(); ++j) {
        const char v = View(i, j);
        if (v != '=' && v != 'A') return false;
      }
    }
    return true;
  }

  std::string Table(double t) const {
    std::string out = fmt::format(
        "murmur local: {} nodes, cluster '{}', {:.1f} s   (A alive, S suspect, D dead, L left, "
        ". unknown)\n",
        children_.size(), config_.cluster, t);
    out += fmt::format("{:>4}  {:<28} {:<{}}  {:>5}  {:>9}  {:>8}\n", "node", "endpoint", "sees",
                       std::max<size_t>(4, children_.size() * 2), "alive", "heartbeat", "rejected");
    for (size_t i = 0; i < children_.size(); ++i) {
      const Child& c = children_[i];
      std::string row;
      for (size_t j = 0; j < children_.size(); ++j) {
        row += View(i, j);
        row += ' ';
      }
      out += fmt::format("{:>4}  {:<28} {:<{}}  {:>5}  {:>9}  {:>8}{}\n", i, c.endpoint, row,
                         std::max<size_t>(4, children_.size() * 2), c.alive, c.heartbeat, c.rejected,
                         c.exited ? "  (exited)" : "");
    }
    return out;
  }

  // SIGTERM (each node leaves gracefully), then SIGKILL after `grace`. Returns nodes that had
  // to be killed.
  int Stop(std::chrono::milliseconds grace) {
    for (auto& c : children_) {
      if (!c.exited) ::kill(c.pid, SIGTERM);
    }
    const auto end = std::chrono::steady_clock::now() + grace;
    while (std::chrono::steady_clock::now() < end) {
      Poll(std::chrono::milliseconds(20));
      bool all = true;
      for (auto& c : children_) all &= c.exited;
      if (all) break;
    }
    int killed = 0;
    for (auto& c : children_) {
      if (c.exited) continue;
      ::kill(c.pid, SIGKILL);
      ::waitpid(c.pid, &c.status, 0);
      c.exited = true;
      ++killed;
    }
    for (auto& c : children_) {
      if (c.out_fd >= 0) ::close(c.out_fd);
      c.out_fd = -1;
    }
    return killed;
  }

  const std::vector<Child>& children() const { return children_; }
  std::vector<Child>& children() { return children_; }

 private:
  const LocalConfig& config_;
  std::filesystem::path dir_;
  std::function<std::vector<std::string>(int)> extra_args_;
  std::vector<Child> children_;
};

// `--straggle node=K,<spec>;...` -> spec per node index.
StatusOr<std::map<int, std::string>> ParseStraggleList(const std::string& text, int nodes) {
  std::map<int, std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t semi = text.find(';', start);
    const std::string item = text.substr(start, semi == std::string::npos ? std::string::npos : semi - start);
    start = semi == std::string::npos ? text.size() + 1 : semi + 1;
    if (item.empty()) continue;
    if (item.rfind("node=", 0) != 0) {
      return InvalidArgumentError("straggle: '" + item + "' must start with node=K (which node)");
    }
    const size_t comma = item.find(',');
    const std::string index = item.substr(5, comma == std::string::npos ? std::string::npos : comma - 5);
    auto k = ParseInteger(index, 0, nodes - 1);
    if (!k.ok()) {
      return InvalidArgumentError("straggle: node '" + index + "' is not a node index in [0, " +
                                  std::to_string(nodes - 1) + "]");
    }
    const std::string spec = comma == std::string::npos ? "" : item.substr(comma + 1);
    MURMUR_RETURN_IF_ERROR(ParseStraggle(spec).status());
    out[static_cast<int>(*k)] = spec;
  }
  return out;
}

std::string Cell(const nlohmann::json& j, const char* key, const char* format, double scale = 1) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return "-";
  return fmt::format(fmt::runtime(format), j[key].get<double>() * scale);
}

std::string GossipTable(const std::vector<Child>& children, const std::set<size_t>& flagged,
                        double t, const std::string& what) {
  int64_t cluster = 0, budget = 0;
  for (const auto& c : children) {
    if (!c.progress.is_object()) continue;
    cluster = std::max<int64_t>(cluster, c.progress.value("cluster_samples", int64_t{0}));
    budget = std::max<int64_t>(budget, c.progress.value("budget_samples", int64_t{0}));
  }
  std::string out = fmt::format("murmur local: {} nodes, {}, {:.1f} s", children.size(), what, t);
  if (budget > 0) {
    out += fmt::format(", {:.0f}% of the budget ({} of {} samples)",
                       100.0 * static_cast<double>(cluster) / static_cast<double>(budget), cluster, budget);
  }
  out += "\n";
  out += fmt::format("{:>4}  {:>6}  {:>5}  {:>7}  {:>8}  {:>8}  {:>5}  {:>6}  {}\n", "node", "step",
                     "epoch", "loss", "accuracy", "sent MB", "stale", "wait s", "straggler");
  for (size_t i = 0; i < children.size(); ++i) {
    const Child& c = children[i];
    const nlohmann::json& p = c.progress;
    std::string flag = flagged.count(i) ? "yes" : "";
    if (!c.straggle.empty()) flag += (flag.empty() ? "" : ", ") + std::string("injected ") + c.straggle;
    std::string state = c.final_report.is_object() ? "  done" : (c.exited ? "  (exited)" : "");
    out += fmt::format("{:>4}  {:>6}  {:>5}  {:>7}  {:>8}  {:>8}  {:>5}  {:>6}  {}{}\n", i,
                       Cell(p, "step", "{:.0f}"), Cell(p, "epoch", "{:.2f}"), Cell(p, "loss", "{:.4f}"),
                       Cell(p, "accuracy", "{:.4f}"), Cell(p, "bytes_sent", "{:.2f}", 1e-6),
                       Cell(p, "lag", "{:.0f}"), Cell(p, "wait_s", "{:.1f}"), flag, state);
  }
  return out;
}

int RunGossipLocal(const LocalConfig& config, const ConfigParser<LocalConfig>& parser) {
  auto straggle = ParseStraggleList(config.straggle, config.nodes);
  auto options = GossipOptionsFrom(config.gossip);
  if (!straggle.ok() || !options.ok()) {
    std::fprintf(stderr, "murmur local: %s\n",
                 std::string((!straggle.ok() ? straggle.status() : options.status()).message()).c_str());
    return 2;
  }
  char dir_template[] = "/tmp/murmur-local-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) {
    std::fprintf(stderr, "murmur local: cannot create a temporary directory\n");
    return 1;
  }
  const std::filesystem::path dir = dir_template;
  std::vector<std::string> forward_keys;
  for (const auto& k : GossipKeyNames()) {
    if (k != "straggle") forward_keys.push_back(k);
  }
  const std::vector<std::string> forwarded = parser.GivenFlags(forward_keys);
  auto model_path = [&](int i) { return (dir / ("node-" + std::to_string(i) + ".model")).string(); };
  LocalCluster cluster(config, dir, [&](int i) {
    std::vector<std::string> a = {"--mode", "gossip", "--shard-index", std::to_string(i),
                                  "--shard-count", std::to_string(config.nodes),
                                  "--expect-members", std::to_string(config.nodes),
                                  "--save-model", model_path(i)};
    a.insert(a.end(), forwarded.begin(), forwarded.end());
    if (auto it = straggle->find(i); it != straggle->end()) a.insert(a.end(), {"--straggle", it->second});
    return a;
  });
  InstallStopSignals();
  if (Status s = cluster.Spawn(); !s.ok()) {
    std::fprintf(stderr, "murmur local: %s\n", s.ToString().c_str());
    cluster.Stop(std::chrono::milliseconds(2000));
    return 1;
  }
  for (auto& [i, spec] : *straggle) cluster.children()[static_cast<size_t>(i)].straggle = spec;
  const std::string what = fmt::format("CHOCO-SGD {} on a {}", config.gossip.compress, config.gossip.topology);
  const bool tty = config.progress == "tty" || (config.progress == "auto" && ::isatty(STDERR_FILENO));
  const bool plain = config.progress == "plain" || (config.progress == "auto" && !tty);
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::set<size_t> flagged;  // nodes some other node marked a straggler
  nlohmann::json timeline = nlohmann::json::array();  // [t, mean accuracy] at each new evaluation
  double next_draw = 0, next_line = 1;
  size_t drawn_lines = 0;
  auto all_exited = [&] {
    for (const auto& c : cluster.children()) {
      if (!c.exited) return false;
    }
    return true;
  };
  while (!StopRequested() && (config.duration <= 0 || elapsed() < config.duration) && !all_exited()) {
    cluster.Poll(std::chrono::milliseconds(50));
    const double t = elapsed();
    bool fresh = false, all_have = true;
    double sum = 0;
    for (auto& c : cluster.children()) {
      fresh |= c.new_accuracy;
      c.new_accuracy = false;
      if (!c.progress.is_object() || c.progress["accuracy"].is_null()) {
        all_have = false;
        continue;
      }
      sum += c.progress["accuracy"].get<double>();
      for (const auto& id : c.progress["stragglers"]) flagged.insert(id.get<size_t>() - 1);
    }
    if (fresh && all_have) timeline.push_back({t, sum / static_cast<double>(cluster.children().size())});
    if (tty && t >= next_draw) {
      next_draw = t + 0.25;
      const std::string table = GossipTable(cluster.children(), flagged, t, what);
      if (drawn_lines > 0) std::fprintf(stderr, "\033[%zuA\033[J", drawn_lines);
      std::fputs(table.c_str(), stderr);
      drawn_lines = static_cast<size_t>(std::count(table.begin(), table.end(), '\n'));
    } else if (plain && t >= next_line) {
      next_line = t + 2;
      std::fputs(GossipTable(cluster.children(), flagged, t, what).c_str(), stderr);
    }
  }
  const double wall = elapsed();
  const int killed = cluster.Stop(std::chrono::milliseconds(5000));
  if (config.progress != "none") {
    if (tty && drawn_lines > 0) std::fprintf(stderr, "\033[%zuA\033[J", drawn_lines);
    std::fputs(GossipTable(cluster.children(), flagged, wall, what).c_str(), stderr);
  }
  // The report: accuracy per node, consensus over the saved models, bytes against ring all-reduce.
  const size_t n = cluster.children().size();
  bool ok = killed == 0;
  std::vector<double> accuracy;
  std::vector<int64_t> steps;
  uint64_t bytes = 0;
  int64_t local_steps = 0;
  std::string end_reason;
  std::vector<std::vector<float>> models;
  for (size_t i = 0; i < n; ++i) {
    const Child& c = cluster.children()[i];
    const nlohmann::json& f = c.final_report;
    const bool done = f.is_object() && WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0;
    ok &= done;
    if (!done) continue;
    accuracy.push_back(f["accuracy"].is_null() ? 0.0 : f["accuracy"].get<double>());
    steps.push_back(f["step"].get<int64_t>());
    bytes += f["bytes_sent"].get<uint64_t>();
    local_steps += f["local_steps"].get<int64_t>();
    if (end_reason.empty() && f["end"] != "peer") end_reason = f["end"].get<std::string>();
    if (auto m = LoadParams(model_path(static_cast<int>(i))); m.ok()) models.push_back(*std::move(m));
  }
  double mean = 0;
  for (double a : accuracy) mean += a / static_cast<double>(std::max<size_t>(1, accuracy.size()));
  double consensus = -1, relative = -1;
  size_t d = models.empty() ? 0 : models[0].size();
  if (!models.empty()) {
    std::vector<double> avg(d, 0.0);
    for (const auto& m : models) {
      for (size_t k = 0; k < d; ++k) avg[k] += m[k] / static_cast<double>(models.size());
    }
    double dist = 0, norm = 0;
    for (const auto& m : models) {
      for (size_t k = 0; k < d; ++k) dist += (m[k] - avg[k]) * (m[k] - avg[k]);
    }
    for (double v : avg) norm += v * v;
    consensus = dist / static_cast<double>(models.size());
    relative = norm > 0 ? consensus / norm : 0;
  }
  // Ring all-reduce moves 2 (N - 1) / N of the dense fp32 model per node per step.
  const double allreduce = static_cast<double>(local_steps) * 2.0 * static_cast<double>(n - 1) /
                           static_cast<double>(n) * 4.0 * static_cast<double>(d);
  const bool keep = !ok || config.keep_logs;
  if (config.json) {
    nlohmann::json j;
    j["mode"] = "gossip";
    j["nodes"] = n;
    j["ok"] = ok;
    j["wall_s"] = wall;
    j["end"] = end_reason;
    j["accuracy"] = accuracy;
    j["mean_accuracy"] = mean;
    j["steps"] = steps;
    j["local_steps_total"] = local_steps;
    j["bytes_sent_total"] = bytes;
    j["allreduce_bytes"] = allreduce;
    j["fewer_bytes_than_allreduce"] = bytes > 0 ? allreduce / static_cast<double>(bytes) : 0.0;
    j["consensus_distance"] = consensus;
    j["relative_consensus_distance"] = relative;
    j["stragglers_flagged"] = flagged;
    j["accuracy_timeline"] = timeline;
    j["killed_at_stop"] = killed;
    j["logs"] = keep ? nlohmann::json(dir_template) : nlohmann::json(nullptr);
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("%zu nodes, %s, ended by %s after %.1f s%s\n", n, what.c_str(),
                end_reason.empty() ? "?" : end_reason.c_str(), wall,
                ok ? "" : fmt::format(" (only {} of {} nodes finished cleanly)", accuracy.size(), n).c_str());
    std::printf("  test accuracy per node:");
    for (double a : accuracy) std::printf(" %.4f", a);
    std::printf("\n  mean test accuracy %.4f\n", mean);
    if (consensus >= 0) {
      std::printf("  consensus distance (1/N) sum ||x_i - mean||^2 = %.3g (%.3g relative to ||mean||^2)\n",
                  consensus, relative);
    }
    std::printf("  bytes on the wire %.2f MB; dense ring all-reduce for the same steps %.1f MB (%.0fx more)\n",
                static_cast<double>(bytes) / 1e6, allreduce / 1e6,
                bytes > 0 ? allreduce / static_cast<double>(bytes) : 0.0);
    std::printf("  node logs %s %s\n", keep ? "kept in" : "removed from", dir_template);
  }
  if (!keep) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_template, ignored);
  }
  return ok ? 0 : 1;
}

std::string CodedTable(const std::vector<Child>& children, double t, const std::string& what) {
  std::string out = fmt::format("murmur local: {} processes, {}, {:.1f} s\n", children.size(), what, t);
  const nlohmann::json& head = children.empty() ? nlohmann::json() : children[0].progress;
  if (head.is_object()) {
    out += fmt::format("  iterations {}, loss {} (at {}), iteration {} ms mean, {} ms p95\n",
                       Cell(head, "iteration", "{:.0f}"), Cell(head, "loss", "{:.5f}"),
                       Cell(head, "evaluated_at", "{:.0f}"), Cell(head, "iteration_ms_mean", "{:.1f}"),
                       Cell(head, "iteration_ms_p95", "{:.1f}"));
  }
  out += fmt::format("{:>4}  {:<6}  {:>6}  {:>7}  {:>9}  {:>8}  {:>6}  {:>7}  {:>7}  {}\n", "node",
                     "role", "iters", "samples", "compute s", "inject s", "late", "ignored",
                     "waiting", "injection");
  for (size_t i = 0; i < children.size(); ++i) {
    const Child& c = children[i];
    const nlohmann::json& p = c.progress;
    std::string state = c.final_report.is_object() ? "  done" : (c.exited ? "  (exited)" : "");
    out += fmt::format("{:>4}  {:<6}  {:>6}  {:>7}  {:>9}  {:>8}  {:>6}  {:>7}  {:>7}  {}{}\n", i,
                       p.is_object() ? p.value("role", "") : "", Cell(p, "iteration", "{:.0f}"),
                       Cell(p, "own_samples", "{:.0f}"), Cell(p, "compute_s", "{:.2f}"),
                       Cell(p, "injected_s", "{:.2f}"), Cell(p, "late_dropped", "{:.0f}"),
                       Cell(p, "children_ignored", "{:.0f}"), Cell(p, "undecodable_waits", "{:.0f}"),
                       c.straggle, state);
  }
  return out;
}

int RunCodedLocal(const LocalConfig& config, const ConfigParser<LocalConfig>& parser) {
  auto options = CodedOptionsFrom(config.mode, config.coded, config.gossip);
  auto plan = options.ok() ? MakeCodedPlan(config.mode, config.coded.n, config.coded.L,
                                           config.coded.s, static_cast<uint64_t>(config.coded.code_seed))
                           : StatusOr<CodedPlan>(options.status());
  if (!plan.ok()) {
    std::fprintf(stderr, "murmur local: %s\n", std::string(plan.status().message()).c_str());
    return 2;
  }
  LocalConfig sized = config;
  sized.nodes = static_cast<int>(plan->processes);
  if (plan->processes > 256) {
    std::fprintf(stderr, "murmur local: %s needs %lld processes; local runs start at most 256\n",
                 config.mode.c_str(), static_cast<long long>(plan->processes));
    return 2;
  }
  auto straggle = ParseStraggleList(config.straggle, sized.nodes);
  if (!straggle.ok()) {
    std::fprintf(stderr, "murmur local: %s\n", std::string(straggle.status().message()).c_str());
    return 2;
  }
  for (const auto& [i, spec] : *straggle) {
    if (auto o = ParseCodedStraggle(config.mode, spec); !o.ok()) {
      std::fprintf(stderr, "murmur local: node %d: %s\n", i, std::string(o.status().message()).c_str());
      return 2;
    }
  }
  char dir_template[] = "/tmp/murmur-local-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) {
    std::fprintf(stderr, "murmur local: cannot create a temporary directory\n");
    return 1;
  }
  const std::filesystem::path dir = dir_template;
  std::vector<std::string> forward_keys = CodedKeyNames();
  for (const auto& k : GossipKeyNames()) {
    if (k != "straggle") forward_keys.push_back(k);
  }
  const std::vector<std::string> forwarded = parser.GivenFlags(forward_keys);
  LocalCluster cluster(sized, dir, [&](int i) {
    std::vector<std::string> a = {"--mode", config.mode};
    a.insert(a.end(), forwarded.begin(), forwarded.end());
    if (auto it = straggle->find(i); it != straggle->end()) a.insert(a.end(), {"--straggle", it->second});
    return a;
  });
  InstallStopSignals();
  if (Status s = cluster.Spawn(); !s.ok()) {
    std::fprintf(stderr, "murmur local: %s\n", s.ToString().c_str());
    cluster.Stop(std::chrono::milliseconds(2000));
    return 1;
  }
  for (auto& [i, spec] : *straggle) cluster.children()[static_cast<size_t>(i)].straggle = spec;
  std::string what = config.mode;
  if (plan->code) what += ": " + plan->code->ToString();
  what += fmt::format(", N = {} workers", plan->workers);
  if (config.mode != "gc" && config.mode != "ring") {
    what += fmt::format(" (n = {}, L = {})", config.coded.n, config.coded.L);
  }
  const bool tty = config.progress == "tty" || (config.progress == "auto" && ::isatty(STDERR_FILENO));
  const bool plain = config.progress == "plain" || (config.progress == "auto" && !tty);
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  double next_draw = 0, next_line = 1;
  size_t drawn_lines = 0;
  auto all_exited = [&] {
    for (const auto& c : cluster.children()) {
      if (!c.exited) return false;
    }
    return true;
  };
  while (!StopRequested() && (config.duration <= 0 || elapsed() < config.duration) && !all_exited()) {
    cluster.Poll(std::chrono::milliseconds(50));
    const double t = elapsed();
    if (tty && t >= next_draw) {
      next_draw = t + 0.25;
      const std::string table = CodedTable(cluster.children(), t, what);
      if (drawn_lines > 0) std::fprintf(stderr, "\033[%zuA\033[J", drawn_lines);
      std::fputs(table.c_str(), stderr);
      drawn_lines = static_cast<size_t>(std::count(table.begin(), table.end(), '\n'));
    } else if (plain && t >= next_line) {
      next_line = t + 2;
      std::fputs(CodedTable(cluster.children(), t, what).c_str(), stderr);
    }
  }
  const double wall = elapsed();
  const int killed = cluster.Stop(std::chrono::milliseconds(5000));
  if (config.progress != "none") {
    if (tty && drawn_lines > 0) std::fprintf(stderr, "\033[%zuA\033[J", drawn_lines);
    std::fputs(CodedTable(cluster.children(), wall, what).c_str(), stderr);
  }
  bool ok = killed == 0;
  nlohmann::json late = nlohmann::json::array();
  uint64_t rejected = 0;
  for (const Child& c : cluster.children()) {
    const bool done = c.final_report.is_object() && WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0;
    ok &= done;
    late.push_back(done ? c.final_report.value("late_dropped", uint64_t{0}) : uint64_t{0});
    if (done) rejected += c.final_report.value("rejected", uint64_t{0});
  }
  const nlohmann::json head = cluster.children()[0].final_report;
  const bool have = head.is_object();
  const std::vector<double> times = have ? head["iteration_ms"].get<std::vector<double>>() : std::vector<double>{};
  const auto [mean, p95] = MeanAndP95(times);
  const bool keep = !ok || config.keep_logs;
  if (config.json) {
    nlohmann::json j;
    j["mode"] = config.mode;
    j["n"] = config.coded.n;
    j["L"] = config.coded.L;
    j["s"] = config.mode == "tree" || config.mode == "ring" ? 0 : config.coded.s;
    j["workers"] = plan->workers;
    j["processes"] = plan->processes;
    j["code"] = plan->code ? nlohmann::json(plan->code->ToString()) : nlohmann::json(nullptr);
    j["ok"] = ok;
    j["wall_s"] = wall;
    j["iterations"] = have ? head["iteration"] : nlohmann::json(nullptr);
    j["loss"] = have ? head["loss"] : nlohmann::json(nullptr);
    j["accuracy"] = have ? head["accuracy"] : nlohmann::json(nullptr);
    j["iteration_ms_mean"] = mean;
    j["iteration_ms_p95"] = p95;
    j["iteration_ms"] = times;
    j["late_dropped"] = late;
    j["rejected"] = rejected;
    j["killed_at_stop"] = killed;
    j["logs"] = keep ? nlohmann::json(dir_template) : nlohmann::json(nullptr);
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("%s, %zu processes, %.1f s%s\n", what.c_str(), cluster.children().size(), wall,
                ok ? "" : " (not every node finished cleanly)");
    if (have) {
      std::printf("  %s iterations; final training loss %s, test accuracy %s\n",
                  head["iteration"].dump().c_str(), head["loss"].dump().c_str(),
                  head["accuracy"].dump().c_str());
      std::printf("  iteration time %.1f ms mean, %.1f ms p95\n", mean, p95);
    }
    std::printf("  late answers dropped per node:");
    for (const auto& l : late) std::printf(" %s", l.dump().c_str());
    std::printf("\n  node logs %s %s\n", keep ? "kept in" : "removed from", dir_template);
  }
  if (!keep) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_template, ignored);
  }
  return ok ? 0 : 1;
}

}  // namespace

struct LocalCommand::Impl {
  ConfigParser<LocalConfig> parser{LocalSchema()};
};

LocalCommand::LocalCommand(CLI::App& app) : impl_(std::make_unique<Impl>()) {
  subcommand_ = app.add_subcommand(
      "local", "Start N node processes on loopback and show who sees whom, live");
  impl_->parser.AddOptions(*subcommand_);
}

LocalCommand::~LocalCommand() = default;

int LocalCommand::Run() {
  StatusOr<LocalConfig> resolved = impl_->parser.Resolve(std::getenv);
  if (resolved.ok() && resolved->probe_timeout_ms >= resolved->probe_interval_ms) {
    resolved = InvalidArgumentError("probe_timeout_ms must be below probe_interval_ms");
  }
  if (!resolved.ok()) {
    std::fprintf(stderr, "murmur local: %s\n", std::string(resolved.status().message()).c_str());
    return 2;
  }
  const LocalConfig& config = *resolved;
  if (config.mode == "gossip") return RunGossipLocal(config, impl_->parser);
  if (IsCodedMode(config.mode)) return RunCodedLocal(config, impl_->parser);
  InstallStopSignals();
  char dir_template[] = "/tmp/murmur-local-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) {
    std::fprintf(stderr, "murmur local: cannot create a temporary directory\n");
    return 1;
  }
  LocalCluster cluster(config, dir_template);
  if (Status s = cluster.Spawn(); !s.ok()) {
    std::fprintf(stderr, "murmur local: %s\n", s.ToString().c_str());
    cluster.Stop(std::chrono::milliseconds(2000));
    return 1;
  }
  const bool tty = config.progress == "tty" || (config.progress == "auto" && ::isatty(STDERR_FILENO));
  const bool plain = config.progress == "plain" || (config.progress == "auto" && !tty);
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  double converged_at = -1;
  double next_draw = 0, next_line = 1;
  size_t drawn_lines = 0;
  while (!StopRequested() && (config.duration <= 0 || elapsed() < config.duration)) {
    cluster.Poll(std::chrono::milliseconds(50));
    const double t = elapsed();
    if (converged_at < 0 && cluster.AllSeeAllAlive()) {
      converged_at = t;
      if (plain) std::fprintf(stderr, "murmur local: full view after %.2f s\n", t);
    }
    if (tty && t >= next_draw) {
      next_draw = t + 0.25;
      const std::string table = cluster.Table(t);
      if (drawn_lines > 0) std::fprintf(stderr, "\033[%zuA\033[J", drawn_lines);
      std::fputs(table.c_str(), stderr);
      drawn_lines = static_cast<size_t>(std::count(table.begin(), table.end(), '\n'));
    } else if (plain && t >= next_line) {
      next_line = t + 1;
      size_t seeing_all = 0;
      for (size_t i = 0; i < cluster.children().size(); ++i) {
        bool all = true;
        for (size_t j = 0; j < cluster.children().size(); ++j) {
          const char v = cluster.View(i, j);
          all &= v == '=' || v == 'A';
        }
        seeing_all += all;
      }
      std::fprintf(stderr, "murmur local: %.1f s, %zu/%zu nodes see every node alive\n", t,
                   seeing_all, cluster.children().size());
    }
  }
  const double t = elapsed();
  const bool final_ok = cluster.AllSeeAllAlive();
  const std::string table = cluster.Table(t);
  if (config.progress != "none") {
    if (tty && drawn_lines > 0) std::fprintf(stderr, "\033[%zuA\033[J", drawn_lines);
    std::fputs(table.c_str(), stderr);
  }
  const int killed = cluster.Stop(std::chrono::milliseconds(5000));
  const bool ok = converged_at >= 0 && final_ok;
  const bool keep = !ok || config.keep_logs;
  if (config.json) {
    nlohmann::json j;
    j["nodes"] = config.nodes;
    j["wall_s"] = t;
    j["converged"] = converged_at >= 0;
    j["converged_after_s"] = converged_at;
    j["full_view_at_end"] = final_ok;
    j["killed_at_stop"] = killed;
    j["logs"] = keep ? nlohmann::json(dir_template) : nlohmann::json(nullptr);
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("%d nodes: %s; %s at the end; stopped %s; node logs %s %s\n", config.nodes,
                converged_at >= 0 ? fmt::format("full view after {:.2f} s", converged_at).c_str()
                                  : "never reached a full view",
                final_ok ? "full view" : "NOT a full view",
                killed == 0 ? "cleanly" : fmt::format("({} killed)", killed).c_str(),
                keep ? "kept in" : "removed from",
                dir_template);
  }
  if (!keep) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_template, ignored);
  }
  return ok ? 0 : 1;
}

}  // namespace murmur::node
