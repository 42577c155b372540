#include "node/driver/node_report.h"

#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <string_view>

#include "node/driver/step_breakdown.h"
#include "proto/envelope_codec.h"

namespace murmur::node {
namespace {

char StateChar(const std::string& state) {
  if (state == "alive") return 'A';
  if (state == "suspect") return 'S';
  if (state == "dead") return 'D';
  if (state == "left") return 'L';
  return '?';
}

}  // namespace

std::string SnapshotJson(const PeerSnapshot& s, double uptime_s) {
  nlohmann::json j;
  j["id"] = s.id;
  j["endpoint"] = s.endpoint;
  j["incarnation"] = s.incarnation;
  j["uptime_s"] = uptime_s;
  j["view_epoch"] = s.view_epoch;
  nlohmann::json members = nlohmann::json::array();
  size_t alive = 0;
  for (const auto& m : s.members) {
    members.push_back({{"id", m.id},
                       {"address", m.address},
                       {"state", gossip::MemberStateName(m.state)},
                       {"incarnation", m.incarnation},
                       {"heartbeat", m.heartbeat}});
    if (m.state == gossip::MemberState::kAlive) ++alive;
  }
  j["alive"] = alive;
  j["members"] = members;
  nlohmann::json rejected = nlohmann::json::object();
  for (size_t r = 1; r < s.rejected.size(); ++r) {
    rejected[std::string(proto::RejectionName(static_cast<proto::Rejection>(r)))] = s.rejected[r];
  }
  rejected[std::string(kSenderKeyMismatch)] = s.sender_key_mismatch;
  j["rejected"] = rejected;
  j["id_conflicts"] = s.id_conflicts;
  j["messages"] = {{"received", s.received},
                   {"sent", s.sent},
                   {"bytes_sent", s.transport.sent_bytes},
                   {"bytes_received", s.transport.received_bytes},
                   {"dropped", s.transport.dropped_updates + s.transport.dropped_control},
                   {"refused", s.transport.refused_malformed}};
  return j.dump();
}

std::string GossipProgressJson(const GossipProgress& p, bool final) {
  nlohmann::json j;
  j["kind"] = final ? "final" : "train";
  j["id"] = p.id;
  j["step"] = p.step;
  j["local_steps"] = p.local_steps;
  j["samples"] = p.samples;
  j["epoch"] = p.local_epoch;
  j["cluster_samples"] = p.cluster_samples;
  j["budget_samples"] = p.budget_samples;
  j["loss"] =
      p.have_loss && std::isfinite(p.loss) ? nlohmann::json(p.loss) : nlohmann::json(nullptr);
  j["perplexity"] = p.perplexity >= 0 ? nlohmann::json(p.perplexity) : nlohmann::json(nullptr);
  if (!p.scalars.empty()) j["scalars"] = p.scalars;
  j["accuracy"] = p.accuracy >= 0 ? nlohmann::json(p.accuracy) : nlohmann::json(nullptr);
  j["accuracy_step"] = p.accuracy_step;
  j["elapsed_s"] = p.elapsed_s;
  j["device"] = p.device;
  j["device_memory_bytes"] = p.device_memory_bytes;
  j["host_device_bytes"] = p.host_device_bytes;
  j["bytes_sent"] = p.bytes_sent;
  j["bytes_received"] = p.bytes_received;
  j["rounds"] = p.rounds;
  j["outer_rounds"] = p.outer_rounds;
  j["overlapped_steps"] = p.overlapped_steps;
  j["lag"] = p.max_lag;
  j["consensus"] = p.consensus_distance;
  j["consensus_average"] = p.consensus_average;
  j["consensus_estimate"] = p.consensus_estimate;
  j["activity"] = p.activity;
  j["gossip_period"] = p.gossip_period;
  j["density_factor"] = p.density_factor;
  j["gamma"] = p.gamma;
  j["lr"] = p.lr;
  j["wait_s"] = p.wait_s;
  j["catchups"] = p.catchups;
  j["model_requests"] = p.model_requests;
  j["gamma_halvings"] = p.gamma_halvings;
  j["clipped"] = p.clipped_terms;
  j["far_clipped"] = p.far_clipped;
  j["stragglers"] = p.stragglers;
  j["stragglers_detected"] = p.stragglers_detected;
  j["members"] = p.live_members;
  j["verdicts"] = p.verdicts;
  j["rejected"] = p.rejected_messages;
  j["skipped_steps"] = p.skipped_steps;
  j["joined_by_snapshot"] = p.joined_by_snapshot;
  j["resumed_step"] = p.resumed_step;
  j["finished"] = p.finished;
  j["end"] = p.end_reason;
  j["phase"] = gossip::PhaseName(p.phase);
  if (final) {
    j["phases"] = PhasesJson(p);
    nlohmann::json buffers = nlohmann::json::object();
    for (const MemoryUse::Entry& e : p.memory.entries()) buffers[e.buffer] = e.bytes;
    j["memory"] = {{"buffers", buffers},
                   {"resident_bytes", p.memory_resident_bytes},
                   {"peak_resident_bytes", p.peak_resident_bytes}};
  }
  if (!p.finish.empty()) {
    j["finish"] = {{"outcome", p.finish},
                   {"contributors", p.finish_contributors},
                   {"collector", p.finish_collector},
                   {"moved", p.finish_moved},
                   {"own_accuracy",
                    p.own_accuracy >= 0 ? nlohmann::json(p.own_accuracy) : nlohmann::json(nullptr)},
                   {"verdicts", p.finish_verdicts}};
  }
  return j.dump();
}

std::string CodedProgressJson(const CodedProgress& p) {
  nlohmann::json j;
  j["kind"] = p.final ? "final" : "coded";
  j["mode"] = gossip::ModeName(p.mode);
  j["rank"] = p.rank;
  j["role"] = p.role;
  j["iteration"] = p.iteration;
  j["own_samples"] = p.own_samples;
  j["loss"] = std::isfinite(p.loss) ? nlohmann::json(p.loss) : nlohmann::json(nullptr);
  j["accuracy"] = std::isfinite(p.accuracy) ? nlohmann::json(p.accuracy) : nlohmann::json(nullptr);
  j["evaluated_at"] = p.evaluated_at;
  j["compute_s"] = p.compute_s;
  j["injected_s"] = p.injected_s;
  const auto [mean, p95] = MeanAndP95(p.iteration_ms);
  j["iteration_ms_mean"] = mean;
  j["iteration_ms_p95"] = p95;
  if (p.final) j["iteration_ms"] = p.iteration_ms;
  j["decodes"] = p.stats.decodes;
  j["children_waited"] = p.stats.children_waited;
  j["children_ignored"] = p.stats.children_ignored;
  j["late_dropped"] = p.stats.late_dropped;
  j["stale_own"] = p.stats.stale_own;
  j["duplicates"] = p.stats.duplicates;
  j["undecodable_waits"] = p.stats.undecodable_waits;
  if (p.mode == gossip::Mode::kPs) {  // a server's gradients and their staleness (param_server.h)
    j["applied"] = p.stats.applied;
    j["staleness_mean"] = p.stats.applied > 0 ? static_cast<double>(p.stats.staleness_sum) /
                                                    static_cast<double>(p.stats.applied)
                                              : 0.0;
    j["staleness_max"] = p.stats.staleness_max;
    j["gated"] = p.stats.gated;
  }
  j["rejected"] = p.rejected_messages;
  j["refused_views"] = p.refused_views;
  j["early_dropped"] = p.early_dropped;
  j["elapsed_s"] = p.elapsed_s;
  j["bytes_sent"] = p.bytes_sent;
  j["bytes_received"] = p.bytes_received;
  return j.dump();
}

namespace {

// Reads keys of one JSON object into typed fields; the first missing or mistyped key is the
// error, and later reads do nothing.
class Reader {
 public:
  explicit Reader(const nlohmann::json& j) : j_(j) {
    if (!j_.is_object()) status_ = InvalidArgumentError("a report line is a JSON object");
  }
  template <typename T>
  void Get(const char* key, T& out) {
    if (!status_.ok()) return;
    auto it = j_.find(key);
    if (it == j_.end()) {
      status_ = InvalidArgumentError(std::string("report line without '") + key + "'");
      return;
    }
    try {
      out = it->get<T>();
    } catch (const nlohmann::json::exception& e) {
      status_ = InvalidArgumentError(std::string("report key '") + key + "': " + e.what());
    }
  }
  // A number written as null when it has no value (GossipProgressJson's loss and accuracies).
  void Number(const char* key, double& out, double if_null) {
    if (!status_.ok()) return;
    auto it = j_.find(key);
    if (it != j_.end() && it->is_null()) {
      out = if_null;
      return;
    }
    Get(key, out);
  }
  Status status() const { return status_; }

