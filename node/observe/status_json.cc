// The JSON documents of the admin port: GET /status (NodeTelemetry::StatusJson) and the
// injection in force (StragglerStateJson, also GET /straggler). The metrics are telemetry.cc.

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/config.h"
#include "node/observe/telemetry.h"
#include "node/peer/peer_node.h"

namespace murmur::node {

nlohmann::json StragglerStateJson(const StragglerControl::State& state) {
  const StragglerOptions& o = state.options;
  nlohmann::json j;
  j["active"] = o.active();
  j["spec"] = StraggleSpec(o);
  j["source"] = state.source;
  j["remaining_s"] = state.remaining_s.has_value() ? nlohmann::json(*state.remaining_s)
                                                   : nlohmann::json(nullptr);
  j["slowdown"] = o.slowdown;
  j["delay_s"] = ToSeconds(o.delay);
  j["exp_s"] = ToSeconds(o.exp_mean);
  j["exp_slowdown"] = o.exp_slowdown;
  j["pause"] = o.pause_from >= 0 ? nlohmann::json(std::to_string(o.pause_from) + ".." +
                                                  std::to_string(o.pause_to))
                                 : nlohmann::json(nullptr);
  j["send_delay_s"] = ToSeconds(o.send_delay);
  j["drop"] = o.drop;
  j["seed"] = o.seed;
  j["version"] = state.version;
  return j;
}

std::string NodeTelemetry::StatusJson() {
  const StragglerControl::State injection = straggler_.Current();
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json j;
  j["version"] = MURMUR_VERSION;
  j["mode"] = mode_;
  j["device"] = device_;
  j["uptime_s"] = ToSeconds(clock_.Now() - start_);
  j["joined"] = joined_;
  j["health"] = joined_ ? "joined" : join_detail_;
  j["step"] = step_clock_;
  j["steps_computed"] = steps_;
  j["loss"] = have_loss_ ? nlohmann::json(loss_) : nlohmann::json(nullptr);
  j["accuracy"] = accuracy_ >= 0 ? nlohmann::json(accuracy_) : nlohmann::json(nullptr);
  if (rank_ >= 0) {
    j["rank"] = rank_;
    j["role"] = role_;
  }
  if (!finished_.empty()) j["finished"] = finished_;
  nlohmann::json peers = nlohmann::json::array();
  if (peer_ != nullptr) {
    const PeerSnapshot s = peer_->Snapshot();
    j["id"] = s.id;
    j["endpoint"] = s.endpoint;
    for (const auto& m : s.members) {
      if (m.id == s.id) continue;
      const bool straggler =
          std::find(stragglers_.begin(), stragglers_.end(), m.id) != stragglers_.end();
      peers.push_back({{"id", m.id},
                       {"address", m.address},
                       {"state", gossip::MemberStateName(m.state)},
                       {"step", m.step_clock},
                       {"straggler", straggler}});
    }
  } else {
    j["id"] = nullptr;
  }
  j["peers"] = peers;
  j["injection"] = StragglerStateJson(injection);
  return j.dump();
}

}  // namespace murmur::node
