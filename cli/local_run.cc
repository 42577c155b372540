#include "cli/local_run.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <system_error>

#include "cli/node_command.h"
#include "cli/progress.h"
#include "gossip/mode.h"

namespace murmur::node {
namespace {

// One run from its spawned nodes to its report: what it shows as it goes (the live table or
// plain lines, the programs' output, a node's failure where it happens, the injected crashes)
// and what it keeps for the report.
class LocalRun {
 public:
  LocalRun(const LocalConfig& config, LocalMode& mode, LocalCluster& cluster,
           std::vector<CrashPlan> crashes)
      : config_(config),
        mode_(mode),
        cluster_(cluster),
        crashes_(std::move(crashes)),
        tty_(config.progress == "tty" || (config.progress == "auto" && ::isatty(STDERR_FILENO))),
        plain_(config.progress == "plain" || (config.progress == "auto" && !tty_)),
        start_(std::chrono::steady_clock::now()) {}

  // Polls and shows the run until a stop signal, the duration, or (for a mode that ends when
  // its processes do) every node exited.
  void Loop() {
    double next_draw = 0, next_line = 1;
    while (!StopRequested() && (config_.duration <= 0 || Elapsed() < config_.duration) &&
           !(mode_.ends_when_all_exit() && AllExited())) {
      cluster_.Poll(std::chrono::milliseconds(50));
      const double t = Elapsed();
      Relay();
      Announce(t);
      Crash(t);
      WatchSilence(t);
      mode_.Observe(cluster_, t, plain_);
      if (StopRequested() && interrupted_at_ < 0) interrupted_at_ = t;
      if (redraw_) {
        redraw_ = false;
        next_draw = 0;
      }
      if (tty_ && t >= next_draw) {
        next_draw = t + 0.25;
        Draw(mode_.Table(cluster_, t));
      } else if (plain_ && t >= next_line) {
        next_line = t + mode_.plain_period();
        const std::string out = mode_.Plain(cluster_, t);
        std::fputs((mode_.plain_is_table() ? PlainChanges(out, t, plain_printed_) : out).c_str(),
                   stderr);
      }
    }
  }

