// `murmur local` for the synchronous modes (coded-tree, tree, gc, ring, ps): the processes of the
// tree or ring, their table (role, rank, iterations, compute and injected time, late answers)
// and the report (loss, accuracy, iteration times).

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/local_mode.h"
#include "cli/placement.h"
#include "gossip/sync_node.h"
#include "node/driver/sync_driver.h"

namespace murmur::node {
namespace {

using gossip::Mode;

class CodedLocal : public LocalMode {
 public:
  CodedLocal(const LocalConfig& config, gossip::SyncPlan plan, std::vector<std::string> forwarded,
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
  std::vector<std::string> NodeArgs(int i) const override {
    std::vector<std::string> a = {"--mode", std::string(gossip::ModeName(config_.mode)), "--device",
                                  devices_[static_cast<size_t>(i)]};
    a.insert(a.end(), forwarded_.begin(), forwarded_.end());
    return a;
  }
  std::string Table(const LocalCluster& cluster, double t) const override {
    const auto& children = cluster.children();
    std::string out =
        fmt::format("murmur local: {} processes, {}, {:.1f} s\n", children.size(), what_, t);
    const nlohmann::json& head = children.empty() ? nlohmann::json() : children[0].progress;
    if (head.is_object()) {
      out += fmt::format("  iterations {}, loss {} (at {}), iteration {} ms mean, {} ms p95\n",
                         Cell(head, "iteration", "{:.0f}"), Cell(head, "loss", "{:.5f}"),
                         Cell(head, "evaluated_at", "{:.0f}"),
                         Cell(head, "iteration_ms_mean", "{:.1f}"),
                         Cell(head, "iteration_ms_p95", "{:.1f}"));
      if (config_.mode == Mode::kPs && head.contains("applied")) {
        out += fmt::format(
            "  server 0: {} gradients applied, staleness {} mean, {} max, {} replies "
            "held by the SSP bound\n",
            Cell(head, "applied", "{:.0f}"), Cell(head, "staleness_mean", "{:.2f}"),
            Cell(head, "staleness_max", "{:.0f}"), Cell(head, "gated", "{:.0f}"));
      }
    }
    out += fmt::format(
        "{:>4}  {:>4}  {:<6}  {:>6}  {:>7}  {:>9}  {:>8}  {:>7}  {:>6}  {:>7}  {:>7}  {}\n", "node",
        "rank", "role", "iters", "samples", "compute s", "inject s", "sent MB", "late", "ignored",
        "waiting", "injection");
    for (size_t i = 0; i < children.size(); ++i) {
      const Child& c = children[i];
      const nlohmann::json& p = c.progress;
      std::string state = c.final_report.is_object() ? "  done" : (c.exited ? "  (exited)" : "");
      if (state.empty() && !p.is_object()) state = "  starting";
      if (state.empty() && p.value("activity", "training") != "training") {
        state = "  " + p.value("activity", "");
      }
      out += fmt::format(
          "{:>4}  {:>4}  {:<6}  {:>6}  {:>7}  {:>9}  {:>8}  {:>7}  {:>6}  {:>7}  {:>7}  {}{}\n",
          i + 1, Cell(p, "rank", "{:.0f}"), p.is_object() ? p.value("role", "") : "",
          Cell(p, "iteration", "{:.0f}"), Cell(p, "own_samples", "{:.0f}"),
          Cell(p, "compute_s", "{:.2f}"), Cell(p, "injected_s", "{:.2f}"),
          Cell(p, "bytes_sent", "{:.2f}", 1e-6), Cell(p, "late_dropped", "{:.0f}"),
          Cell(p, "children_ignored", "{:.0f}"), Cell(p, "undecodable_waits", "{:.0f}"), c.straggle,
          state);
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
    if (PrintJson(Json(facts, ok), wall, killed, out)) return;
    std::printf("%s, %zu processes, %.1f s%s\n", what_.c_str(), cluster.children().size(), wall,
                ok ? "" : " (not every node finished cleanly)");
    const nlohmann::json& head = facts.head;
    if (head.is_object()) {
      // The digits a reader compares (the JSON keeps every digit).
      // An async or SSP server counts every worker's gradient as an update (N per iteration).
      const bool per_gradient = config_.mode == Mode::kPs && plan_.ps.sync != gossip::PsSync::kFull;
      std::printf("  %s %s; final training loss %s, test accuracy %s\n",
                  head["iteration"].dump().c_str(),
                  per_gradient ? "updates, one per gradient" : "iterations",
                  Cell(head, "loss", "{:.5f}").c_str(), Cell(head, "accuracy", "{:.4f}").c_str());
      std::printf("  iteration time %.1f ms mean, %.1f ms p95\n", facts.mean_ms, facts.p95_ms);
      if (config_.mode == Mode::kPs && head.contains("applied")) {
        std::printf(
            "  server 0 applied %s gradients, staleness %s mean, %s max; %s replies held "
            "by the SSP bound\n",
            head["applied"].dump().c_str(), Cell(head, "staleness_mean", "{:.2f}").c_str(),
            head["staleness_max"].dump().c_str(), head["gated"].dump().c_str());
      }
    }
    std::printf("  sent %.1f MB in all (every process, every message)\n",
                static_cast<double>(facts.sent_total) / 1e6);
    std::printf("  late answers dropped per node:");
    for (const auto& l : facts.late) std::printf(" %s", l.dump().c_str());
    std::printf("\n  %s\n", LogsLine(out).c_str());
  }

 private:
  // What the processes reported at the end: the root's (rank 0's) report, and per process the
  // late answers dropped and the bytes sent.
  struct RunFacts {
    nlohmann::json head;
    nlohmann::json late = nlohmann::json::array(), sent = nlohmann::json::array();
    uint64_t rejected = 0, sent_total = 0;
    std::vector<double> times;
    double mean_ms = 0, p95_ms = 0;
  };

  static RunFacts Gather(const LocalCluster& cluster) {
    RunFacts f;
    for (const Child& c : cluster.children()) {
      f.late.push_back(Finished(c) ? c.final_report.value("late_dropped", uint64_t{0})
                                   : uint64_t{0});
      // What each process put on the wire (every message kind), as far as it reported.
      const nlohmann::json& last = c.final_report.is_object() ? c.final_report : c.progress;
      const uint64_t bytes = last.is_object() ? last.value("bytes_sent", uint64_t{0}) : 0;
      f.sent.push_back(bytes);
      f.sent_total += bytes;
      if (Finished(c)) f.rejected += c.final_report.value("rejected", uint64_t{0});
    }
    f.head = cluster.children()[0].final_report;
    if (f.head.is_object()) f.times = f.head["iteration_ms"].get<std::vector<double>>();
    std::tie(f.mean_ms, f.p95_ms) = MeanAndP95(f.times);
    return f;
  }

  nlohmann::json Json(const RunFacts& f, bool ok) const {
    const bool have = f.head.is_object();
    auto from_head = [&](const char* key) {
      return have && f.head.contains(key) ? f.head[key] : nlohmann::json(nullptr);
    };
    nlohmann::json j;
    j["mode"] = std::string(gossip::ModeName(config_.mode));
    j["n"] = config_.coded.n;
    j["L"] = config_.coded.L;
    j["s"] = config_.mode == Mode::kTree || config_.mode == Mode::kRing ? 0 : config_.coded.s;
    j["workers"] = plan_.workers;
    j["processes"] = plan_.processes;
    j["code"] = plan_.code ? nlohmann::json(plan_.code->ToString()) : nlohmann::json(nullptr);
    j["ok"] = ok;
    j["iterations"] = from_head("iteration");
    j["loss"] = from_head("loss");
    j["accuracy"] = from_head("accuracy");
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
      for (const char* key : {"applied", "staleness_mean", "staleness_max", "gated"}) {
        j[key] = from_head(key);
      }
    }
    return j;
  }

  const LocalConfig& config_;
  const gossip::SyncPlan plan_;
  const std::vector<std::string> forwarded_;
  const std::vector<std::string> devices_;
  std::string what_;
};

}  // namespace

std::unique_ptr<LocalMode> MakeCodedLocal(const LocalConfig& config, gossip::SyncPlan plan,
                                          std::vector<std::string> forwarded,
                                          std::vector<std::string> devices) {
  return std::make_unique<CodedLocal>(config, std::move(plan), std::move(forwarded),
                                      std::move(devices));
}

}  // namespace murmur::node
