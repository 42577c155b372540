// `murmur local` for the synchronous modes (coded-tree, tree, gc, ring, ps): the processes of the
// tree or ring, their table (role, rank, iterations, compute and injected time, late answers)
// and the report (loss, accuracy, iteration times).

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <tuple>
#include <vector>

#include "cli/local_mode.h"
#include "cli/placement.h"
#include "gossip/sync_node.h"
#include "node/driver/sync_driver.h"

namespace murmur::node {
namespace {

using gossip::Mode;

class CodedLocal : public LocalMode {
 public:
  CodedLocal(const LocalConfig& config, gossip::SyncPlan plan, NodeKeys forwarded,
             std::vector<std::string> devices)
      : config_(config),
        plan_(std::move(plan)),
        forwarded_(std::move(forwarded)),
        devices_(std::move(devices)) {
    what_ = std::string(gossip::ModeName(config.mode));
    if (plan_.code) what_ += ": " + plan_.code->ToString();
    if (config.mode == Mode::kPs) {
      what_ += fmt::format(" ({}), {} server{}", gossip::PsDescription(plan_.ps), plan_.ps.servers,
                           plan_.ps.servers == 1 ? "" : "s");
      if (config.gossip.compress) {
        what_ += ", pushes " + coding::CompressorSpec(*config.gossip.compress);
      }
    }
    what_ += fmt::format(", N = {} workers", plan_.workers);
    if (config.mode != Mode::kGc && config.mode != Mode::kRing && config.mode != Mode::kPs) {
      what_ += fmt::format(" (n = {}, L = {})", config.coded.n, config.coded.L);
    }
    what_ += ", on " + PlacementSummary(devices_);
  }
  int processes() const override { return static_cast<int>(plan_.processes); }
  NodeKeys KeysOf(int i) const override {
    NodeKeys a = forwarded_;
    a["mode"] = gossip::ModeName(config_.mode);
    a["device"] = devices_[static_cast<size_t>(i)];
    return a;
  }
  std::string Table(const LocalCluster& cluster, double t) const override {
    const auto& children = cluster.children();
    std::string out =
        fmt::format("murmur local: {} processes, {}, {:.1f} s\n", children.size(), what_, t);
    if (!children.empty() && children[0].coded.has_value()) {
      const CodedReport& head = *children[0].coded;
      const CodedProgress& h = head.progress;
      out += fmt::format("  iterations {}, loss {} (at {}), iteration {} ms mean, {} ms p95\n",
                         h.iteration, Number(h.loss, "{:.5f}"), h.evaluated_at,
                         Number(head.iteration_ms_mean, "{:.1f}"),
                         Number(head.iteration_ms_p95, "{:.1f}"));
      if (config_.mode == Mode::kPs && h.mode == Mode::kPs) {
        out += fmt::format(
            "  server 0: {} gradients applied, staleness {} mean, {} max, {} replies "
            "held by the SSP bound\n",
            h.stats.applied, Number(StalenessMean(h), "{:.2f}"), h.stats.staleness_max,
            h.stats.gated);
      }
    }
    out += fmt::format(
        "{:>4}  {:>4}  {:<6}  {:>6}  {:>7}  {:>9}  {:>8}  {:>7}  {:>6}  {:>7}  {:>7}  {}\n", "node",
        "rank", "role", "iters", "samples", "compute s", "inject s", "sent MB", "late", "ignored",
        "waiting", "injection");
    for (size_t i = 0; i < children.size(); ++i) {
      const Child& c = children[i];
      std::string state = c.coded_final.has_value() ? "  done" : (c.exited ? "  (exited)" : "");
      if (!c.coded.has_value()) {
        if (state.empty()) state = "  starting";
        out += fmt::format(
            "{:>4}  {:>4}  {:<6}  {:>6}  {:>7}  {:>9}  {:>8}  {:>7}  {:>6}  {:>7}  "
            "{:>7}  {}{}\n",
            i + 1, "-", "", "-", "-", "-", "-", "-", "-", "-", "-", c.straggle, state);
        continue;
      }
      const CodedProgress& p = c.coded->progress;
      out += fmt::format(
          "{:>4}  {:>4}  {:<6}  {:>6}  {:>7}  {:>9.2f}  {:>8.2f}  {:>7.2f}  {:>6}  {:>7}  {:>7}  "
          "{}{}\n",
          i + 1, p.rank, p.role, p.iteration, p.own_samples, p.compute_s, p.injected_s,
          static_cast<double>(p.bytes_sent) * 1e-6, p.stats.late_dropped, p.stats.children_ignored,
          p.stats.undecodable_waits, c.straggle, state);
    }
    return out;
  }
  bool Succeeded(const LocalCluster& cluster, int killed) const override {
    return killed == 0 &&
           std::all_of(cluster.children().begin(), cluster.children().end(), Finished);
  }
  void Print(const LocalCluster& cluster, double wall, int killed, bool ok,
             const ReportOut& out) const override {
    const RunFacts facts = Gather(cluster);
    if (PrintJson(Json(facts, ok, out.failure), wall, killed, out)) return;
    std::printf("%s, %zu processes, %.1f s%s\n", what_.c_str(), cluster.children().size(), wall,
                ok ? "" : " (not every node finished cleanly)");
    if (!out.failure.empty()) std::printf("  failure: %s\n", out.failure.c_str());
    if (facts.head.has_value()) {
      const CodedProgress& h = *facts.head;
      // The digits a reader compares (the JSON keeps every digit).
      // An async or SSP server counts every worker's gradient as an update (N per iteration).
      const bool per_gradient = config_.mode == Mode::kPs && plan_.ps.sync != gossip::PsSync::kFull;
      std::printf("  %llu %s; final training loss %s, test accuracy %s\n",
                  static_cast<unsigned long long>(h.iteration),
                  per_gradient ? "updates, one per gradient" : "iterations",
                  Number(h.loss, "{:.5f}").c_str(), Number(h.accuracy, "{:.4f}").c_str());
      std::printf("  iteration time %.1f ms mean, %.1f ms p95\n", facts.mean_ms, facts.p95_ms);
      if (config_.mode == Mode::kPs && h.mode == Mode::kPs) {
        std::printf(
            "  server 0 applied %llu gradients, staleness %s mean, %llu max; %llu replies held "
            "by the SSP bound\n",
            static_cast<unsigned long long>(h.stats.applied),
            Number(StalenessMean(h), "{:.2f}").c_str(),
            static_cast<unsigned long long>(h.stats.staleness_max),
            static_cast<unsigned long long>(h.stats.gated));
      }
    }
    std::printf("  sent %.1f MB in all (every process, every message)\n",
                static_cast<double>(facts.sent_total) / 1e6);
    std::printf("  late answers dropped per node:");
    for (uint64_t l : facts.late) std::printf(" %llu", static_cast<unsigned long long>(l));
    std::printf("\n  %s\n", LogsLine(out).c_str());
  }

