#include "cli/local_gossip_summary.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cli/local_summary.h"
#include "node/driver/memory_table.h"
#include "node/train/checkpoint.h"

namespace murmur::node {
namespace {

// One finished node's final report into the summary.
void AddFinished(GossipRunSummary& s, size_t i, const GossipProgress& f) {
  s.finals[i] = &f;
  s.accuracy.push_back(f.accuracy >= 0 ? f.accuracy : -1.0);
  s.finishes.push_back(f.finish.empty() ? "off" : f.finish);
  s.own.push_back(f.own_accuracy >= 0 ? f.own_accuracy : s.accuracy.back());
  s.loss.push_back(f.have_loss ? f.loss : std::nan(""));
  s.perplexity.push_back(f.perplexity);
  if (s.finishes.back() == "averaged") {
    GossipRunSummary::FinishGroup& g = s.finish_groups[f.finish_collector];
    g.contributors = std::max(g.contributors, f.finish_contributors);
    g.nodes.push_back(i + 1);
    // The cluster model is the average of the most members' models.
    if (g.contributors >= s.contributors) {
      s.contributors = g.contributors;
      s.cluster_accuracy = s.accuracy.back();
    }
  } else if (s.finishes.back() == "missed") {
    s.missed.push_back(i + 1);
  }
  s.steps.push_back(static_cast<int64_t>(f.step));
  s.rounds.push_back(static_cast<int64_t>(f.rounds));
  s.outer_rounds.push_back(static_cast<int64_t>(f.outer_rounds));
  s.clipped.push_back(static_cast<int64_t>(f.clipped_terms));
  for (const auto& [peer, n] : f.far_clipped) {
    if (2 * n > f.rounds) s.pulled_far[peer][i + 1] = n;
  }
  s.train_s.push_back(f.elapsed_s);
  s.bytes += f.bytes_sent;
  s.local_steps += f.local_steps;
  if (s.end_reason.empty() && f.end_reason != "peer") s.end_reason = f.end_reason;
  s.trained += f.samples;
  s.budget = std::max(s.budget, f.budget_samples);
  s.ends[f.end_reason].push_back(i + 1);
  if (f.samples == 0) s.never_trained.push_back(i + 1);
}

// (1/N) Σ ||x_i − mean||² of the models, and that over ||mean||².
void SetConsensus(GossipRunSummary& s, const std::vector<std::vector<float>>& models) {
  if (models.empty()) return;
  const size_t d = models[0].size();
  std::vector<double> avg(d, 0.0);
  for (const auto& m : models) {
    for (size_t k = 0; k < d; ++k) avg[k] += m[k] / static_cast<double>(models.size());
  }
  double dist = 0, norm = 0;
  for (const auto& m : models) {
    for (size_t k = 0; k < d; ++k) dist += (m[k] - avg[k]) * (m[k] - avg[k]);
  }
  for (double v : avg) norm += v * v;
  s.consensus = dist / static_cast<double>(models.size());
  s.relative_consensus = norm > 0 ? s.consensus / norm : 0;
}

nlohmann::json FinishJson(const GossipRunSummary& s) {
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& [collector, g] : s.finish_groups) {
    groups.push_back(
        {{"collector", collector}, {"contributors", g.contributors}, {"nodes", g.nodes}});
  }
  return groups;
}

// Injected crashes, nodes that never trained, and the devices when they differ.
void PrintEvents(const GossipRunSummary& s, const GossipRunContext& context, const ReportOut& out) {
  for (const ReportOut::Crash& crash : out.crashes) {
    const GossipProgress* f = s.finals[crash.index];
    std::printf(
        "  node %zu crashed at %.1f s (injected)%s\n", crash.index + 1, crash.at,
        crash.back < 0
            ? ", not restarted"
            : fmt::format(", restarted at {:.1f} s (down {:.1f} s), then {}", crash.back,
                          crash.back - crash.at,
                          f == nullptr ? "did not finish"
                                       : fmt::format("trained {} steps of its own ({} samples)",
                                                     f->local_steps, f->samples))
                  .c_str());
  }
  if (!s.never_trained.empty()) {
    std::printf("  never trained (no step of its own; left out of the models below): node %s\n",
                JoinIds(s.never_trained).c_str());
  }
  const std::vector<std::string>& devices = context.devices;
  if (std::adjacent_find(devices.begin(), devices.end(), std::not_equal_to<>()) != devices.end()) {
    std::printf("  devices:");
    for (size_t i = 0; i < devices.size(); ++i) {
      std::printf(" node %zu %s", i + 1, devices[i].c_str());
    }
    std::printf("\n");
  }
}

// "(lo-hi)" of the values of `v` that `keep` keeps, "" when none.
template <typename Keep>
std::string Range(const std::vector<double>& v, const char* format, Keep keep) {
  std::vector<double> kept;
  for (double x : v) {
    if (keep(x)) kept.push_back(x);
  }
  if (kept.empty()) return "";
  const auto [lo, hi] = std::minmax_element(kept.begin(), kept.end());
  return *lo == *hi ? fmt::format(fmt::runtime(format), *lo)
                    : fmt::format(fmt::runtime(format), *lo) + "-" +
                          fmt::format(fmt::runtime(format), *hi);
}

// The figure a run without an evaluation has: the steps' loss (a running mean of each node's
// recent batches at its end), and the perplexity a language model's loss gives.
std::string LossAccount(const GossipRunSummary& s) {
  const std::string loss = Range(s.loss, "{:.4f}", [](double x) { return std::isfinite(x); });
  if (loss.empty()) return "no loss either (the program's steps gave none)";
  std::string out = "the nodes' training loss at their end " + loss;
  const std::string ppl = Range(s.perplexity, "{:.2f}", [](double x) { return x >= 0; });
  if (!ppl.empty()) out += ", perplexity " + ppl;
  return out + " (of their own recent batches, before the finish)";
}

// The consensus finish: the cluster model, or the several models the run ended on.
void PrintFinish(const GossipRunSummary& s, size_t averaged) {
  std::vector<double> own_trained;  // the own models of the nodes that trained
  for (size_t k = 0, i = 0; i < s.nodes; ++i) {
    if (s.finals[i] == nullptr) continue;
    if (std::find(s.never_trained.begin(), s.never_trained.end(), i + 1) == s.never_trained.end()) {
      own_trained.push_back(s.own[k]);
    }
    ++k;
  }
  if (averaged > 0 && s.cluster_accuracy < 0) {
    std::printf(
        "  cluster model (the average of %u nodes' models, adopted by %zu of %zu): not "
        "evaluated (no evaluate given); %s\n",
        s.contributors, averaged, s.nodes, LossAccount(s).c_str());
  } else if (averaged > 0 && !own_trained.empty()) {
    const auto [lo, hi] = std::minmax_element(own_trained.begin(), own_trained.end());
    std::printf(
        "  cluster model (the average of %u nodes' models, adopted by %zu of %zu): test "
        "accuracy %.4f\n  before the consensus finish the nodes' own models (on the periodic "
        "evaluations' rows): %.4f-%.4f\n",
        s.contributors, averaged, s.nodes, s.cluster_accuracy, *lo, *hi);
  }
  if (s.finish_groups.size() + s.missed.size() > 1) {
    std::printf("  the run ended on %zu models, not one:",
                s.finish_groups.size() + s.missed.size());
    for (const auto& [collector, g] : s.finish_groups) {
      std::printf(" node %llu's average of %u (adopted by nodes %s);",
                  static_cast<unsigned long long>(collector), g.contributors,
                  fmt::format("{}", fmt::join(g.nodes, ", ")).c_str());
    }
    if (!s.missed.empty()) {
      std::printf(" their own model (nodes %s, which missed the finish: see their logs);",
                  fmt::format("{}", fmt::join(s.missed, ", ")).c_str());
    }
    std::printf(
        "\n  (more than one average: the nodes' views disagreed on the collector, the "
        "lowest live id, when their training ended)\n");
  }
}

// Accuracy per node (when some missed the finish), consensus, rounds and bytes.
void PrintModelsAndTraffic(const GossipRunSummary& s, size_t averaged) {
  if (averaged < s.accuracy.size()) {
    std::printf("  test accuracy per node%s:", averaged > 0 ? " (some missed the finish)" : "");
    for (double a : s.accuracy) std::printf(a >= 0 ? " %.4f" : " -", a);
    if (s.mean_accuracy >= 0) {
      std::printf("\n  mean test accuracy %.4f\n", s.mean_accuracy);
    } else {
      std::printf("\n  not evaluated (no evaluate given); %s\n", LossAccount(s).c_str());
    }
  }
  if (s.consensus >= 0) {
    std::printf(
        "  consensus distance%s (1/N) sum ||x_i - mean||^2 = %.3g (%.3g relative to ||mean||^2)\n",
        averaged > 0 ? " of the saved models after the finish" : "", s.consensus,
        s.relative_consensus);
  }
  if (!s.rounds.empty()) {
    const auto [rlo, rhi] = std::minmax_element(s.rounds.begin(), s.rounds.end());
    const auto [slo, shi] = std::minmax_element(s.steps.begin(), s.steps.end());
    auto span = [](int64_t lo, int64_t hi) {
      return lo == hi ? std::to_string(lo) : fmt::format("{}-{}", lo, hi);
    };
    std::printf("  gossip rounds per node %s in %s steps\n", span(*rlo, *rhi).c_str(),
                span(*slo, *shi).c_str());
  }
  for (const auto& [peer, by] : s.pulled_far) {
    std::string at;
    for (const auto& [node, n] : by) {
      at += fmt::format("{}{} rounds at node {}", at.empty() ? "" : ", ", n, node);
    }
    std::printf(
        "  robust mixing: node %s pulled far from the others (its terms clipped to under "
        "a quarter in %s)\n",
        peer.c_str(), at.c_str());
  }
  if (s.local_steps > 0) {
    std::printf(
        "  bytes on the wire %.2f MB; dense ring all-reduce for the same steps %.1f MB (%.0fx "
        "more)\n",
        static_cast<double>(s.bytes) / 1e6, s.allreduce_bytes / 1e6,
        s.bytes > 0 ? s.allreduce_bytes / static_cast<double>(s.bytes) : 0.0);
  }
}

}  // namespace

