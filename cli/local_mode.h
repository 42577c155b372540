#pragma once
// Internal to `murmur local` (local_command.cc): what one mode adds to the common run — its
// nodes' arguments, its live table, its report — and the helpers the modes' tables and reports
// share.

#include <fmt/format.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/local_cluster.h"
#include "cli/local_config.h"
#include "cli/run_dir.h"
#include "cli/summary_json.h"
#include "gossip/sync_node.h"

namespace murmur::node {

// A table cell: `key` of a node's progress JSON in `format` (times `scale`), "-" when absent.
inline std::string Cell(const nlohmann::json& j, const char* key, const char* format,
                        double scale = 1) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return "-";
  return fmt::format(fmt::runtime(format), j[key].get<double>() * scale);
}

// Where a mode's report goes.
struct ReportOut {
  bool json = false;    // one JSON object on stdout instead of text
  bool keep = false;    // the node logs stay in `logs`
  std::string logs;     // the directory of the node logs
  std::string run_dir;  // "": none; else result.json is written there (run_dir.h)
  // The first node that failed during the run ("node 2 exited with code 2"), or "".
  std::string failure;
  // Injected crashes that ran: node index, when, and when it came back (< 0: not restarted).
  struct Crash {
    size_t index = 0;
    double at = 0, back = -1;
  };
  std::vector<Crash> crashes;
  std::string network;  // where the nodes talked (net::NetworkSpec::Describe)
  double interrupted_at = -1;  // when Ctrl-C (a stop signal) ended the run; < 0: it did not
};

// What every mode's JSON report ends with; written to the run directory's result.json when
// there is one, and printed on stdout with --json (returns whether it was).
inline bool PrintJson(nlohmann::json j, double wall, int killed, const ReportOut& out) {
  j["wall_s"] = wall;
  j["killed_at_stop"] = killed;
  j["network"] = out.network;
  j["logs"] = out.keep ? nlohmann::json(out.logs) : nlohmann::json(nullptr);
  return WriteSummary(j, {"murmur local", out.json, out.run_dir});
}

inline std::string LogsLine(const ReportOut& out) {
  return fmt::format("node logs {} {}", out.keep ? "kept in" : "removed from", out.logs);
}

inline bool Finished(const Child& c) {
  return c.has_final() && WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0;
}
// Finished, or crashed on purpose for good (--crash without down): the run can still succeed.
inline bool FinishedOrDown(const Child& c) { return c.down || Finished(c); }

// What one mode adds to the common run of `murmur local`.
class LocalMode {
 public:
  virtual ~LocalMode() = default;
  virtual int processes() const = 0;
  // The mode's keys of node i (after the common ones: id, endpoints, cluster, report), by the
  // node schema's names, with their text.
  virtual NodeKeys KeysOf(int i) const = 0;
  // Keys of KeysOf that are the launcher's own defaults rather than flags given: an --exec
  // program's value for one of them is used (MURMUR_LAUNCHER_DEFAULTS, api/peer_options.h).
  virtual std::vector<std::string> DefaultedKeys() const { return {}; }
  // Said once before the nodes start ("" nothing): for --exec programs, the budget and where
  // it comes from.
  virtual std::string Announcement() const { return ""; }
  virtual std::string Table(const LocalCluster& cluster, double t) const = 0;
  // Plain progress (not a terminal: a log, a pipe), every plain_period seconds. By default the
  // table, of which only the rows that changed since the last print go out (PlainChanges).
  virtual std::string Plain(const LocalCluster& cluster, double t) const {
    return Table(cluster, t);
  }
  virtual bool plain_is_table() const { return true; }
  virtual double plain_period() const { return 1; }
  // After every read of the children's output; `plain`: progress goes out as log lines.
  virtual void Observe(LocalCluster& /*cluster*/, double /*t*/, bool /*plain*/) {}
  // The run ends once every node exited (training modes) or only on Ctrl-C / --duration.
  virtual bool ends_when_all_exit() const { return true; }
  // Membership: the final table and the full-view check happen before the nodes leave.
  virtual bool final_table_before_stop() const { return false; }
  virtual void BeforeStop(const LocalCluster& /*cluster*/, double /*t*/) {}
  virtual bool Succeeded(const LocalCluster& cluster, int killed) const = 0;
  // The report on stdout: text, or one JSON object with `out.json` (PrintJson).
  virtual void Print(const LocalCluster& cluster, double wall, int killed, bool ok,
                     const ReportOut& out) const = 0;
};

// The mode of gossip, murmur's own nodes or --exec programs (local_gossip.cc).
std::unique_ptr<LocalMode> MakeGossipLocal(const LocalConfig& config,
                                           NodeKeys forwarded, std::filesystem::path dir,
                                           std::vector<std::string> devices);

// The mode of coded-tree, tree, gc and ring (local_coded.cc).
std::unique_ptr<LocalMode> MakeCodedLocal(const LocalConfig& config, gossip::SyncPlan plan,
                                          NodeKeys forwarded, std::vector<std::string> devices);

}  // namespace murmur::node
