#include "node/observe/telemetry.h"

#include <array>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <sstream>

#include "base/log.h"
#include "coding/update_codec.h"
#include "gossip/membership.h"
#include "gossip/node_io.h"
#include "kernels/memory.h"
#include "node/observe/process_stats.h"
#include "node/observe/telemetry_metrics.h"
#include "node/peer/peer_node.h"
#include "proto/envelope_codec.h"

namespace murmur::node {
namespace {

// Counters kept elsewhere as running totals are brought up to that total (never down: a total
// that restarts, e.g. a new PeerNode, adds from zero again).
void RaiseTo(Counter& c, double total) {
  const double now = c.Value();
  if (total > now) c.Increment(total - now);
}

}  // namespace

NodeTelemetry::NodeTelemetry(prometheus::Registry& registry, std::string mode,
                             StragglerOptions initial)
    : mode_(std::move(mode)),
      start_(clock_.Now()),
      straggler_(initial),
      registry_(registry),
      m_(std::make_unique<Metrics>(registry, mode_)) {
  m_->ShowInjection(initial);
}

NodeTelemetry::~NodeTelemetry() = default;

void NodeTelemetry::AttachPeer(const PeerNode* peer) {
  std::lock_guard<std::mutex> lock(mu_);
  if (peer != nullptr) {
    if (peer_ == nullptr) {
      m_->node_info.Add({{"id", std::to_string(peer->id())}, {"device", device_}}).Set(1);
    }
    PullLocked();
  } else if (peer_ != nullptr) {
    PullLocked();  // the last figures of the peer that is going away
  }
  peer_ = peer;
}

void NodeTelemetry::SetJoined(bool joined, std::string detail) {
  std::lock_guard<std::mutex> lock(mu_);
  joined_ = joined;
  join_detail_ = std::move(detail);
  m_->ready.Set(joined ? 1 : 0);
}

void NodeTelemetry::SetRole(int64_t rank, std::string role) {
  std::lock_guard<std::mutex> lock(mu_);
  rank_ = rank;
  role_ = std::move(role);
}

void NodeTelemetry::SetFinished(std::string reason) {
  std::lock_guard<std::mutex> lock(mu_);
  finished_ = std::move(reason);
}

void NodeTelemetry::ObserveStep(const StepTimes& t, int64_t samples) {
  m_->steps.Increment();
  if (samples > 0) m_->samples.Increment(static_cast<double>(samples));
  const auto phases = PhaseDurations(t);
  for (size_t i = 0; i < phases.size(); ++i) m_->phases[i]->Observe(ToSeconds(phases[i]));
  if (t.injected.count() > 0) m_->injected_compute->Increment(ToSeconds(t.injected));
  std::lock_guard<std::mutex> lock(mu_);
  ++steps_;
}

void NodeTelemetry::SetStepClock(int64_t step) {
  m_->step_clock.Set(static_cast<double>(step));
  std::lock_guard<std::mutex> lock(mu_);
  step_clock_ = step;
}

void NodeTelemetry::ObserveStaleness(double steps) { m_->staleness.Observe(std::max(0.0, steps)); }

void NodeTelemetry::SetLoss(double loss) {
  if (std::isnan(loss) && !have_loss_) return;  // NaN here means "not measured yet"
  m_->loss.Add({}).Set(loss);
  std::lock_guard<std::mutex> lock(mu_);
  loss_ = loss;
  have_loss_ = true;
}

void NodeTelemetry::SetAccuracy(double accuracy) {
  if (!std::isfinite(accuracy) || accuracy < 0) return;
  m_->accuracy.Add({}).Set(accuracy);
  std::lock_guard<std::mutex> lock(mu_);
  accuracy_ = accuracy;
}

void NodeTelemetry::CountNonFiniteStep() { m_->nonfinite_steps.Increment(); }

void NodeTelemetry::CountCheckpoint(std::string_view what, int64_t step, Duration took) {
  m_->checkpoints.Add({{"result", std::string(what)}}).Increment();
  if (what == "written") m_->checkpoint_seconds.Observe(ToSeconds(took));
  if (what == "written" || what == "resumed") m_->checkpoint_step.Set(static_cast<double>(step));
}

void NodeTelemetry::SetConsensusDistance(double distance) { m_->consensus.Set(distance); }

void NodeTelemetry::SetFinish(uint32_t contributors, double moved) {
  m_->finish_contributors.Set(contributors);
  m_->finish_moved.Set(moved);
}

void NodeTelemetry::SetMemory(const MemoryUse& memory) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const MemoryUse::Entry& e : memory.entries()) {
    auto it = m_->memory_by_buffer.find(e.buffer);
    if (it == m_->memory_by_buffer.end()) {
      it = m_->memory_by_buffer.emplace(e.buffer, &m_->memory.Add({{"buffer", e.buffer}})).first;
    }
    it->second->Set(static_cast<double>(e.bytes));
  }
}

void NodeTelemetry::SetCompression(double density, double residual_norm) {
  m_->density.Set(density);
  m_->residual.Set(residual_norm);
}

void NodeTelemetry::SetStragglers(std::vector<gossip::NodeId> current, uint64_t detected_total) {
  m_->stragglers.Set(static_cast<double>(current.size()));
  RaiseTo(m_->stragglers_detected, static_cast<double>(detected_total));
  std::lock_guard<std::mutex> lock(mu_);
  stragglers_ = std::move(current);
}

void NodeTelemetry::AddClipped(uint64_t terms) {
  if (terms > 0) m_->clipped.Increment(static_cast<double>(terms));
}
void NodeTelemetry::AddLateDropped(uint64_t count) {
  if (count > 0) m_->late_dropped.Increment(static_cast<double>(count));
}