GossipRunSummary SummarizeGossipRun(const LocalCluster& cluster,
                                    const std::function<std::string(size_t)>& model_path) {
  GossipRunSummary s;
  s.nodes = cluster.children().size();
  s.finals.assign(s.nodes, nullptr);
  std::vector<std::vector<float>> models;
  for (size_t i = 0; i < s.nodes; ++i) {
    const Child& c = cluster.children()[i];
    if (!Finished(c)) continue;
    AddFinished(s, i, *c.gossip_final);
    if (auto m = ReadCheckpoint(model_path(i)); m.ok() && m->tensors.contains("params")) {
      models.push_back(std::move(m->tensors["params"]));
    }
  }
  // Over the nodes that were evaluated; -1 when none was (no evaluate given).
  int evaluated = 0;
  double sum = 0;
  for (double a : s.accuracy) {
    if (a < 0) continue;
    sum += a;
    ++evaluated;
  }
  s.mean_accuracy = evaluated > 0 ? sum / evaluated : -1.0;
  SetConsensus(s, models);
  s.breakdown = CollectBreakdown(s.finals);
  // Ring all-reduce moves 2 (N - 1) / N of the dense fp32 model per node per step.
  const size_t d = models.empty() ? 0 : models[0].size();
  s.allreduce_bytes = static_cast<double>(s.local_steps) * 2.0 * static_cast<double>(s.nodes - 1) /
                      static_cast<double>(s.nodes) * 4.0 * static_cast<double>(d);
  return s;
}

