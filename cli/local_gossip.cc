// `murmur local --mode gossip` (local_mode.h): the nodes' arguments, the live table and the
// summary of a gossip run (or of --exec programs on the library).
#include <fmt/format.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/local_cluster.h"
#include "cli/local_config.h"
#include "cli/local_mode.h"
#include "cli/local_summary.h"
#include "cli/placement.h"
#include "coding/compressor.h"
#include "gossip/gossip_node.h"
#include "node/config/step_breakdown.h"
#include "node/train/checkpoint.h"

namespace murmur::node {
namespace {

// A node's reported activity (GossipNode::Activity) before it trains: joining, or waiting for a
// model snapshot.
bool BeforeTraining(const std::string& activity) {
  return activity.starts_with("joining") || activity.starts_with("waiting");
}

// How often the nodes run a round, as the report names it (GossipNodeOptions::local_steps).
std::string GossipSchedule(const LocalConfig& c) {
  if (c.gossip.outer.has_value()) {
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
  GossipLocal(const LocalConfig& config, std::vector<std::string> forwarded,
              std::filesystem::path dir, std::vector<std::string> devices)
      : config_(config),
        forwarded_(std::move(forwarded)),
        dir_(std::move(dir)),
        devices_(std::move(devices)),
        what_(fmt::format(
            "{} on a {}, {}, on {}", GossipAveraging(config.gossip), config.gossip.topology,
            GossipSchedule(config),
            devices_.front() == "auto" ? "the program's device" : PlacementSummary(devices_))) {}
  int processes() const override { return config_.nodes; }
  std::string ModelPath(int i) const {
    return (dir_ / ("node-" + std::to_string(i + 1) + ".model")).string();
  }
  std::vector<std::string> NodeArgs(int i) const override {
    std::vector<std::string> a = {"--mode",           "gossip",
                                  "--shard-index",    std::to_string(i),
                                  "--shard-count",    std::to_string(config_.nodes),
                                  "--expect-members", std::to_string(config_.nodes),
                                  "--save-model",     ModelPath(i),
                                  "--device",         devices_[static_cast<size_t>(i)]};
    // A library program has no budget of its own: the cluster's, even when it is the default
    // (and so not among the forwarded flags, which hold each key once).
    const bool given = std::any_of(forwarded_.begin(), forwarded_.end(),
                                   [](const std::string& f) { return f.starts_with("--epochs="); });
    if (!config_.exec.empty() && !given) {
      a.push_back(fmt::format("--epochs={}", config_.gossip.epochs));
    }
    a.insert(a.end(), forwarded_.begin(), forwarded_.end());
    return a;
  }
  void Observe(LocalCluster& cluster, double t, bool) override {
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
      for (const auto& id : c.progress["stragglers"]) flagged_.insert(id.get<uint64_t>());
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
      if (c.exited || c.down || stopped_late_.count(i) > 0 || !c.progress.is_object()) continue;
      const std::string activity = c.progress.value("activity", "training");
      if (!BeforeTraining(activity)) continue;
      bool others_done = true, any_finished = false;
      for (size_t j = 0; j < children.size(); ++j) {
        if (j == i) continue;
        others_done &= children[j].exited;
        any_finished |= children[j].final_report.is_object();
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
    static const nlohmann::json kNoProgress;  // null: every cell "-"
    // While it runs: the furthest node's estimate of the cluster's samples; once every node
    // ended: what their final reports count, the summary's own number.
    int64_t samples = 0, budget = 0, reported = 0;
    bool all_ended = true;
    for (const auto& c : cluster.children()) {
      all_ended &= c.exited;
      if (c.final_report.is_object()) reported += c.final_report.value("samples", int64_t{0});
      if (!c.progress.is_object()) continue;
      samples = std::max<int64_t>(samples, c.progress.value("cluster_samples", int64_t{0}));
      budget = std::max<int64_t>(budget, c.progress.value("budget_samples", int64_t{0}));
    }
    if (all_ended) samples = reported;
    std::string out =
        fmt::format("murmur local: {} nodes, {}, {:.1f} s", cluster.children().size(), what_, t);
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
      const nlohmann::json& p = c.progress;
      std::string flag = flagged_.count(i + 1) ? "yes" : "";
      if (!c.straggle.empty())
        flag += (flag.empty() ? "" : ", ") + std::string("injected ") + c.straggle;
      std::string state = c.final_report.is_object() ? "  done" : (c.exited ? "  (exited)" : "");
      if (state.empty() && !p.is_object()) state = "  starting";
      const std::string activity = p.is_object() ? p.value("activity", "training") : "";
      if (state.empty() && activity != "training") state = "  " + activity;
      // Before it trains a node has no step, loss or accuracy to show: only what it waits for.
      const bool waiting = BeforeTraining(activity);
      const nlohmann::json& shown = waiting ? kNoProgress : p;
      out += fmt::format("{:>4}  {:>6}  {:>5}  {:>7}  {:>8}  {:>8}  {:>5}  {:>6}  {}{}\n", i + 1,
                         Cell(shown, "step", "{:.0f}"), Cell(shown, "epoch", "{:.2f}"),
                         Cell(shown, "loss", "{:.4f}"), Cell(shown, "accuracy", "{:.4f}"),
                         Cell(shown, "bytes_sent", "{:.2f}", 1e-6), Cell(shown, "lag", "{:.0f}"),
                         Cell(shown, "wait_s", "{:.1f}"), flag, state);
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
  const std::vector<std::string> forwarded_;
  const std::filesystem::path dir_;
  const std::vector<std::string> devices_;  // where each node trains
  const std::string what_;
  std::set<uint64_t> flagged_;
  std::set<size_t> stopped_late_;  // nodes StopLateJoiners stopped                         // ids
                                   // some other node marked a straggler
  nlohmann::json timeline_ = nlohmann::json::array();  // [t, mean accuracy] at each new evaluation
};

// The report: accuracy per node, consensus over the saved models, bytes against ring all-reduce.
void GossipLocal::Print(const LocalCluster& cluster, double wall, int killed, bool ok,
                        const ReportOut& out) const {
  const size_t n = cluster.children().size();
  std::vector<double> accuracy;
  std::vector<int64_t> steps;
  std::vector<int64_t> rounds;        // gossip rounds each node ran (consensus control skips some)
  std::vector<int64_t> outer_rounds;  // outer optimizer steps each node took
  std::vector<double> train_s;        // each node's time from its start of training to its end
  uint64_t bytes = 0;
  int64_t local_steps = 0;
  std::string end_reason;
  std::vector<std::vector<float>> models;
  std::vector<double> own;            // each node's own model before the consensus finish
  std::vector<std::string> finishes;  // each node's finish outcome
  double cluster_accuracy = -1;       // of the model the averaged nodes adopted
  uint32_t contributors = 0;
  // The consensus finish's results by collector: more than one means the nodes ended on as many
  // models (their views disagreed on who collects); `missed` kept their own.
  struct FinishGroup {
    uint32_t contributors = 0;
    std::vector<size_t> nodes;
  };
  std::map<uint64_t, FinishGroup> finish_groups;
  std::vector<size_t> missed;
  std::vector<const nlohmann::json*> finals(n, nullptr);
  int64_t trained = 0, budget = 0;  // samples the finished nodes trained; the budget
  std::map<std::string, std::vector<size_t>> ends;  // end reason -> the node ids that gave it
  std::vector<size_t> never_trained;                // finished without a single step of their own
  for (size_t i = 0; i < n; ++i) {
    const Child& c = cluster.children()[i];
    if (!Finished(c)) continue;
    const nlohmann::json& f = c.final_report;
    finals[i] = &f;
    accuracy.push_back(f["accuracy"].is_null() ? 0.0 : f["accuracy"].get<double>());
    const nlohmann::json finish = f.value("finish", nlohmann::json::object());
    finishes.push_back(finish.value("outcome", "off"));
    const nlohmann::json own_accuracy = finish.value("own_accuracy", nlohmann::json());
    own.push_back(own_accuracy.is_number() ? own_accuracy.get<double>() : accuracy.back());
    if (finishes.back() == "averaged") {
      FinishGroup& g = finish_groups[finish.value("collector", uint64_t{0})];
      g.contributors = std::max(g.contributors, finish.value("contributors", uint32_t{0}));
      g.nodes.push_back(i + 1);
      // The cluster model is the average of the most members' models.
      if (g.contributors >= contributors) {
        contributors = g.contributors;
        cluster_accuracy = accuracy.back();
      }
    } else if (finishes.back() == "missed") {
      missed.push_back(i + 1);
    }
    steps.push_back(f["step"].get<int64_t>());
    rounds.push_back(f["rounds"].get<int64_t>());
    outer_rounds.push_back(f.value("outer_rounds", int64_t{0}));
    train_s.push_back(f["elapsed_s"].get<double>());
    bytes += f["bytes_sent"].get<uint64_t>();
    local_steps += f["local_steps"].get<int64_t>();
    if (end_reason.empty() && f["end"] != "peer") end_reason = f["end"].get<std::string>();
    trained += f.value("samples", int64_t{0});
    budget = std::max(budget, f.value("budget_samples", int64_t{0}));
    ends[f.value("end", std::string("?"))].push_back(i + 1);
    if (f.value("samples", int64_t{0}) == 0) never_trained.push_back(i + 1);
    if (auto m = ReadCheckpoint(ModelPath(static_cast<int>(i)));
        m.ok() && m->tensors.contains("params")) {
      models.push_back(std::move(m->tensors["params"]));
    }
  }
  double mean = 0;
  for (double a : accuracy) mean += a / static_cast<double>(std::max<size_t>(1, accuracy.size()));
  double consensus = -1, relative = -1;
  const size_t d = models.empty() ? 0 : models[0].size();
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
  const StepBreakdown breakdown = CollectBreakdown(finals);
  // Ring all-reduce moves 2 (N - 1) / N of the dense fp32 model per node per step.
  const double allreduce = static_cast<double>(local_steps) * 2.0 * static_cast<double>(n - 1) /
                           static_cast<double>(n) * 4.0 * static_cast<double>(d);
  {
    nlohmann::json j;
    j["mode"] = "gossip";
    j["nodes"] = n;
    j["devices"] = devices_;
    j["ok"] = ok;
    j["end"] = end_reason.empty() && !out.failure.empty() ? "failure" : end_reason;
    j["ends"] = ends;
    j["failure"] = out.failure.empty() ? nlohmann::json() : nlohmann::json(out.failure);
    j["samples_trained"] = trained;
    j["budget_samples"] = budget;
    j["never_trained"] = never_trained;
    nlohmann::json injected = nlohmann::json::array();
    for (const ReportOut::Crash& crash : out.crashes) {
      injected.push_back(
          {{"node", crash.index + 1},
           {"at_s", crash.at},
           {"restarted_at_s", crash.back < 0 ? nlohmann::json() : nlohmann::json(crash.back)}});
    }
    j["injected_crashes"] = injected;
    j["accuracy"] = accuracy;
    j["mean_accuracy"] = mean;
    j["steps"] = steps;
    j["rounds"] = rounds;
    j["outer_rounds"] = outer_rounds;
    j["local_steps_total"] = local_steps;
    j["train_s"] = train_s;
    j["phases"] = breakdown.nodes;
    j["train_phase_samples_per_s"] = breakdown.cluster_samples_per_s;
    j["samples_per_training_s"] = breakdown.cluster_samples_per_training_s;
    j["bytes_sent_total"] = bytes;
    j["allreduce_bytes"] = allreduce;
    j["fewer_bytes_than_allreduce"] = bytes > 0 ? allreduce / static_cast<double>(bytes) : 0.0;
    j["consensus_distance"] = consensus;
    j["relative_consensus_distance"] = relative;
    j["stragglers_flagged"] = flagged_;
    j["accuracy_timeline"] = timeline_;
    j["own_accuracy"] = own;
    j["finish"] = finishes;
    j["cluster_accuracy"] =
        cluster_accuracy >= 0 ? nlohmann::json(cluster_accuracy) : nlohmann::json();
    j["finish_contributors"] = contributors;
    nlohmann::json groups = nlohmann::json::array();
    for (const auto& [collector, g] : finish_groups) {
      groups.push_back(
          {{"collector", collector}, {"contributors", g.contributors}, {"nodes", g.nodes}});
    }
    j["finish_groups"] = groups;
    j["finish_missed"] = missed;
    j["finish_models"] = finish_groups.size() + missed.size();
    nlohmann::json crashes = nlohmann::json::array();
    for (const Child& c : cluster.children()) crashes.push_back(c.crashes);
    j["crashes"] = crashes;
    if (PrintJson(j, wall, killed, out)) return;
  }
  std::printf("%zu nodes, %s, %s\n", n, what_.c_str(),
              EndAccount(end_reason, ends, out.failure, trained, budget, wall,
                         ok ? n : accuracy.size(), n, !out.crashes.empty())
                  .c_str());
  for (const ReportOut::Crash& crash : out.crashes) {
    const nlohmann::json* f = finals[crash.index];
    std::printf(
        "  node %zu crashed at %.1f s (injected)%s\n", crash.index + 1, crash.at,
        crash.back < 0
            ? ", not restarted"
            : fmt::format(", restarted at {:.1f} s (down {:.1f} s), then {}", crash.back,
                          crash.back - crash.at,
                          f == nullptr ? "did not finish"
                                       : fmt::format("trained {} steps of its own ({} samples)",
                                                     f->value("local_steps", int64_t{0}),
                                                     f->value("samples", int64_t{0})))
                  .c_str());
  }
  if (!never_trained.empty()) {
    std::printf("  never trained (no step of its own; left out of the models below): node %s\n",
                JoinIds(never_trained).c_str());
  }
  if (std::adjacent_find(devices_.begin(), devices_.end(), std::not_equal_to<>()) !=
      devices_.end()) {
    std::printf("  devices:");
    for (size_t i = 0; i < devices_.size(); ++i)
      std::printf(" node %zu %s", i + 1, devices_[i].c_str());
    std::printf("\n");
  }
  const auto averaged =
      static_cast<size_t>(std::count(finishes.begin(), finishes.end(), "averaged"));
  std::vector<double> own_trained;  // the own models of the nodes that trained
  for (size_t k = 0, i = 0; i < n; ++i) {
    if (finals[i] == nullptr) continue;
    if (std::find(never_trained.begin(), never_trained.end(), i + 1) == never_trained.end()) {
      own_trained.push_back(own[k]);
    }
    ++k;
  }
  if (averaged > 0 && !own_trained.empty()) {
    const auto [lo, hi] = std::minmax_element(own_trained.begin(), own_trained.end());
    std::printf(
        "  cluster model (the average of %u nodes' models, adopted by %zu of %zu): test "
        "accuracy %.4f\n  before the consensus finish the nodes' own models: %.4f-%.4f\n",
        contributors, averaged, n, cluster_accuracy, *lo, *hi);
  }
  if (finish_groups.size() + missed.size() > 1) {
    std::printf("  the run ended on %zu models, not one:", finish_groups.size() + missed.size());
    for (const auto& [collector, g] : finish_groups) {
      std::printf(" node %llu's average of %u (adopted by nodes %s);",
                  static_cast<unsigned long long>(collector), g.contributors,
                  fmt::format("{}", fmt::join(g.nodes, ", ")).c_str());
    }
    if (!missed.empty()) {
      std::printf(" their own model (nodes %s, which missed the finish: see their logs);",
                  fmt::format("{}", fmt::join(missed, ", ")).c_str());
    }
    std::printf(
        "\n  (more than one average: the nodes' views disagreed on the collector, the "
        "lowest live id, when their training ended)\n");
  }
  if (averaged < accuracy.size()) {
    std::printf("  test accuracy per node%s:", averaged > 0 ? " (some missed the finish)" : "");
    for (double a : accuracy) std::printf(" %.4f", a);
    std::printf("\n  mean test accuracy %.4f\n", mean);
  }
  if (consensus >= 0) {
    std::printf(
        "  consensus distance%s (1/N) sum ||x_i - mean||^2 = %.3g (%.3g relative to ||mean||^2)\n",
        averaged > 0 ? " of the saved models after the finish" : "", consensus, relative);
  }
  if (!rounds.empty()) {
    const auto [rlo, rhi] = std::minmax_element(rounds.begin(), rounds.end());
    const auto [slo, shi] = std::minmax_element(steps.begin(), steps.end());
    auto span = [](int64_t lo, int64_t hi) {
      return lo == hi ? std::to_string(lo) : fmt::format("{}-{}", lo, hi);
    };
    std::printf("  gossip rounds per node %s in %s steps\n", span(*rlo, *rhi).c_str(),
                span(*slo, *shi).c_str());
  }
  if (local_steps > 0) {
    std::printf(
        "  bytes on the wire %.2f MB; dense ring all-reduce for the same steps %.1f MB (%.0fx "
        "more)\n",
        static_cast<double>(bytes) / 1e6, allreduce / 1e6,
        bytes > 0 ? allreduce / static_cast<double>(bytes) : 0.0);
  }
  PrintBreakdown(breakdown, stdout);
  std::printf("  %s\n", LogsLine(out).c_str());
}

}  // namespace

std::unique_ptr<LocalMode> MakeGossipLocal(const LocalConfig& config,
                                           std::vector<std::string> forwarded,
                                           std::filesystem::path dir,
                                           std::vector<std::string> devices) {
  return std::make_unique<GossipLocal>(config, std::move(forwarded), std::move(dir),
                                       std::move(devices));
}

}  // namespace murmur::node