void NodeTelemetry::SetCodedStats(const gossip::CodedStats& s) {
  RaiseTo(m_->coded_iterations, static_cast<double>(s.iterations));
  RaiseTo(m_->coded_decodes, static_cast<double>(s.decodes));
  RaiseTo(m_->coded_waited, static_cast<double>(s.children_waited));
  RaiseTo(m_->coded_ignored, static_cast<double>(s.children_ignored));
  RaiseTo(m_->coded_undecodable, static_cast<double>(s.undecodable_waits));
  RaiseTo(m_->coded_stale, static_cast<double>(s.stale_own));
  std::lock_guard<std::mutex> lock(mu_);
  if (s.late_dropped > m_->coded_late_seen) {
    m_->late_dropped.Increment(static_cast<double>(s.late_dropped - m_->coded_late_seen));
    m_->coded_late_seen = s.late_dropped;
  }
}

void NodeTelemetry::CountRejected(std::string_view reason) {
  std::lock_guard<std::mutex> lock(m_->reasons_mu);
  m_->Reason(reason).Increment();
}

void NodeTelemetry::PullLocked() {
  if (peer_ != nullptr) {
    const PeerSnapshot s = peer_->Snapshot();
    for (size_t k = 0; k < static_cast<size_t>(MessageKind::kCount); ++k) {
      RaiseTo(*m_->sent_bytes_by_kind[k], static_cast<double>(s.sent_by_kind[k].bytes));
      RaiseTo(*m_->sent_messages_by_kind[k], static_cast<double>(s.sent_by_kind[k].messages));
      RaiseTo(*m_->received_bytes_by_kind[k], static_cast<double>(s.received_by_kind[k].bytes));
      RaiseTo(*m_->received_messages_by_kind[k], static_cast<double>(s.received_by_kind[k].messages));
    }
    std::array<double, kPeerStates.size()> by_state{};
    for (const auto& member : s.members) {
      if (member.id == s.id) continue;
      by_state[static_cast<size_t>(member.state)] += 1;
    }
    for (size_t i = 0; i < by_state.size(); ++i) m_->peers_by_state[i]->Set(by_state[i]);
    for (size_t r = 1; r < s.rejected.size(); ++r) {
      RaiseTo(*m_->envelope_rejections[r - 1], static_cast<double>(s.rejected[r]));
    }
    {
      std::lock_guard<std::mutex> reasons_lock(m_->reasons_mu);
      const transport::TransportStats& t = s.transport;
      RaiseTo(m_->Reason(kTransportEmpty), static_cast<double>(t.refused_empty_header));
      RaiseTo(m_->Reason(kTransportFrames), static_cast<double>(t.refused_too_many_frames));
      RaiseTo(m_->Reason(kAuthRefused), static_cast<double>(t.refused_auth));
      RaiseTo(m_->Reason(kHandshakeFailed), static_cast<double>(t.handshake_failures));
      RaiseTo(m_->Reason(kSenderKeyMismatch), static_cast<double>(s.sender_key_mismatch));
      for (const auto& [reason, count] : s.membership_rejected) {
        RaiseTo(m_->Reason("membership_" + reason), static_cast<double>(count));
      }
    }
    RaiseTo(*m_->dropped_at["send_queue_update"], static_cast<double>(s.transport.dropped_updates));
    RaiseTo(*m_->dropped_at["send_queue_control"], static_cast<double>(s.transport.dropped_control));
    RaiseTo(*m_->dropped_at["inbox"], static_cast<double>(s.transport.dropped_inbox));
    RaiseTo(*m_->dropped_at["no_socket"], static_cast<double>(s.transport.dropped_no_socket));
    RaiseTo(*m_->dropped_at["training_queue"], static_cast<double>(s.training_dropped));
    RaiseTo(*m_->injected_send, s.injected_send_delay_s);
    RaiseTo(m_->injected_drops, static_cast<double>(s.injected_drops));
    RaiseTo(m_->inbound_disconnects, static_cast<double>(s.transport.inbound_disconnects));
  }
  const uint64_t version = straggler_.version();
  if (version != m_->shown_injection_version) {
    m_->ShowInjection(straggler_.Current().options);
    m_->shown_injection_version = version;
  }
  const ProcessFigures p = ReadProcess();
  RaiseTo(m_->process_cpu, p.cpu_seconds);
  m_->process_rss.Set(p.resident_bytes);
  m_->process_vsize.Set(p.virtual_bytes);
  m_->process_fds.Set(p.open_fds);
  m_->process_max_fds.Set(p.max_fds);
  m_->process_threads.Set(p.threads);
  m_->process_start.Set(p.start_time_seconds);
  const kernels::DeviceMemoryStats device = kernels::GetDeviceMemoryStats();
  m_->device_memory.Set(static_cast<double>(device.allocated_bytes));
  RaiseTo(m_->host_device_bytes, static_cast<double>(device.transferred_bytes));
}

void NodeTelemetry::SetDevice(std::string device) {
  std::lock_guard<std::mutex> lock(mu_);
  device_ = std::move(device);
}

std::string NodeTelemetry::Exposition() {
  std::lock_guard<std::mutex> lock(mu_);
  PullLocked();
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_.Collect());
  return out.str();
}

NodeHealth NodeTelemetry::Health() {
  std::lock_guard<std::mutex> lock(mu_);
  return {joined_, joined_ ? "joined" : join_detail_};
}

}  // namespace murmur::node