nlohmann::json GossipRunJson(const GossipRunSummary& s, const GossipRunContext& context,
                             const LocalCluster& cluster, bool ok, const ReportOut& out) {
  nlohmann::json j;
  j["mode"] = "gossip";
  j["nodes"] = s.nodes;
  j["devices"] = context.devices;
  j["ok"] = ok;
  j["end"] = s.end_reason.empty() && !out.failure.empty() ? "failure" : s.end_reason;
  j["ends"] = s.ends;
  j["failure"] = out.failure.empty() ? nlohmann::json() : nlohmann::json(out.failure);
  j["samples_trained"] = s.trained;
  j["budget_samples"] = s.budget;
  j["never_trained"] = s.never_trained;
  nlohmann::json injected = nlohmann::json::array();
  for (const ReportOut::Crash& crash : out.crashes) {
    injected.push_back(
        {{"node", crash.index + 1},
         {"at_s", crash.at},
         {"restarted_at_s", crash.back < 0 ? nlohmann::json() : nlohmann::json(crash.back)}});
  }
  j["injected_crashes"] = injected;
  // null where a node was not evaluated (a program without an evaluate), never 0.
  auto or_null = [](const std::vector<double>& v, auto valid) {
    nlohmann::json out = nlohmann::json::array();
    for (double x : v) out.push_back(valid(x) ? nlohmann::json(x) : nlohmann::json());
    return out;
  };
  auto evaluated = [](double x) { return x >= 0; };
  j["accuracy"] = or_null(s.accuracy, evaluated);
  j["mean_accuracy"] = s.mean_accuracy >= 0 ? nlohmann::json(s.mean_accuracy) : nlohmann::json();
  j["loss"] = or_null(s.loss, [](double x) { return std::isfinite(x); });
  j["perplexity"] = or_null(s.perplexity, evaluated);
  j["steps"] = s.steps;
  j["rounds"] = s.rounds;
  j["outer_rounds"] = s.outer_rounds;
  j["clipped"] = s.clipped;
  nlohmann::json pulled = nlohmann::json::object();
  for (const auto& [peer, by] : s.pulled_far) {
    for (const auto& [node, n] : by) pulled[peer][std::to_string(node)] = n;
  }
  j["pulled_far"] = pulled;
  j["local_steps_total"] = s.local_steps;
  j["train_s"] = s.train_s;
  j["phases"] = s.breakdown.nodes;
  j["memory"] = MemoryJson(s.finals);
  j["train_phase_samples_per_s"] = s.breakdown.cluster_samples_per_s;
  j["samples_per_training_s"] = s.breakdown.cluster_samples_per_training_s;
  j["bytes_sent_total"] = s.bytes;
  j["allreduce_bytes"] = s.allreduce_bytes;
  j["fewer_bytes_than_allreduce"] =
      s.bytes > 0 ? s.allreduce_bytes / static_cast<double>(s.bytes) : 0.0;
  j["consensus_distance"] = s.consensus;
  j["relative_consensus_distance"] = s.relative_consensus;
  j["stragglers_flagged"] = context.flagged;
  j["accuracy_timeline"] = context.timeline;
  j["own_accuracy"] = or_null(s.own, evaluated);
  j["finish"] = s.finishes;
  j["cluster_accuracy"] =
      s.cluster_accuracy >= 0 ? nlohmann::json(s.cluster_accuracy) : nlohmann::json();
  j["finish_contributors"] = s.contributors;
  j["finish_groups"] = FinishJson(s);
  j["finish_missed"] = s.missed;
  j["finish_models"] = s.finish_groups.size() + s.missed.size();
  nlohmann::json crashes = nlohmann::json::array();
  for (const Child& c : cluster.children()) crashes.push_back(c.crashes);
  j["crashes"] = crashes;
  j["interrupted_at_s"] =
      out.interrupted_at >= 0 ? nlohmann::json(out.interrupted_at) : nlohmann::json();
  return j;
}

