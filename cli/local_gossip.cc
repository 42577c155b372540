// `murmur local --mode gossip` (local_mode.h): the nodes' arguments, the live table and the
// summary of a gossip run (or of --exec programs on the library).
#include <fmt/format.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "cli/local_cluster.h"
#include "cli/local_config.h"
#include "cli/local_gossip_summary.h"
#include "cli/local_mode.h"
#include "cli/local_summary.h"
#include "cli/placement.h"
#include "coding/compressor.h"
#include "gossip/gossip_node.h"

namespace murmur::node {
namespace {

// A node's reported activity (GossipNode::Activity) before it trains: joining, or waiting for a
// model snapshot.
// A node's cells of the table (step, epoch, loss, accuracy, sent MB, lag, wait s): "-" for each
// before it trains (it has nothing to show but what it waits for), and for a loss or accuracy it
// does not have yet.
std::array<std::string, 7> ProgressCells(const std::optional<GossipProgress>& p) {
  if (!p.has_value() || gossip::BeforeTraining(p->phase)) return {"-", "-", "-", "-", "-", "-", "-"};
  return {fmt::format("{}", p->step),
          fmt::format("{:.2f}", p->local_epoch),
          std::isfinite(p->loss) ? fmt::format("{:.4f}", p->loss) : "-",
          p->accuracy >= 0 ? fmt::format("{:.4f}", p->accuracy) : "-",
          fmt::format("{:.2f}", static_cast<double>(p->bytes_sent) * 1e-6),
          fmt::format("{}", p->max_lag),
          fmt::format("{:.1f}", p->wait_s)};
}

// How often the nodes run a round, as the report names it (GossipNodeOptions::local_steps).
// `reported`: the outer period the nodes resolved (a run too short for the outer optimizer's
// rounds= at every= steps takes fewer; 0: none reported yet).
std::string GossipSchedule(const LocalConfig& c, int reported) {
  if (c.gossip.outer.has_value()) {
    if (reported > 0 && reported != c.gossip.outer->every) {
      return fmt::format(
          "an outer round every {} steps (every={}; fewer: the run holds at "
          "least rounds={})",
          reported, c.gossip.outer->every, c.gossip.outer->rounds);
    }
    if (reported == 0) {
      return fmt::format("an outer round every {} steps or fewer (rounds={})",
                         c.gossip.outer->every, c.gossip.outer->rounds);
    }
    return fmt::format("an outer round every {} steps", c.gossip.outer->every);
  }
  const int h = c.gossip.local_steps;
  if (h > 1) return fmt::format("a round every {} steps", h);
  if (h == 0 &&
      gossip::SparseScheduleFor(GossipCompressor(c.gossip), static_cast<size_t>(c.nodes))) {
    return fmt::format("a round every 2nd step at twice the kept fraction ({} members or fewer)",
                       gossip::kSparseScheduleMembers);
  }
  return "a round every step";
}

class GossipLocal : public LocalMode {
 public:
  GossipLocal(const LocalConfig& config, NodeKeys forwarded, std::filesystem::path dir,
              std::vector<std::string> devices)
      : config_(config),
        forwarded_(std::move(forwarded)),
        dir_(std::move(dir)),
        devices_(std::move(devices)) {}
  // The averaging, topology, schedule (with the outer period the nodes report) and devices.
  std::string What(const LocalCluster& cluster) const {
    int reported = 0;
    for (const Child& c : cluster.children()) {
      // Once the outer optimizer runs (after its start_epoch), the period is its H.
      if (c.gossip.has_value() && c.gossip->local_steps > 0 &&
          c.gossip->local_epoch >=
              config_.gossip.outer.value_or(gossip::OuterOptions{}).start_epoch) {
        reported = std::max(reported, c.gossip->gossip_period);
      }
    }
    return fmt::format(
        "{} on a {}, {}, on {}", GossipAveraging(config_.gossip),
        gossip::TopologyName(config_.gossip.topology), GossipSchedule(config_, reported),
        devices_.front() == "auto" ? "the program's device" : PlacementSummary(devices_));
  }
  int processes() const override { return config_.nodes; }
  std::string ModelPath(int i) const {
    return (dir_ / ("node-" + std::to_string(i + 1) + ".model")).string();
  }
  NodeKeys KeysOf(int i) const override {
    NodeKeys a = forwarded_;
    a["mode"] = "gossip";
    a["shard_index"] = std::to_string(i);
    a["shard_count"] = std::to_string(config_.nodes);
    a["expect_members"] = std::to_string(config_.nodes);
    a["save_model"] = ModelPath(i);
    a["device"] = devices_[static_cast<size_t>(i)];
    // A library program has no budget of its own: the cluster's, even when it is the default
    // (and so not among the keys given, which are forwarded).
    if (!config_.exec.empty()) a.try_emplace("epochs", fmt::format("{}", config_.gossip.epochs));
    return a;
  }
  std::vector<std::string> DefaultedKeys() const override {
    if (config_.exec.empty() || forwarded_.count("epochs") > 0) return {};
    return {"epochs"};
  }
  std::string Announcement() const override {
    if (config_.exec.empty()) return "";
    const auto& g = config_.gossip;
    std::string budget = fmt::format("{:g} epochs", g.epochs);
    budget += forwarded_.count("epochs") > 0
                  ? " (--epochs)"
                  : " (murmur's default: a program's epochs= replaces it)";
    if (g.time_limit_s > 0) budget += fmt::format(" or {:g} s", g.time_limit_s);
    if (g.target_accuracy > 0) budget += fmt::format(" or accuracy {:g}", g.target_accuracy);
    return fmt::format(
        "murmur local: the budget is {}; a flag given here sets the run over a program's own "
        "keyword (the program's log says which it overrode)\n",
        budget);
  }
  void Observe(LocalCluster& cluster, double t, bool) override {
    bool fresh = false, all_have = true;
    double sum = 0;
    for (auto& c : cluster.children()) {
      fresh |= c.new_accuracy;
      c.new_accuracy = false;
      if (!c.gossip.has_value() || c.gossip->accuracy < 0) {
        all_have = false;
        continue;
      }
      sum += c.gossip->accuracy;
      flagged_.insert(c.gossip->stragglers.begin(), c.gossip->stragglers.end());
    }
    if (fresh && all_have)
      timeline_.push_back({t, sum / static_cast<double>(cluster.children().size())});
    StopLateJoiners(cluster, t);
  }
  // A node still joining (or awaiting a model) once every other node has finished, e.g. one
  // restarted just as the run ended, has nobody left to join: without this it would wait out
  // its expect_wait and then train alone. It is stopped, and the summary says it never trained.
  void StopLateJoiners(LocalCluster& cluster, double t) {
    const auto& children = cluster.children();
    for (size_t i = 0; i < children.size(); ++i) {
      const Child& c = children[i];
      if (c.exited || c.down || stopped_late_.count(i) > 0 || !c.gossip.has_value()) continue;
      if (!gossip::BeforeTraining(c.gossip->phase)) continue;
      const std::string& activity = c.gossip->activity;
      bool others_done = true, any_finished = false;
      for (size_t j = 0; j < children.size(); ++j) {
        if (j == i) continue;
        others_done &= children[j].exited;
        any_finished |= children[j].gossip_final.has_value();
      }
      if (!others_done || !any_finished) continue;
      stopped_late_.insert(i);
      std::fprintf(stderr,
                   "murmur local: %.1f s: node %zu is still %s, but every other node has "
                   "finished: stopped (nothing left to join)\n",
                   t, i + 1, activity.c_str());
      cluster.Terminate(i);
    }
  }
  std::string Table(const LocalCluster& cluster, double t) const override {
    // While it runs: the furthest node's estimate of the cluster's samples; once every node
    // ended: what their final reports count, the summary's own number.
    int64_t samples = 0, budget = 0, reported = 0;
    bool all_ended = true;
    for (const auto& c : cluster.children()) {
      all_ended &= c.exited;
      if (c.gossip_final.has_value()) reported += c.gossip_final->samples;
      if (!c.gossip.has_value()) continue;
      samples = std::max<int64_t>(samples, c.gossip->cluster_samples);
      budget = std::max<int64_t>(budget, c.gossip->budget_samples);
    }
    if (all_ended) samples = reported;
    std::string out = fmt::format("murmur local: {} nodes, {}, {:.1f} s", cluster.children().size(),
                                  What(cluster), t);
    if (budget > 0) {
      out += fmt::format(", {:.0f}% of the budget ({} of {} samples)",
                         100.0 * static_cast<double>(samples) / static_cast<double>(budget),
                         samples, budget);
    }
    out += "\n";
    out +=
        fmt::format("{:>4}  {:>6}  {:>5}  {:>7}  {:>8}  {:>8}  {:>5}  {:>6}  {}\n", "node", "step",
                    "epoch", "loss", "accuracy", "sent MB", "stale", "wait s", "straggler");
    for (size_t i = 0; i < cluster.children().size(); ++i) {
      const Child& c = cluster.children()[i];
      const std::optional<GossipProgress>& p = c.gossip;
      std::string flag = flagged_.count(i + 1) ? "yes" : "";
      if (!c.straggle.empty())
        flag += (flag.empty() ? "" : ", ") + std::string("injected ") + c.straggle;
      std::string state = c.gossip_final.has_value() ? "  done" : (c.exited ? "  (exited)" : "");
      if (state.empty() && !p.has_value()) state = "  starting";
      if (state.empty() && p->phase != gossip::GossipNode::Phase::kTraining) {
        state = "  " + p->activity;
      }
      const std::array<std::string, 7> cells = ProgressCells(p);
      out += fmt::format("{:>4}  {:>6}  {:>5}  {:>7}  {:>8}  {:>8}  {:>5}  {:>6}  {}{}\n", i + 1,
                         cells[0], cells[1], cells[2], cells[3], cells[4], cells[5], cells[6],
                         flag, state);
    }
    return out;
  }
  bool Succeeded(const LocalCluster& cluster, int killed) const override {
    return killed == 0 &&
           std::all_of(cluster.children().begin(), cluster.children().end(), FinishedOrDown);
  }
  void Print(const LocalCluster& cluster, double wall, int killed, bool ok,
             const ReportOut& out) const override;

