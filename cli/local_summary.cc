#include "cli/local_summary.h"

#include <fmt/format.h>

namespace murmur::node {

std::string JoinIds(const std::vector<size_t>& ids) {
  std::string out;
  for (size_t id : ids) out += (out.empty() ? "" : ", ") + std::to_string(id);
  return out;
}

namespace {

// What each reason means, as the node decided it (gossip/run_budget.h).
std::string Meaning(const std::string& reason) {
  if (reason == "epochs")
    return " (the nodes' estimate of the cluster's samples reached the budget)";
  if (reason == "accuracy") return " (the target accuracy)";
  if (reason == "time") return " (the time limit)";
  if (reason == "stopped") return " (stopped by the operator)";
  if (reason == "program") return " (a program's own training loop ended before the budget)";
  return "";
}

std::string Nodes(const std::vector<size_t>& ids) {
  return (ids.size() == 1 ? "node " : "nodes ") + JoinIds(ids);
}

}  // namespace

std::string EndAccount(const std::string& end_reason,
                       const std::map<std::string, std::vector<size_t>>& ends,
                       const std::string& failure, int64_t trained, int64_t budget, double wall,
                       size_t finished, size_t nodes, bool crashed) {
  std::string out;
  if (end_reason.empty() && !failure.empty()) {
    out = fmt::format("ended by a failure after {:.1f} s: {}", wall, failure);
  } else if (end_reason.empty() && ends.empty()) {
    out = fmt::format("ended after {:.1f} s with no node's final report", wall);
  } else {
    const std::string reason = end_reason.empty() ? ends.begin()->first : end_reason;
    out = fmt::format("ended by {}{} after {:.1f} s", reason, Meaning(reason), wall);
  }
  if (budget > 0 && !ends.empty()) {
    out += fmt::format("; the nodes' final reports count {} of {} samples ({:.0f}%{})", trained,
                       budget, 100.0 * static_cast<double>(trained) / static_cast<double>(budget),
                       crashed ? "; not what a crashed process trained before it was killed" : "");
  }
  if (ends.size() > 1) {
    std::string each;
    for (const auto& [reason, ids] : ends) {
      each += (each.empty() ? "" : ", ") + Nodes(ids) + " by " + reason;
    }
    out += ": " + each;
  }
  if (finished < nodes) {
    out += fmt::format(" (only {} of {} nodes finished cleanly{})", finished, nodes,
                       failure.empty() || end_reason.empty() ? "" : "; " + failure);
  }
  return out;
}

}  // namespace murmur::node