namespace {

// A stopped run's account: when, and what each process completed by its final report.
std::string Interrupted(const GossipRunSummary& s, const ReportOut& out) {
  std::string each;
  for (size_t i = 0; i < s.finals.size(); ++i) {
    const GossipProgress* f = s.finals[i];
    each += fmt::format("{}node {} ", each.empty() ? "" : "; ", i + 1);
    each += f == nullptr ? std::string("no final report (killed, or it never reported)")
                         : fmt::format("{} steps, {} samples", f->local_steps, f->samples);
  }
  return fmt::format("interrupted at {:.1f} s (Ctrl-C or a stop): {}", out.interrupted_at, each);
}

}  // namespace

void PrintGossipRun(const GossipRunSummary& s, const GossipRunContext& context, double wall,
                    bool ok, const ReportOut& out) {
  std::printf("%zu nodes, %s, %s\n", s.nodes, context.what.c_str(),
              EndAccount(s.end_reason, s.ends, out.failure, s.trained, s.budget, wall,
                         ok ? s.nodes : s.accuracy.size(), s.nodes, !out.crashes.empty())
                  .c_str());
  if (out.interrupted_at >= 0) std::printf("  %s\n", Interrupted(s, out).c_str());
  PrintEvents(s, context, out);
  const auto averaged =
      static_cast<size_t>(std::count(s.finishes.begin(), s.finishes.end(), "averaged"));
  PrintFinish(s, averaged);
  PrintModelsAndTraffic(s, averaged);
  PrintBreakdown(s.breakdown, stdout);
  PrintMemoryTable(s.finals, stdout);
  std::printf("  %s\n", LogsLine(out).c_str());
}

}  // namespace murmur::node
