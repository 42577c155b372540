#pragma once
// Internal to `murmur local` (local_command.cc): what one mode adds to the common run — its
// nodes' arguments, its live table, its report — and the helpers the modes' tables and reports
// share.

#include <sys/wait.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "node/app/local_cluster.h"

namespace murmur::node {

// A table cell: `key` of a node's progress JSON in `format` (times `scale`), "-" when absent.
inline std::string Cell(const nlohmann::json& j, const char* key, const char* format, double scale = 1) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return "-";
  return fmt::format(fmt::runtime(format), j[key].get<double>() * scale);
}

// What every mode's JSON report ends with, then the line itself on stdout.
inline void PrintJson(nlohmann::json j, double wall, int killed, bool keep, const std::string& dir) {
  j["wall_s"] = wall;
  j["killed_at_stop"] = killed;
  j["logs"] = keep ? nlohmann::json(dir) : nlohmann::json(nullptr);
  std::printf("%s\n", j.dump().c_str());
}

inline std::string LogsLine(bool keep, const std::string& dir) {
  return fmt::format("node logs {} {}", keep ? "kept in" : "removed from", dir);
}

inline bool Finished(const Child& c) {
  return c.final_report.is_object() && WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0;
}

// What one mode adds to the common run of `murmur local`.
class LocalMode {
 public:
  virtual ~LocalMode() = default;
  virtual int processes() const = 0;
  // The mode's arguments of node i (after the common ones: id, endpoints, cluster, report).
  virtual std::vector<std::string> NodeArgs(int i) const = 0;
  virtual std::string Table(const LocalCluster& cluster, double t) const = 0;
  // Plain progress (not a terminal: a log, a pipe), every plain_period seconds. By default the
  // table, of which only the rows that changed since the last print go out (PlainChanges).
  virtual std::string Plain(const LocalCluster& cluster, double t) const { return Table(cluster, t); }
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
  // The report on stdout: text, or one JSON object with `json`.
  // `keep`: the node logs stay in `dir`.
  virtual void Print(const LocalCluster& cluster, double wall, int killed, bool ok, bool json,
                     bool keep, const std::string& dir) const = 0;
};

}  // namespace murmur::node
