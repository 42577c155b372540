// `murmur plan`: prints what a synchronous mode would run, without running it: the tree, the
// gradient code (its matrix B and conditioning), who holds which parts of the data with which
// coefficients, and every worker's computation load against uncoded data parallelism.

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "gossip/sync_node.h"
#include "node/config/coded_config.h"
#include "node/config/config_schema.h"
#include "node/driver/sync_driver.h"

namespace murmur::node {
namespace {

struct PlanConfig {
  gossip::Mode mode = gossip::Mode::kCodedTree;
  CodedConfig coded;
  int64_t samples = 0;
  bool json = false;
};

const ConfigSchema<PlanConfig>& PlanSchema() {
  static const ConfigSchema<PlanConfig>* schema = [] {
    using C = PlanConfig;
    auto* s = new ConfigSchema<PlanConfig>();
    s->Enum("mode", &C::mode, "coded-tree",
            {{"coded-tree", gossip::Mode::kCodedTree},
             {"tree", gossip::Mode::kTree},
             {"gc", gossip::Mode::kGc},
             {"ring", gossip::Mode::kRing}},
            "which synchronous mode to describe")
        .Embed(CodedSchema(), &C::coded,
               {"iterations", "global_batch", "report_after_s", "join_timeout_s"})
        .Integer("samples", &C::samples, int64_t{6000}, int64_t{0}, int64_t{1} << 40,
                 "m: samples per iteration to allocate (a full batch, or the global mini-batch)")
        .Bool("json", &C::json, false, "print the plan as one JSON object instead of tables");
    return s;
  }();
  return *schema;
}

std::string Range(int64_t first, int64_t count) {
  if (count <= 0) return "-";
  return count == 1 ? std::to_string(first) : fmt::format("{}-{}", first, first + count - 1);
}

}  // namespace

class PlanCommand : public ConfiguredCommand<PlanConfig> {
 public:
  explicit PlanCommand(CLI::App& app)
      : ConfiguredCommand(
            app, "plan",
            "Describe a CodedReduce tree (or a baseline): code, data allocation, loads",
            PlanSchema()) {}
  int Run() override;
};

namespace {

// What `murmur plan` prints: text, and the same as one JSON object.
struct Description {
  std::string text;
  nlohmann::json json;
};

// B: row k is what child k sends, as coefficients on its parent's parts.
void AddCodeMatrix(const coding::GradientCode& code, int n, Description& d) {
  d.text += "B (row k: what child k sends, as coefficients on its parent's parts R_0..R_n-1):\n";
  nlohmann::json b = nlohmann::json::array();
  for (int k = 0; k < n; ++k) {
    d.text += "  [";
    nlohmann::json row = nlohmann::json::array();
    for (int p = 0; p < n; ++p) {
      d.text += fmt::format(" {:8.4f}", code.Coefficient(k, p));
      row.push_back(code.Coefficient(k, p));
    }
    d.text += " ]\n";
    b.push_back(row);
  }
  d.json["B"] = b;
}

// One row per rank: its place in the tree, what it computes and what it holds.
void AddRanks(const coding::TreeLayout& layout, const coding::TreeAllocation& alloc, int64_t m,
              Description& d) {
  d.text += fmt::format("{:>5}  {:>5}  {:<6}  {:>6}  {:<9}  {:>8}  {:>8}  {}\n", "rank", "layer",
                        "role", "parent", "children", "subtree", "computes",
                        "holds (parent's part: samples x coefficient)");
  nlohmann::json nodes = nlohmann::json::array();
  for (int64_t r = 0; r < layout.size(); ++r) {
    const bool leaf = layout.IsLeaf(r);
    const std::string role = r == 0 ? "root" : (leaf ? "leaf" : "parent");
    std::string holds;
    nlohmann::json held = nlohmann::json::array();
    for (const auto& h : alloc.held[static_cast<size_t>(r)]) {
      holds += fmt::format("{}R{}: {} x {:.4g}", holds.empty() ? "" : ", ", h.part, h.samples,
                           h.coefficient);
      held.push_back({{"part", h.part}, {"samples", h.samples}, {"coefficient", h.coefficient}});
    }
    if (r == 0) holds = fmt::format("all {} samples, weight 1 (computes none)", m);
    const auto own = static_cast<int64_t>(alloc.own[static_cast<size_t>(r)].size());
    d.text += fmt::format("{:>5}  {:>5}  {:<6}  {:>6}  {:<9}  {:>8}  {:>8}  {}\n", r,
                          layout.Layer(r), role, r == 0 ? "-" : std::to_string(layout.Parent(r)),
                          leaf ? "-" : Range(layout.FirstChild(r), layout.n()),
                          alloc.subtree[static_cast<size_t>(r)], own, holds);
    nodes.push_back({{"rank", r},
                     {"layer", layout.Layer(r)},
                     {"role", role},
                     {"parent", layout.Parent(r)},
                     {"subtree", alloc.subtree[static_cast<size_t>(r)]},
                     {"computes", own},
                     {"holds", held}});
  }
  d.json["nodes"] = nodes;
}

// A tree mode: the code, who waits for whom, the load against uncoded, every rank.
Status DescribeTree(const gossip::SyncPlan& plan, gossip::Mode mode, int64_t m, double uncoded,
                    Description& d) {
  const coding::TreeLayout& layout = *plan.layout;
  const coding::GradientCode& code = *plan.code;
  MURMUR_ASSIGN_OR_RETURN(const coding::TreeAllocation alloc,
                          coding::AllocateTree(layout, code, m));
  const int n = layout.n();
  const int s = code.s();
  d.text += fmt::format("tree: n = {} children per parent, L = {} layers; code: {}\n", n,
                        layout.layers(), code.ToString());
  d.text +=
      fmt::format("every parent decodes after {} of its {} children{}\n",
                  code.scheme() == coding::CodeScheme::kFractionalRepetition && s > 0
                      ? "one answer from each group of s + 1"
                      : std::to_string(n - s),
                  n, s > 0 ? fmt::format(" (tolerates {} stragglers per sibling group)", s) : "");
  AddCodeMatrix(code, n, d);
  const double load = static_cast<double>(alloc.MaxLoad());
  d.text += fmt::format(
      "computation load: {} samples per worker (formula m / (r + ... + r^L), r = n/(s+1): "
      "{:.1f}) vs uncoded m/N = {:.1f} ({:.2f}x)",
      alloc.MaxLoad(), coding::CodedLoad(n, layout.layers(), s, m), uncoded,
      uncoded > 0 ? load / uncoded : 0.0);
  if (mode != gossip::Mode::kGc) {
    d.text += fmt::format(", flat gradient coding (s+1) m/N = {:.1f}",
                          static_cast<double>(s + 1) * uncoded);
  }
  d.text += "\n\n";
  AddRanks(layout, alloc, m, d);
  d.json["n"] = n;
  d.json["L"] = layout.layers();
  d.json["s"] = s;
  d.json["code"] = code.ToString();
  d.json["load"] = alloc.MaxLoad();
  d.json["load_formula"] = coding::CodedLoad(n, layout.layers(), s, m);
  return OkStatus();
}

}  // namespace

int PlanCommand::Run() {
  StatusOr<PlanConfig> resolved = parser_.Resolve(std::getenv);
  if (!resolved.ok()) {
    std::fprintf(stderr, "murmur plan: %s\n", std::string(resolved.status().message()).c_str());
    return 2;
  }
  const PlanConfig& c = *resolved;
  auto plan = gossip::MakeSyncPlan(c.mode, c.coded.n, c.coded.L, c.coded.s,
                                   static_cast<uint64_t>(c.coded.code_seed));
  if (!plan.ok()) {
    std::fprintf(stderr, "murmur plan: %s\n", std::string(plan.status().message()).c_str());
    return 2;
  }
  const int64_t m = c.samples;
  const double uncoded =
      plan->workers > 0 ? static_cast<double>(m) / static_cast<double>(plan->workers) : 0;
  Description d;
  d.json["mode"] = std::string(gossip::ModeName(c.mode));
  d.json["workers"] = plan->workers;
  d.json["processes"] = plan->processes;
  d.json["samples"] = m;
  d.json["uncoded_load"] = uncoded;
  d.text = fmt::format("{}: N = {} workers{} ({} processes), m = {} samples per iteration\n",
                       gossip::ModeName(c.mode), plan->workers,
                       plan->layout ? " under a root" : " in a ring", plan->processes, m);
  if (!plan->layout) {
    d.text += fmt::format(
        "every rank computes its {:.1f} samples; a synchronous all-reduce (reduce-"
        "scatter, all-gather: {} steps of d/{} floats) waits for every rank\n",
        uncoded, 2 * (plan->workers - 1), plan->workers);
    d.json["load"] = uncoded;
  } else if (Status tree = DescribeTree(*plan, c.mode, m, uncoded, d); !tree.ok()) {
    std::fprintf(stderr, "murmur plan: %s\n", tree.ToString().c_str());
    return 2;
  }
  if (c.json) {
    std::printf("%s\n", d.json.dump().c_str());
  } else {
    std::fputs(d.text.c_str(), stdout);
  }
  return 0;
}

std::unique_ptr<Command> MakePlanCommand(CLI::App& app) {
  return std::make_unique<PlanCommand>(app);
}

}  // namespace murmur::node
