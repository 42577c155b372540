#include "cli/sim_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>

#include "cli/summary_json.h"

namespace murmur::node {
namespace {

double Seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(std::min<double>(static_cast<double>(v.size()) - 1,
                                                std::floor(q * static_cast<double>(v.size()))))];
}

// Membership messages a node sends per protocol period, on average over the run.
double MembershipRate(const sim::SimOptions& o, const sim::SimResult& r) {
  const double periods = r.virtual_s / std::max(1e-9, Seconds(o.membership.probe_interval));
  const auto it = r.messages_by_kind.find("membership");
  if (periods <= 0 || it == r.messages_by_kind.end()) return 0;
  return static_cast<double>(it->second) / static_cast<double>(o.nodes) / periods;
}

std::string Mb(uint64_t bytes) { return fmt::format("{:.3f}", static_cast<double>(bytes) / 1e6); }

}  // namespace

void SimProgressPrinter::Update(const sim::SimProgress& p) {
  Line([&] {
    return fmt::format(
        "sim {:8.2f} / {:.0f} s virtual | {:>10} events | nodes over {}/{} | mean step {}",
        p.virtual_s, p.duration_s, p.events, p.nodes_over, p.nodes, p.mean_step);
  });
}

void SimProgressPrinter::Line(const std::function<std::string()>& text) {
  if (mode_ == ProgressMode::kNone) return;
  const TimePoint now = clock_.Now();
  const Duration every =
      mode_ == ProgressMode::kTty ? std::chrono::milliseconds(100) : std::chrono::seconds(2);
  if (drawn_ && now - last_ < every) return;
  last_ = now;
  const std::string line = text();
  if (mode_ == ProgressMode::kTty) {
    std::fprintf(out_, "\r\033[K%s", line.c_str());
  } else {
    std::fprintf(out_, "%s\n", line.c_str());
  }
  std::fflush(out_);
  drawn_ = true;
}

void SimProgressPrinter::Finish() {
  if (mode_ == ProgressMode::kTty && drawn_) std::fprintf(out_, "\n");
}

std::vector<CrashDetection> Detections(const sim::SimOptions& options,
                                       const sim::SimResult& result) {
  std::vector<CrashDetection> out;
  for (const sim::SimCrash& c : options.crashes) {
    CrashDetection d;
    d.node = c.node;
    d.at_s = Seconds(c.at);
    const double until = c.down.count() > 0 ? d.at_s + Seconds(c.down) : 1e300;
    const gossip::NodeId id = sim::Simulator::Id(c.node);
    std::set<size_t> knew;
    std::map<size_t, double> declared;
    for (const sim::SimMemberEvent& e : result.member_events) {
      if (e.event.id != id || e.observer == c.node) continue;
      using K = gossip::MemberEvent::Kind;
      if (e.event.kind == K::kJoined && e.t_s < d.at_s) knew.insert(e.observer);
      const bool gone = e.event.kind == K::kDead || e.event.kind == K::kLeft;
      if (gone && e.t_s >= d.at_s && e.t_s < until && !declared.contains(e.observer)) {
        declared[e.observer] = e.t_s - d.at_s;
      }
    }
    std::vector<double> delays;
    for (size_t i : knew) {
      if (!result.nodes[i].up) continue;
      ++d.expected;
      if (auto it = declared.find(i); it != declared.end()) delays.push_back(it->second);
    }
    d.observers = delays.size();
    if (!delays.empty()) {
      d.first_s = *std::min_element(delays.begin(), delays.end());
      d.median_s = Quantile(delays, 0.5);
      d.last_s = *std::max_element(delays.begin(), delays.end());
    }
    out.push_back(d);
  }
  return out;
}

bool RunSucceeded(const sim::SimOptions& options, const sim::SimResult& result) {
  if (options.kind == sim::SimKind::kMembership) return true;
  if (!result.all_over) return false;
  for (const sim::SimNodeResult& n : result.nodes) {
    if (n.up && !n.ok) return false;
  }
  return true;
}

nlohmann::json SummaryJson(const SimSummaryInput& input, const sim::SimResult& r) {
  const sim::SimOptions& o = input.options;
  nlohmann::json j;
  j["mode"] = input.mode;
  j["description"] = input.description;
  j["nodes"] = o.nodes;
  j["seed"] = o.seed;
  j["network"] = o.link.ToString();
  j["virtual_s"] = r.virtual_s;
  j["wall_s"] = r.wall_s;
  j["events"] = r.events;
  j["messages"] = r.messages;
  j["bytes"] = r.bytes;
  j["bytes_by_kind"] = r.bytes_by_kind;
  j["trace_hash"] = fmt::format("{:016x}", r.trace_hash);
  j["all_over"] = r.all_over;
  j["succeeded"] = RunSucceeded(o, r);
  j["full_view_s"] = r.full_view_s;
  j["first_step_s"] = r.first_step_s;
  j["messages_by_kind"] = r.messages_by_kind;
  j["membership_messages_per_node_per_period"] = MembershipRate(o, r);
  nlohmann::json crashes = nlohmann::json::array();
  for (const CrashDetection& d : Detections(o, r)) {
    crashes.push_back({{"node", sim::Simulator::Id(d.node)},
                       {"at_s", d.at_s},
                       {"observers", d.observers},
                       {"expected", d.expected},
                       {"first_s", d.first_s},
                       {"median_s", d.median_s},
                       {"last_s", d.last_s}});
  }
  j["crashes"] = crashes;
  if (o.kind == sim::SimKind::kGossip) j["consensus_distance"] = r.consensus_distance;
  if (o.kind == sim::SimKind::kSync && !r.iteration_ms.empty()) {
    double sum = 0;
    for (double v : r.iteration_ms) sum += v;
    j["iteration_ms_mean"] = sum / static_cast<double>(r.iteration_ms.size());
    j["iteration_ms_p50"] = Quantile(r.iteration_ms, 0.5);
    j["iteration_ms_p95"] = Quantile(r.iteration_ms, 0.95);
    j["iterations"] = r.iteration_ms.size();
  }
  j["per_node"] = r.nodes;
  return j;
}