 private:
  const nlohmann::json& j_;
  Status status_;
};

// The line's kind: `running` (the progress lines) or "final"; kInvalidArgument for another, a
// line of `what`'s nodes being expected.
StatusOr<bool> ReadFinal(Reader& r, std::string_view running, std::string_view what) {
  std::string kind;
  r.Get("kind", kind);
  MURMUR_RETURN_IF_ERROR(r.status());
  if (kind != running && kind != "final") {
    return InvalidArgumentError("not a " + std::string(what) + " report line (kind '" + kind +
                                "')");
  }
  return kind == "final";
}

Duration FromSeconds(double s) {
  return std::chrono::round<Duration>(std::chrono::duration<double>(s));
}

Status ReadPhases(const nlohmann::json& j, GossipProgress& p) {
  Reader r(j);
  std::array<Duration*, kStepPhases.size()> fields = {
      &p.phases.compute,  &p.phases.compress,      &p.phases.mix,     &p.phases.apply,
      &p.phases.send,     &p.phases.communication, &p.phases.waiting, &p.phases.evaluate,
      &p.phases.injected, &p.phases.other};
  for (size_t i = 0; i < kStepPhases.size(); ++i) {
    double seconds = 0;
    r.Get((std::string(kStepPhases[i]) + "_s").c_str(), seconds);
    *fields[i] = FromSeconds(seconds);
  }
  r.Get("samples", p.phase_samples);
  r.Get("thread_cpu_s", p.phase_thread_cpu_s);
  r.Get("process_cpu_s", p.phase_process_cpu_s);
  return r.status();
}

Status ReadMemory(const nlohmann::json& j, GossipProgress& p) {
  Reader r(j);
  std::map<std::string, uint64_t> buffers;
  r.Get("buffers", buffers);
  r.Get("resident_bytes", p.memory_resident_bytes);
  r.Get("peak_resident_bytes", p.peak_resident_bytes);
  for (const auto& [buffer, bytes] : buffers) p.memory.Add(buffer, bytes);
  return r.status();
}

Status ReadFinish(const nlohmann::json& j, GossipProgress& p) {
  Reader r(j);
  r.Get("outcome", p.finish);
  r.Get("contributors", p.finish_contributors);
  r.Get("collector", p.finish_collector);
  r.Get("moved", p.finish_moved);
  r.Number("own_accuracy", p.own_accuracy, -1);
  r.Get("verdicts", p.finish_verdicts);
  return r.status();
}

}  // namespace

StatusOr<GossipReport> ParseGossipReport(const nlohmann::json& line) {
  GossipReport out;
  GossipProgress& p = out.progress;
  Reader r(line);
  MURMUR_ASSIGN_OR_RETURN(out.final, ReadFinal(r, "train", "gossip node's"));
  std::string phase;
  r.Get("id", p.id);
  r.Get("step", p.step);
  r.Get("local_steps", p.local_steps);
  r.Get("samples", p.samples);
  r.Get("epoch", p.local_epoch);
  r.Get("cluster_samples", p.cluster_samples);
  r.Get("budget_samples", p.budget_samples);
  r.Number("loss", p.loss, std::numeric_limits<double>::quiet_NaN());
  p.have_loss = std::isfinite(p.loss);
  r.Number("perplexity", p.perplexity, -1);
  if (line.contains("scalars") && line["scalars"].is_object()) {
    // A report line comes from another process: its names are kept within the same bounds
    // Peer::Log holds its caller to.
    for (const auto& [name, value] : line["scalars"].items()) {
      if (p.scalars.size() >= GossipProgress::kMaxScalars) break;
      if (value.is_number() && !name.empty() && name.size() <= GossipProgress::kMaxScalarName) {
        p.scalars[name] = value.get<double>();
      }
    }
  }
  r.Number("accuracy", p.accuracy, -1);
  r.Get("accuracy_step", p.accuracy_step);
  r.Get("elapsed_s", p.elapsed_s);
  r.Get("device", p.device);
  r.Get("device_memory_bytes", p.device_memory_bytes);
  r.Get("host_device_bytes", p.host_device_bytes);
  r.Get("bytes_sent", p.bytes_sent);
  r.Get("bytes_received", p.bytes_received);
  r.Get("rounds", p.rounds);
  r.Get("outer_rounds", p.outer_rounds);
  r.Get("overlapped_steps", p.overlapped_steps);
  r.Get("lag", p.max_lag);
  r.Get("consensus", p.consensus_distance);
  r.Get("consensus_average", p.consensus_average);
  r.Get("consensus_estimate", p.consensus_estimate);
  r.Get("activity", p.activity);
  r.Get("gossip_period", p.gossip_period);
  r.Get("density_factor", p.density_factor);
  r.Get("gamma", p.gamma);
  r.Get("lr", p.lr);
  r.Get("wait_s", p.wait_s);
  r.Get("catchups", p.catchups);
  r.Get("model_requests", p.model_requests);
  r.Get("gamma_halvings", p.gamma_halvings);
  r.Get("clipped", p.clipped_terms);
  r.Get("far_clipped", p.far_clipped);
  r.Get("stragglers", p.stragglers);
  r.Get("stragglers_detected", p.stragglers_detected);
  r.Get("members", p.live_members);
  r.Get("verdicts", p.verdicts);
  r.Get("rejected", p.rejected_messages);
  r.Get("skipped_steps", p.skipped_steps);
  r.Get("joined_by_snapshot", p.joined_by_snapshot);
  r.Get("resumed_step", p.resumed_step);
  r.Get("finished", p.finished);
  r.Get("end", p.end_reason);
  r.Get("phase", phase);
  MURMUR_RETURN_IF_ERROR(r.status());
  MURMUR_ASSIGN_OR_RETURN(p.phase, gossip::ParsePhase(phase));
  if (out.final) {
    auto phases = line.find("phases");
    if (phases == line.end()) return InvalidArgumentError("a final report line without 'phases'");
    MURMUR_RETURN_IF_ERROR(ReadPhases(*phases, p));
    auto memory = line.find("memory");
    if (memory == line.end()) return InvalidArgumentError("a final report line without 'memory'");
    MURMUR_RETURN_IF_ERROR(ReadMemory(*memory, p));
  }
  if (auto finish = line.find("finish"); finish != line.end()) {
    MURMUR_RETURN_IF_ERROR(ReadFinish(*finish, p));
  }
  return out;
}

StatusOr<CodedReport> ParseCodedReport(const nlohmann::json& line) {
  CodedReport out;
  CodedProgress& p = out.progress;
  Reader r(line);
  MURMUR_ASSIGN_OR_RETURN(out.final, ReadFinal(r, "coded", "synchronous node's"));
  p.final = out.final;
  std::string mode;
  r.Get("mode", mode);
  r.Get("rank", p.rank);
  r.Get("role", p.role);
  r.Get("iteration", p.iteration);
  r.Get("own_samples", p.own_samples);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  r.Number("loss", p.loss, nan);
  r.Number("accuracy", p.accuracy, nan);
  r.Get("evaluated_at", p.evaluated_at);
  r.Get("compute_s", p.compute_s);
  r.Get("injected_s", p.injected_s);
  r.Get("iteration_ms_mean", out.iteration_ms_mean);
  r.Get("iteration_ms_p95", out.iteration_ms_p95);
  if (out.final) r.Get("iteration_ms", p.iteration_ms);
  r.Get("decodes", p.stats.decodes);
  r.Get("children_waited", p.stats.children_waited);
  r.Get("children_ignored", p.stats.children_ignored);
  r.Get("late_dropped", p.stats.late_dropped);
  r.Get("stale_own", p.stats.stale_own);
  r.Get("duplicates", p.stats.duplicates);
  r.Get("undecodable_waits", p.stats.undecodable_waits);
  r.Get("rejected", p.rejected_messages);
  r.Get("refused_views", p.refused_views);
  r.Get("early_dropped", p.early_dropped);
  r.Get("elapsed_s", p.elapsed_s);
  r.Get("bytes_sent", p.bytes_sent);
  r.Get("bytes_received", p.bytes_received);
  MURMUR_RETURN_IF_ERROR(r.status());
  const std::optional<gossip::Mode> parsed_mode = gossip::ParseMode(mode);
  if (!parsed_mode.has_value()) return InvalidArgumentError("unknown mode '" + mode + "'");
  p.mode = *parsed_mode;
  if (p.mode == gossip::Mode::kPs) {
    // The mean is written from the sum; the sum is read back as mean x applied, rounded.
    double staleness_mean = 0;
    r.Get("applied", p.stats.applied);
    r.Get("staleness_mean", staleness_mean);
    r.Get("staleness_max", p.stats.staleness_max);
    r.Get("gated", p.stats.gated);
    MURMUR_RETURN_IF_ERROR(r.status());
    p.stats.staleness_sum =
        static_cast<uint64_t>(std::llround(staleness_mean * static_cast<double>(p.stats.applied)));
  }
  return out;
}

// Keeps what the table needs from one report line (SnapshotJson's format). A line that does not
// have that shape is ignored: the table shows the previous one.
void Absorb(ChildReport& c, const nlohmann::json& report) {
  if (report.contains("kind") && report.contains("mode")) {  // coded progress (CodedProgressJson)
    StatusOr<CodedReport> parsed = ParseCodedReport(report);
    if (!parsed.ok()) return;
    if (parsed->final) c.coded_final = *parsed;
    c.coded = *std::move(parsed);
    return;
  }
  if (report.contains("kind")) {  // gossip progress (GossipProgressJson)
    StatusOr<GossipReport> parsed = ParseGossipReport(report);
    if (!parsed.ok()) return;
    const GossipProgress& p = parsed->progress;
    c.new_accuracy |=
        p.accuracy >= 0 && (!c.gossip.has_value() || c.gossip->accuracy_step != p.accuracy_step);
    if (parsed->final) c.gossip_final = p;
    c.gossip = std::move(parsed->progress);
    return;
  }
  try {
    std::map<uint64_t, char> sees;
    for (const auto& m : report.at("members")) {
      sees[m.at("id").get<uint64_t>()] = StateChar(m.at("state").get<std::string>());
    }
    uint64_t rejected = 0;
    for (const auto& [k, v] : report.at("rejected").items()) rejected += v.get<uint64_t>();
    c.heartbeat = report.at("members").at(0).at("heartbeat").get<uint64_t>();
    c.alive = report.at("alive").get<uint64_t>();
    c.rejected = rejected;
    c.sees = std::move(sees);
  } catch (const nlohmann::json::exception&) {
  }
}

}  // namespace murmur::node
