#include "cli/injection_lists.h"

#include <fmt/format.h>

#include <string>

#include "base/spec.h"
#include "node/config/config_schema.h"
#include "node/peer/straggler.h"

namespace murmur::node {
namespace {

// The non-empty pieces of `text` between `sep`s.
std::vector<std::string> SplitNonEmpty(const std::string& text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(sep, start);
    if (end == std::string::npos) end = text.size();
    if (end > start) out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace

// `--straggle node=K,<spec>;...` (or rank=R,<spec>) -> spec per process index.
StatusOr<std::map<int, std::string>> ParseStraggleList(const std::string& text, int nodes,
                                                       bool ranks, int roots) {
  std::map<int, std::string> out;
  for (const std::string& item : SplitNonEmpty(text, ';')) {
    const bool by_rank = item.rfind("rank=", 0) == 0;
    const bool by_worker = item.rfind("worker=", 0) == 0;
    if (item.rfind("node=", 0) != 0 && !by_rank && !by_worker) {
      return InvalidArgumentError("straggle: '" + item +
                                  "' must start with node=K (which node), "
                                  "worker=W" +
                                  std::string(ranks ? " or rank=R" : ""));
    }
    if (by_rank && !ranks) {
      return InvalidArgumentError("straggle: '" + item +
                                  "': rank=R is for the synchronous modes "
                                  "(coded-tree, tree, gc, ring, ps); name a node with node=K");
    }
    const size_t comma = item.find(',');
    const size_t eq = item.find('=');
    const std::string number =
        item.substr(eq + 1, comma == std::string::npos ? std::string::npos : comma - eq - 1);
    // Nodes are named by their ids, 1..N, as the table, the logs and /status show them; ranks
    // (the position in the tree or ring, 0 the root) are 0..N-1, and rank R is process R;
    // workers (the processes that compute gradients) are 1..W in every mode: the root(s) of a
    // tree come before them.
    const int lo = by_rank ? 0 : 1;
    const int hi = by_worker ? nodes - roots : nodes - 1 + lo;
    auto k = ParseInteger(number, lo, hi);
    if (!k.ok()) {
      return InvalidArgumentError(fmt::format(
          "straggle: {} '{}' is not in [{}, {}]{}", item.substr(0, eq), number, lo, hi,
          by_rank || by_worker ? "" : " (nodes are numbered from 1, as the table shows them)"));
    }
    const std::string spec = comma == std::string::npos ? "" : item.substr(comma + 1);
    MURMUR_RETURN_IF_ERROR(ParseStraggle(spec).status());
    out[static_cast<int>(*k) - lo + (by_worker ? roots : 0)] = spec;
  }
  return out;
}

namespace {

// `node=K,at=S[,<third>=D];...` for `what` (crash: down, join: none, clock-jump: by, required),
// the third's value in CrashPlan::down.
StatusOr<std::vector<CrashPlan>> ParseNodeTimes(const std::string& text, int nodes,
                                                std::string_view what, std::string_view third,
                                                bool third_required) {
  const bool with_down = !third.empty();
  const std::string form = !with_down       ? "node=K,at=S"
                           : third_required ? fmt::format("node=K,at=S,{}=D", third)
                                            : fmt::format("node=K,at=S[,{}=D]", third);
  std::vector<CrashPlan> out;
  for (const std::string& item : SplitNonEmpty(text, ';')) {
    CrashPlan plan;
    bool have_node = false, have_at = false;
    for (const std::string& field : SplitNonEmpty(item, ',')) {
      const size_t eq = field.find('=');
      const std::string key = field.substr(0, eq),
                        value = eq == std::string::npos ? "" : field.substr(eq + 1);
      if (key == "node") {
        auto k = ParseInteger(value, 1, nodes);
        if (!k.ok())
          return InvalidArgumentError(
              fmt::format("{}: node '{}' is not in [1, {}]", what, value, nodes));
        plan.index = static_cast<int>(*k) - 1;
        have_node = true;
      } else if (key == "at" || (with_down && key == third)) {
        auto v = ParseDuration(value);
        if (!v.ok())
          return InvalidArgumentError(fmt::format("{}: {}: {}", what, key, v.status().message()));
        (key == "at" ? plan.at : plan.down) = std::chrono::duration<double>(*v).count();
        have_at |= key == "at";
      } else {
        return InvalidArgumentError(
            fmt::format("{}: unknown setting '{}' in '{}' ({})", what, key, item, form));
      }
    }
    if (!have_node || !have_at) {
      return InvalidArgumentError(
          fmt::format("{}: '{}' needs node=K and at=S ({})", what, item, form));
    }
    if (third_required && plan.down <= 0) {
      return InvalidArgumentError(
          fmt::format("{}: '{}' needs a positive {}=D ({})", what, item, third, form));
    }
    out.push_back(plan);
  }
  return out;
}

}  // namespace

StatusOr<std::vector<CrashPlan>> ParseCrashList(const std::string& text, int nodes) {
  return ParseNodeTimes(text, nodes, "crash", "down", false);
}

StatusOr<std::vector<ClockJumpPlan>> ParseClockJumpList(const std::string& text, int nodes) {
  MURMUR_ASSIGN_OR_RETURN(auto plans, ParseNodeTimes(text, nodes, "clock-jump", "by", true));
  std::vector<ClockJumpPlan> out;
  for (const CrashPlan& p : plans) out.push_back({p.index, p.at, p.down});
  return out;
}

StatusOr<std::vector<AttackPlan>> ParseAttackList(const std::string& text, int nodes) {
  std::vector<AttackPlan> out;
  for (const std::string& item : SplitNonEmpty(text, ';')) {
    std::string kind, rest;
    for (const std::string& field : SplitNonEmpty(item, ',')) {
      if (field.starts_with("kind=")) {
        kind = field.substr(5);
      } else {
        rest += (rest.empty() ? "" : ",") + field;
      }
    }
    if (kind != "clock" && kind != "nonfinite") {
      return InvalidArgumentError(fmt::format(
          "attack: '{}' needs kind=clock or kind=nonfinite (node=K,at=S,kind=...)", item));
    }
    MURMUR_ASSIGN_OR_RETURN(auto plans, ParseNodeTimes(rest, nodes, "attack", "", false));
    if (plans.size() != 1) {
      return InvalidArgumentError(fmt::format("attack: '{}' needs node=K and at=S", item));
    }
    out.push_back({plans[0].index, plans[0].at, kind});
  }
  return out;
}

StatusOr<std::vector<JoinPlan>> ParseJoinList(const std::string& text, int nodes) {
  MURMUR_ASSIGN_OR_RETURN(auto plans, ParseNodeTimes(text, nodes, "join", "", false));
  std::vector<JoinPlan> out;
  for (const CrashPlan& p : plans) out.push_back({p.index, p.at});
  return out;
}

StatusOr<std::vector<PartitionPlan>> ParsePartitionList(const std::string& text, int nodes) {
  constexpr std::string_view kForm = "nodes=K1/K2/...,at=S[,for=D]";
  std::vector<PartitionPlan> out;
  for (const std::string& item : SplitNonEmpty(text, ';')) {
    PartitionPlan plan;
    bool have_at = false;
    for (const std::string& field : SplitNonEmpty(item, ',')) {
      const size_t eq = field.find('=');
      const std::string key = field.substr(0, eq),
                        value = eq == std::string::npos ? "" : field.substr(eq + 1);
      if (key == "nodes") {
        for (const std::string& number : SplitNonEmpty(value, '/')) {
          auto k = ParseInteger(number, 1, nodes);
          if (!k.ok()) {
            return InvalidArgumentError(
                fmt::format("partition: node '{}' is not in [1, {}]", number, nodes));
          }
          plan.side.push_back(static_cast<int>(*k) - 1);
        }
      } else if (key == "at" || key == "for") {
        auto v = ParseDuration(value);
        if (!v.ok()) {
          return InvalidArgumentError(fmt::format("partition: {}: {}", key, v.status().message()));
        }
        (key == "at" ? plan.at : plan.length) = std::chrono::duration<double>(*v).count();
        have_at |= key == "at";
      } else {
        return InvalidArgumentError(
            fmt::format("partition: unknown setting '{}' in '{}' ({})", key, item, kForm));
      }
    }
    if (plan.side.empty() || !have_at) {
      return InvalidArgumentError(
          fmt::format("partition: '{}' needs nodes=... and at=S ({})", item, kForm));
    }
    out.push_back(std::move(plan));
  }
  return out;
}

}  // namespace murmur::node