std::string SummaryText(const SimSummaryInput& input, const sim::SimResult& r) {
  const sim::SimOptions& o = input.options;
  std::string out;
  out += fmt::format(
      "{:.3f} virtual s in {:.2f} wall s ({:.1f}x real time), {} events, {} messages, {} MB",
      r.virtual_s, r.wall_s, r.virtual_s / std::max(r.wall_s, 1e-9), r.events, r.messages,
      Mb(r.bytes));
  std::string kinds;
  for (const auto& [kind, bytes] : r.bytes_by_kind)
    kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", kind, Mb(bytes));
  out += " (" + kinds + ")\n";
  out += fmt::format(
      "membership: every view complete at {}, {:.1f} membership messages per node per protocol "
      "period\n",
      r.full_view_s >= 0 ? fmt::format("{:.2f} s", r.full_view_s) : std::string("never"),
      MembershipRate(o, r));
  for (const CrashDetection& d : Detections(o, r)) {
    out += fmt::format(
        "crash of node {} at {:.2f} s: declared dead by {} of the {} members that knew it",
        sim::Simulator::Id(d.node), d.at_s, d.observers, d.expected);
    if (d.observers > 0) {
      out += fmt::format(" after {:.2f} s (first) / {:.2f} s (median) / {:.2f} s (last)", d.first_s,
                         d.median_s, d.last_s);
    }
    out += "\n";
  }
  if (o.kind == sim::SimKind::kMembership) return out;
  out += r.first_step_s >= 0
             ? fmt::format("training began at {:.3f} s (joining before)\n", r.first_step_s)
             : std::string("training never began\n");
  if (o.kind == sim::SimKind::kSync && !r.iteration_ms.empty()) {
    double sum = 0;
    for (double v : r.iteration_ms) sum += v;
    out += fmt::format("{} iterations: {:.3f} ms mean, {:.3f} ms median, {:.3f} ms p95\n",
                       r.iteration_ms.size(), sum / static_cast<double>(r.iteration_ms.size()),
                       Quantile(r.iteration_ms, 0.5), Quantile(r.iteration_ms, 0.95));
  }
  if (o.kind == sim::SimKind::kGossip) {
    out +=
        fmt::format("consensus distance at the end (max ‖x_i − x̄‖ / ‖x̄‖ over live nodes): {:.3g}\n",
                    r.consensus_distance);
  }
  out +=
      fmt::format("{:>5} {:>4} {:>8} {:>10} {:>9} {:>9} {:>6} {:>9} {:>8} {:>10} {:>9} {:>9}  {}\n",
                  "node", "up", "steps", "samples", "sent MB", "recv MB", "lost", "finished",
                  "over s", "loss", "accuracy", "opt.dist", "finish");
  for (const sim::SimNodeResult& n : r.nodes) {
    out += fmt::format(
        "{:>5} {:>4} {:>8} {:>10} {:>9} {:>9} {:>6} {:>9} {:>8} {:>10.4g} {:>9} {:>9}  {}{}\n",
        n.id, n.up ? "yes" : "no", n.steps, n.samples, Mb(n.bytes_sent), Mb(n.bytes_received),
        n.lost, n.finished.empty() ? "-" : n.finished,
        n.over_s >= 0 ? fmt::format("{:.3f}", n.over_s) : std::string("-"), n.loss,
        n.accuracy >= 0 ? fmt::format("{:.4f}", n.accuracy) : std::string("-"),
        n.optimum_distance ? fmt::format("{:.4f}", *n.optimum_distance) : std::string("-"),
        n.finish, n.ok ? "" : "  FAILED: " + n.status);
  }
  if (!r.all_over) {
    out += fmt::format("the run did not end within {:.1f} virtual s (--duration)\n",
                       Seconds(o.duration));
  }
  return out;
}

Status WriteSeriesCsv(const std::string& path, const sim::SimResult& r) {
  std::ofstream f(path);
  if (!f) return InvalidArgumentError("cannot write " + path);
  f << "t_s,node,step,samples,loss,accuracy,bytes_sent,live_view,up\n";
  for (const sim::SimSample& s : r.series) {
    f << fmt::format("{:.4f},{},{},{},{:.6g},{},{},{},{}\n", s.t_s, sim::Simulator::Id(s.node),
                     s.step, s.samples, s.loss,
                     s.accuracy >= 0 ? fmt::format("{:.4f}", s.accuracy) : "", s.bytes_sent,
                     s.live_view, s.up ? 1 : 0);
  }
  if (!f) return InvalidArgumentError("writing " + path + " failed");
  return OkStatus();
}

}  // namespace murmur::node