 private:
  const LocalConfig& config_;
  const NodeKeys forwarded_;
  const std::filesystem::path dir_;
  const std::vector<std::string> devices_;             // where each node trains
  std::set<uint64_t> flagged_;                         // ids some other node marked a straggler
  std::set<size_t> stopped_late_;                      // nodes StopLateJoiners stopped
  nlohmann::json timeline_ = nlohmann::json::array();  // [t, mean accuracy] at each new evaluation
};

// The report: accuracy per node, consensus over the saved models, bytes against ring all-reduce.
void GossipLocal::Print(const LocalCluster& cluster, double wall, int killed, bool ok,
                        const ReportOut& out) const {
  const GossipRunSummary summary =
      SummarizeGossipRun(cluster, [this](size_t i) { return ModelPath(static_cast<int>(i)); });
  const std::string what = What(cluster);
  const GossipRunContext context{devices_, what, flagged_, timeline_};
  if (PrintJson(GossipRunJson(summary, context, cluster, ok, out), wall, killed, out)) return;
  PrintGossipRun(summary, context, wall, ok, out);
}

}  // namespace

std::unique_ptr<LocalMode> MakeGossipLocal(const LocalConfig& config,
                                           NodeKeys forwarded,
                                           std::filesystem::path dir,
                                           std::vector<std::string> devices) {
  return std::make_unique<GossipLocal>(config, std::move(forwarded), std::move(dir),
                                       std::move(devices));
}

}  // namespace murmur::node