  // Stops the nodes, shows the final table and prints the report; the exit status.
  int Finish(const std::filesystem::path& dir) {
    const double wall = Elapsed();
    const bool show = config_.progress != "none";
    if (mode_.final_table_before_stop()) {
      mode_.BeforeStop(cluster_, wall);
      if (show) Draw(mode_.Table(cluster_, wall));
    }
    if (StopRequested() && interrupted_at_ < 0) interrupted_at_ = wall;
    const bool running = !AllExited();
    if (running && interrupted_at_ >= 0 && !config_.exec.empty()) {
      Say(
          fmt::format("murmur local: {:.1f} s: interrupted: every program stops at its next "
                      "step; up to {:g} s for their own finish (--stop-grace-s; Ctrl-C again "
                      "ends them now)\n",
                      interrupted_at_, config_.stop_grace_s));
    }
    const int signals = StopSignals();
    const int killed = cluster_.Stop(
        std::chrono::milliseconds(static_cast<int64_t>(config_.stop_grace_s * 1000)), [&] {
          Relay();
          return StopSignals() == signals;  // another Ctrl-C: no more waiting
        });
    Relay();
    if (show && !mode_.final_table_before_stop()) Draw(mode_.Table(cluster_, wall));
    const bool ok = mode_.Succeeded(cluster_, killed);
    const bool keep = !ok || config_.keep_logs;
    mode_.Print(cluster_, wall, killed, ok, Out(dir, keep));
    if (!keep) {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
    if (ok) return 0;
    for (const NodeFailure& f : failures_) {
      std::fprintf(stderr, "murmur local: node %zu %s: %s\n", f.index + 1,
                   ExitText(f.status).c_str(),
                   f.last_lines.empty() ? "(its log is empty)" : f.last_lines.back().c_str());
    }
    return FailureExitCode(failures_);
  }

 private:
  double Elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

  bool AllExited() const {
    return std::all_of(cluster_.children().begin(), cluster_.children().end(),
                       [](const Child& c) { return c.exited; }) &&
           std::none_of(crashes_.begin(), crashes_.end(),
                        [](const CrashPlan& p) { return p.down > 0 && !p.restarted; });
  }

  // Injected crashes and restarts, when their time comes.
  void Crash(double t) {
    for (CrashPlan& p : crashes_) {
      if (!p.killed && t >= p.at) {
        p.killed = true;
        cluster_.Crash(static_cast<size_t>(p.index));
        std::fprintf(stderr, "murmur local: %.1f s: node %d crashed (SIGKILL, injected)%s\n", t,
                     p.index + 1,
                     p.down > 0 ? fmt::format("; back in {:g} s", p.down).c_str() : "");
      } else if (p.killed && !p.restarted && p.down > 0 && t >= p.at + p.down) {
        p.restarted = true;
        const Status s = cluster_.Restart(static_cast<size_t>(p.index));
        std::fprintf(stderr, "murmur local: %.1f s: node %d %s\n", t, p.index + 1,
                     s.ok() ? "restarted" : ("could not restart: " + s.ToString()).c_str());
      }
    }
  }

  // A node that writes no report line for the bound (LocalConfig::unresponsive_s, or 4 times its
  // longest silence so far; kStartupFactor times it before its first line) before its final one
  // is said to be unresponsive, once; its peers' membership takes it out of the run. Once every
  // other node has exited (or crashed on purpose) and it stays silent for the bound after that
  // too, nothing is left to wait for: it is killed and named as the run's failure. A node that
  // speaks again is said to, and waited for as before.
  static constexpr double kStartupFactor = 6;
  void WatchSilence(double t) {
    const auto now = std::chrono::steady_clock::now();
    const auto& children = cluster_.children();
    auto seconds = [](auto d) { return std::chrono::duration<double>(d).count(); };
    for (size_t i = 0; i < children.size(); ++i) {
      const Child& c = children[i];
      if (c.exited || c.down || c.has_final() || unresponsive_.count(i) > 0) continue;
      const double silent = seconds(now - c.heard);
      // Before its first line a node is starting (loading data, importing a framework).
      const double bound = c.heard_once
                               ? std::max(config_.unresponsive_s, 4 * seconds(c.longest_silence))
                               : kStartupFactor * config_.unresponsive_s;
      if (silent < bound) {
        alone_since_.erase(i);
        if (silent_.erase(i) > 0) {
          Say(fmt::format("murmur local: {:.1f} s: node {} speaks again\n", t, i + 1));
        }
        continue;
      }
      if (silent_.insert(i).second) {
        Say(
            fmt::format("murmur local: {:.1f} s: node {} has written nothing for {:.1f} s "
                        "(stopped or hung?): its peers go on without it once they declare it "
                        "dead\n",
                        t, i + 1, silent));
      }
      bool others_ended = true;
      for (size_t j = 0; j < children.size(); ++j) {
        const Child& o = children[j];
        // Only exited ones count: nodes waiting together (a consensus finish over a thin link
        // writes no line while it waits) are not each other's reason to be killed.
        others_ended &= j == i || o.exited || o.down;
      }
      if (!others_ended) continue;
      // The bound counts from the later of its last line and the others' exit: a collector
      // still sending the finish's result over a thin link was silent while they waited with it,
      // and must see them gone (its linger) before it exits.
      const auto alone = alone_since_.try_emplace(i, now).first->second;
      if (seconds(now - std::max(c.heard, alone)) < bound) continue;
      const std::string why = fmt::format(
          "node {} unresponsive: wrote nothing for {:.1f} s, killed (SIGKILL) {:.1f} s after "
          "every other node had exited",
          i + 1, silent, seconds(now - alone));
      unresponsive_[i] = why;
      Say(fmt::format("murmur local: {:.1f} s: {}\n", t, why));
      cluster_.Kill(i);
    }
  }

  void Draw(const std::string& table) {
    if (drawn_lines_ > 0) std::fprintf(stderr, "\033[%zuA\033[J", drawn_lines_);
    std::fputs(table.c_str(), stderr);
    drawn_lines_ = tty_ ? static_cast<size_t>(std::count(table.begin(), table.end(), '\n')) : 0;
  }

  // Lines for the user above the live table (which is drawn again under them).
  void Say(const std::string& text) {
    if (drawn_lines_ > 0) std::fprintf(stderr, "\033[%zuA\033[J", drawn_lines_);
    drawn_lines_ = 0;
    redraw_ = true;
    std::fputs(text.c_str(), stderr);
  }

  // The --exec programs' own output, by node, as it comes.
  void Relay() {
    std::string text;
    for (const auto& [i, line] : cluster_.TakeProgramLines()) {
      text += fmt::format("node {} | {}\n", i + 1, line);
    }
    if (!text.empty()) Say(text);
  }

  // A node that ends with a failure is shown at once: its id, how it ended, its log's last lines.
  void Announce(double t) {
    for (size_t i = 0; i < cluster_.children().size(); ++i) {
      const Child& c = cluster_.children()[i];
      const bool failed = c.exited && !c.down && c.status != 0;
      if (!failed || std::any_of(failures_.begin(), failures_.end(),
                                 [&](const NodeFailure& f) { return f.index == i; })) {
        continue;
      }
      failures_.push_back({i, c.status, LastLines(c.log, 8)});
      std::string text =
          fmt::format("murmur local: {:.1f} s: node {} {} (log: {}); its last lines:\n", t, i + 1,
                      ExitText(c.status), c.log);
      for (const std::string& line : failures_.back().last_lines) text += "  | " + line + "\n";
      Say(text);
    }
  }

  // What the mode's report needs besides the cluster.
  ReportOut Out(const std::filesystem::path& dir, bool keep) const {
    ReportOut out;
    out.json = config_.json;
    out.run_dir = config_.run_dir;
    // With a run directory the logs are there and stay; the temporary directory keeps the rest.
    out.keep = keep || !config_.run_dir.empty();
    out.network = config_.network.Describe();
    out.interrupted_at = interrupted_at_;
    out.logs = config_.run_dir.empty() ? dir.string()
                                       : (std::filesystem::path(config_.run_dir) / "logs").string();
    // A node killed for its silence is the cause of the others' failures (a ring's ranks end
    // because it stopped answering), so it is named first.
    if (!unresponsive_.empty()) {
      out.failure = unresponsive_.begin()->second;
    } else if (!failures_.empty()) {
      out.failure =
          fmt::format("node {} {}", failures_[0].index + 1, ExitText(failures_[0].status));
    }
    for (const CrashPlan& p : crashes_) {
      if (!p.killed) continue;
      out.crashes.push_back(
          {static_cast<size_t>(p.index), p.at, p.restarted ? p.at + p.down : -1.0});
    }
    return out;
  }

  const LocalConfig& config_;
  LocalMode& mode_;
  LocalCluster& cluster_;
  std::vector<CrashPlan> crashes_;
  const bool tty_;
  const bool plain_;
  const std::chrono::steady_clock::time_point start_;
  double interrupted_at_ = -1;              // when a stop signal ended the run (< 0: it did not)
  bool redraw_ = false;                     // Say wrote over the table: draw it again at once
  size_t drawn_lines_ = 0;                  // the table's lines on the terminal now
  std::vector<std::string> plain_printed_;  // the table rows plain progress printed last
  std::vector<NodeFailure> failures_;
  std::set<size_t> silent_;                     // nodes said to be unresponsive, not yet killed
  // Silent nodes left alone: when WatchSilence first found every other node exited.
  std::map<size_t, std::chrono::steady_clock::time_point> alone_since_;
  std::map<size_t, std::string> unresponsive_;  // nodes killed for it, and why
};

// What every --exec program gets besides its node's keys: the launcher's defaulted keys
// (MURMUR_LAUNCHER_DEFAULTS) and, as torchrun does, a thread count for its math libraries
// (OMP_NUM_THREADS: PyTorch's intra-op pool and OpenBLAS read it) of this machine's cores over
// the processes, unless the environment sets one. Said once.
std::vector<std::string> ExecEnvironment(const LocalMode& mode) {
  std::vector<std::string> env;
  const std::vector<std::string> defaulted = mode.DefaultedKeys();
  if (!defaulted.empty())
    env.push_back(fmt::format("MURMUR_LAUNCHER_DEFAULTS={}", fmt::join(defaulted, ",")));
  const int processes = mode.processes();
  if (const char* given = std::getenv("OMP_NUM_THREADS"); given != nullptr) {
    std::fprintf(stderr,
                 "murmur local: each program runs OMP_NUM_THREADS=%s threads (from the "
                 "environment)\n",
                 given);
    return env;
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  const int cores = ::sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
  const int threads = std::max(1, cores / std::max(1, processes));
  env.push_back(fmt::format("OMP_NUM_THREADS={}", threads));
  std::fprintf(stderr,
               "murmur local: each program runs %d thread%s (OMP_NUM_THREADS: %d cores over %d "
               "processes; set OMP_NUM_THREADS to choose)\n",
               threads, threads == 1 ? "" : "s", cores, processes);
  return env;
}

}  // namespace

int RunLocal(const LocalConfig& config, LocalMode& mode, const std::filesystem::path& dir,
             const std::map<int, std::string>& straggle, std::vector<CrashPlan> crashes,
             const net::NetnsNetwork* network) {
  LocalClusterOptions co;
  co.nodes = mode.processes();
  co.mode = config.mode;
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
  if (!config.exec.empty()) {
    co.exec_env = ExecEnvironment(mode);
    const std::string said = mode.Announcement();
    if (!said.empty()) std::fputs(said.c_str(), stderr);
  }
  LocalCluster cluster(co, dir, [&](int i) {
    NodeKeys keys = mode.KeysOf(i);
    if (auto it = straggle.find(i); it != straggle.end()) keys["straggle"] = it->second;
    return keys;
  });
  InstallStopSignals();
  if (Status s = cluster.Spawn(); !s.ok()) {
    std::fprintf(stderr, "murmur local: %s\n", s.ToString().c_str());
    cluster.Stop(std::chrono::milliseconds(2000));
    return 1;
  }
  for (const auto& [i, spec] : straggle) cluster.children()[static_cast<size_t>(i)].straggle = spec;
  LocalRun run(config, mode, cluster, std::move(crashes));
  run.Loop();
  return run.Finish(dir);
}

}  // namespace murmur::node