 private:
  // `v` in `format`, "-" when it is not a number (no evaluation yet, or a regression task).
  static std::string Number(double v, const char* format) {
    return std::isfinite(v) ? fmt::format(fmt::runtime(format), v) : "-";
  }
  static double StalenessMean(const CodedProgress& p) {
    return p.stats.applied > 0
               ? static_cast<double>(p.stats.staleness_sum) / static_cast<double>(p.stats.applied)
               : 0.0;
  }
  static nlohmann::json NumberJson(double v) {
    return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
  }

  // What the processes reported at the end: the root's (rank 0's) report, and per process the
  // late answers dropped and the bytes sent.
  struct RunFacts {
    std::optional<CodedProgress> head;
    std::vector<uint64_t> late, sent;
    uint64_t rejected = 0, sent_total = 0;
    std::vector<double> times;
    double mean_ms = 0, p95_ms = 0;
  };

  static RunFacts Gather(const LocalCluster& cluster) {
    RunFacts f;
    for (const Child& c : cluster.children()) {
      f.late.push_back(Finished(c) ? c.coded_final->progress.stats.late_dropped : 0);
      // What each process put on the wire (every message kind), as far as it reported.
      const std::optional<CodedReport>& last = c.coded_final ? c.coded_final : c.coded;
      const uint64_t bytes = last.has_value() ? last->progress.bytes_sent : 0;
      f.sent.push_back(bytes);
      f.sent_total += bytes;
      if (Finished(c)) f.rejected += c.coded_final->progress.rejected_messages;
    }
    if (cluster.children()[0].coded_final.has_value()) {
      f.head = cluster.children()[0].coded_final->progress;
      f.times = f.head->iteration_ms;
    }
    std::tie(f.mean_ms, f.p95_ms) = MeanAndP95(f.times);
    return f;
  }

  nlohmann::json Json(const RunFacts& f, bool ok, const std::string& failure) const {
    const std::optional<CodedProgress>& h = f.head;
    const nlohmann::json none;
    nlohmann::json j;
    j["mode"] = std::string(gossip::ModeName(config_.mode));
    j["n"] = config_.coded.n;
    j["L"] = config_.coded.L;
    j["s"] = config_.mode == Mode::kTree || config_.mode == Mode::kRing ? 0 : config_.coded.s;
    j["workers"] = plan_.workers;
    j["processes"] = plan_.processes;
    j["code"] = plan_.code ? nlohmann::json(plan_.code->ToString()) : nlohmann::json(nullptr);
    j["ok"] = ok;
    j["failure"] = failure.empty() ? none : nlohmann::json(failure);
    j["iterations"] = h ? nlohmann::json(h->iteration) : none;
    j["loss"] = h ? NumberJson(h->loss) : none;
    j["accuracy"] = h ? NumberJson(h->accuracy) : none;
    j["iteration_ms_mean"] = f.mean_ms;
    j["iteration_ms_p95"] = f.p95_ms;
    j["iteration_ms"] = f.times;
    j["late_dropped"] = f.late;
    j["rejected"] = f.rejected;
    j["bytes_sent"] = f.sent;
    j["bytes_sent_total"] = f.sent_total;
    if (config_.mode == Mode::kPs) {
      j["servers"] = plan_.ps.servers;
      j["ps_sync"] = gossip::PsDescription(plan_.ps);
      const bool ps = h && h->mode == Mode::kPs;
      j["applied"] = ps ? nlohmann::json(h->stats.applied) : none;
      j["staleness_mean"] = ps ? nlohmann::json(StalenessMean(*h)) : none;
      j["staleness_max"] = ps ? nlohmann::json(h->stats.staleness_max) : none;
      j["gated"] = ps ? nlohmann::json(h->stats.gated) : none;
    }
    return j;
  }

  const LocalConfig& config_;
  const gossip::SyncPlan plan_;
  const NodeKeys forwarded_;
  const std::vector<std::string> devices_;
  std::string what_;
};

}  // namespace

std::unique_ptr<LocalMode> MakeCodedLocal(const LocalConfig& config, gossip::SyncPlan plan,
                                          NodeKeys forwarded,
                                          std::vector<std::string> devices) {
  return std::make_unique<CodedLocal>(config, std::move(plan), std::move(forwarded),
                                      std::move(devices));
}

}  // namespace murmur::node
