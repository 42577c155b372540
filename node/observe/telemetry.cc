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

#include "base/config.h"
#include "base/log.h"
#include "coding/update_codec.h"
#include "gossip/membership.h"
#include "gossip/node_io.h"
#include "node/observe/process_stats.h"
#include "node/peer/peer_node.h"
#include "proto/envelope_codec.h"

namespace murmur::node {
namespace {

constexpr std::string_view kTransportEmpty = "transport_empty_header";
constexpr std::string_view kTransportFrames = "transport_too_many_frames";
constexpr std::string_view kAuthRefused = "auth_refused";
constexpr std::string_view kHandshakeFailed = "handshake_failed";

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;
using prometheus::Counter;
using prometheus::Gauge;
using prometheus::Histogram;

constexpr std::array<std::string_view, 4> kPhases = {"compute", "communication", "waiting",
                                                     "injected"};
constexpr std::array<std::string_view, 4> kPeerStates = {"alive", "suspect", "dead", "left"};

// Counters kept elsewhere as running totals are brought up to that total (never down: a total
// that restarts, e.g. a new PeerNode, adds from zero again).
void RaiseTo(Counter& c, double total) {
  const double now = c.Value();
  if (total > now) c.Increment(total - now);
}

// Exponential buckets from `start`, `count` of them, each `factor` times the previous.
Histogram::BucketBoundaries Exponential(double start, double factor, int count) {
  Histogram::BucketBoundaries b;
  for (double v = start; count-- > 0; v *= factor) b.push_back(v);
  return b;
}


}  // namespace


struct NodeTelemetry::Metrics {
  explicit Metrics(prometheus::Registry& r, const std::string& mode)
      : build_info(BuildGauge()
                       .Name("murmur_build_info")
                       .Help("Always 1; labels: version, mode, cuda (whether built with CUDA)")
                       .Register(r)
                       .Add({{"version", MURMUR_VERSION},
                             {"mode", mode},
                             {"cuda", MURMUR_WITH_CUDA ? "true" : "false"}})),
        node_info(BuildGauge()
                      .Name("murmur_node_info")
                      .Help("Always 1 once the peer has started; label id: this node's id")
                      .Register(r)),
        ready(BuildGauge()
                  .Name("murmur_ready")
                  .Help("1 once the node has joined its cluster (what /healthz reports)")
                  .Register(r)
                  .Add({})),
        steps(BuildCounter()
                  .Name("murmur_steps_total")
                  .Help("Training steps this node computed (gossip: local SGD steps; coded "
                        "modes: own gradient parts)")
                  .Register(r)
                  .Add({})),
        samples(BuildCounter()
                    .Name("murmur_samples_total")
                    .Help("Training samples this node computed gradients on")
                    .Register(r)
                    .Add({})),
        step_clock(BuildGauge()
                       .Name("murmur_step")
                       .Help("The step clock (gossip: adopted steps included; coded modes: the "
                             "iteration)")
                       .Register(r)
                       .Add({})),
        loss(BuildGauge()
                 .Name("murmur_loss")
                 .Help("Training loss (gossip: running mean of batch losses; coded modes: the "
                       "root's latest evaluation); absent until there is one")
                 .Register(r)),
        accuracy(BuildGauge()
                     .Name("murmur_test_accuracy_ratio")
                     .Help("Test accuracy of the latest evaluation, 0 to 1; absent until there "
                           "is one")
                     .Register(r)),
        nonfinite_steps(BuildCounter()
                            .Name("murmur_nonfinite_steps_total")
                            .Help("Steps skipped because the loss or gradient was not finite")
                            .Register(r)
                            .Add({})),
        checkpoints(BuildCounter()
                        .Name("murmur_checkpoints_total")
                        .Help("Checkpoints by what happened: written, write_failed; at start: "
                              "resumed, none, corrupt (set aside, the node joined from a peer)")
                        .Register(r)),
        checkpoint_seconds(BuildHistogram()
                               .Name("murmur_checkpoint_write_seconds")
                               .Help("Wall time of a checkpoint write (encode, write, fsync, "
                                     "rename, directory fsync)")
                               .Register(r)
                               .Add({}, Exponential(0.001, 2, 14))),
        checkpoint_step(BuildGauge()
                            .Name("murmur_checkpoint_step")
                            .Help("Step clock of the latest checkpoint written or resumed from")
                            .Register(r)
                            .Add({})),
        step_phase(BuildHistogram()
                       .Name("murmur_step_duration_seconds")
                       .Help("Wall time of a step by phase: compute, communication, waiting on "
                             "peers, injected straggler delay")
                       .Register(r)),
        staleness(BuildHistogram()
                      .Name("murmur_staleness_steps")
                      .Help("Steps a received update or answer is behind this node's clock")
                      .Register(r)
                      .Add({}, Histogram::BucketBoundaries{0, 1, 2, 4, 8, 16, 32, 64, 128, 256})),
        sent_bytes(BuildCounter()
                       .Name("murmur_sent_bytes_total")
                       .Help("Bytes sent (header and tensor frames) by message kind")
                       .Register(r)),
        received_bytes(BuildCounter()
                           .Name("murmur_received_bytes_total")
                           .Help("Bytes received and accepted by message kind")
                           .Register(r)),
        sent_messages(BuildCounter()
                          .Name("murmur_sent_messages_total")
                          .Help("Messages sent by kind")
                          .Register(r)),
        received_messages(BuildCounter()
                              .Name("murmur_received_messages_total")
                              .Help("Messages received and accepted by kind")
                              .Register(r)),
        density(BuildGauge()
                    .Name("murmur_compression_density_ratio")
                    .Help("Fraction of the model's coordinates in the latest gossip update")
                    .Register(r)
                    .Add({})),
        residual(BuildGauge()
                     .Name("murmur_residual_norm")
                     .Help("L2 norm of what compression has not yet sent (x - public copy)")
                     .Register(r)
                     .Add({})),
        consensus(BuildGauge()
                      .Name("murmur_consensus_distance")
                      .Help("Relative distance of this node's public copy from its neighbours' "
                            "weighted average")
                      .Register(r)
                      .Add({})),
        finish_contributors(BuildGauge()
                                .Name("murmur_finish_contributors")
                                .Help("Members' models in the average this node adopted at the "
                                      "consensus finish (0: not reached or missed)")
                                .Register(r)
                                .Add({})),
        finish_moved(BuildGauge()
                         .Name("murmur_finish_moved_ratio")
                         .Help("How far the consensus finish moved this node's model, relative "
                               "to the average's norm")
                         .Register(r)
                         .Add({})),
        peers(BuildGauge()
                  .Name("murmur_peers")
                  .Help("Members of this node's view by state (this node excluded)")
                  .Register(r)),
        stragglers(BuildGauge()
                       .Name("murmur_stragglers")
                       .Help("Peers this node currently does not wait for (marked stragglers)")
                       .Register(r)
                       .Add({})),
        stragglers_detected(BuildCounter()
                                .Name("murmur_stragglers_detected_total")
                                .Help("Times this node marked a peer a straggler")
                                .Register(r)
                                .Add({})),
        late_dropped(BuildCounter()
                         .Name("murmur_late_messages_dropped_total")
                         .Help("Messages that arrived after their step or iteration was done")
                         .Register(r)
                         .Add({})),
        coded_iterations(BuildCounter()
                             .Name("murmur_coded_iterations_total")
                             .Help("CodedReduce/baseline iterations this rank completed")
                             .Register(r)
                             .Add({})),
        coded_decodes(BuildCounter()
                          .Name("murmur_coded_decodes_total")
                          .Help("Gradient-code decodes done by this parent")
                          .Register(r)
                          .Add({})),
        coded_waited(BuildCounter()
                         .Name("murmur_coded_children_waited_total")
                         .Help("Children answers this parent waited for and decoded")
                         .Register(r)
                         .Add({})),
        coded_ignored(BuildCounter()
                          .Name("murmur_coded_children_ignored_total")
                          .Help("Children of an iteration this parent did not wait for")
                          .Register(r)
                          .Add({})),
        coded_undecodable(BuildCounter()
                              .Name("murmur_coded_undecodable_waits_total")
                              .Help("Iterations a parent waited with more than s children "
                                    "missing")
                              .Register(r)
                              .Add({})),
        coded_stale(BuildCounter()
                        .Name("murmur_coded_stale_results_total")
                        .Help("Own results dropped because a newer model had arrived")
                        .Register(r)
                        .Add({})),
        rejected(BuildCounter()
                     .Name("murmur_rejected_messages_total")
                     .Help("Messages refused, by reason")
                     .Register(r)),
        dropped(BuildCounter()
                    .Name("murmur_dropped_messages_total")
                    .Help("Messages dropped by a full bounded queue, or for want of a socket "
                          "(no_socket), by where")
                    .Register(r)),
        injected_delay(BuildCounter()
                           .Name("murmur_injected_delay_seconds_total")
                           .Help("Straggler injection: time slept after steps (compute) and "
                                 "messages held (send)")
                           .Register(r)),
        injected_drops(BuildCounter()
                           .Name("murmur_injected_dropped_messages_total")
                           .Help("Outgoing messages lost to straggler injection")
                           .Register(r)
                           .Add({})),
        injection(BuildGauge()
                      .Name("murmur_injection")
                      .Help("The injection in force, by setting: active (0/1), slowdown "
                            "(factor), delay_seconds, exp_mean_seconds, exp_slowdown (factor), "
                            "send_delay_seconds, drop_ratio")
                      .Register(r)),
        process_cpu(BuildCounter()
                        .Name("process_cpu_seconds_total")
                        .Help("User and system CPU time of this process")
                        .Register(r)
                        .Add({})),
        process_rss(BuildGauge()
                        .Name("process_resident_memory_bytes")
                        .Help("Resident memory size")
                        .Register(r)
                        .Add({})),
        process_vsize(BuildGauge()
                          .Name("process_virtual_memory_bytes")
                          .Help("Virtual memory size")
                          .Register(r)
                          .Add({})),
        process_fds(BuildGauge()
                        .Name("process_open_fds")
                        .Help("Open file descriptors")
                        .Register(r)
                        .Add({})),
        process_max_fds(BuildGauge()
                            .Name("process_max_fds")
                            .Help("Limit on open file descriptors")
                            .Register(r)
                            .Add({})),
        process_threads(BuildGauge()
                            .Name("process_threads")
                            .Help("Threads of this process")
                            .Register(r)
                            .Add({})),
        process_start(BuildGauge()
                          .Name("process_start_time_seconds")
                          .Help("Start time of the process since the Unix epoch")
                          .Register(r)
                          .Add({})) {
    build_info.Set(1);
    // Step phases: 100 us to ~100 s.
    for (std::string_view phase : kPhases) {
      phases.push_back(&step_phase.Add({{"phase", std::string(phase)}}, Exponential(1e-4, 2.5, 16)));
    }
    for (size_t k = 0; k < static_cast<size_t>(MessageKind::kCount); ++k) {
      const prometheus::Labels l{{"kind", std::string(MessageKindName(static_cast<MessageKind>(k)))}};
      sent_bytes_by_kind[k] = &sent_bytes.Add(l);
      received_bytes_by_kind[k] = &received_bytes.Add(l);
      sent_messages_by_kind[k] = &sent_messages.Add(l);
      received_messages_by_kind[k] = &received_messages.Add(l);
    }
    for (std::string_view state : kPeerStates) peers_by_state.push_back(&peers.Add({{"state", std::string(state)}}));
    // Every reason exists from the start (at 0), so rate() and alerts see the series.
    for (size_t r = 1; r < static_cast<size_t>(proto::Rejection::kCount); ++r) {
      envelope_rejections.push_back(
          &rejected.Add({{"reason", std::string(proto::RejectionName(static_cast<proto::Rejection>(r)))}}));
    }
    for (int f = 1; f < coding::kDecodeFailureCount; ++f) {
      Reason(coding::DecodeFailureName(static_cast<coding::DecodeFailure>(f)));
    }
    for (std::string_view reason :
         {gossip::kRejectWrongMode, gossip::kRejectUnknownSender, gossip::kRejectProtocol,
          gossip::kRejectFrames, gossip::kRejectOutlier, gossip::kRejectIncarnation,
          gossip::kRejectClock, kTransportEmpty, kTransportFrames, kAuthRefused, kHandshakeFailed}) {
      Reason(reason);
    }
    for (std::string_view reason :
         {gossip::kRejectIncarnation, gossip::kRejectClock, gossip::kRejectMemberLimit,
          gossip::kRejectImpersonation, gossip::kRejectMalformedMember}) {
      Reason("membership_" + std::string(reason));
    }
    for (std::string_view where :
         {"send_queue_update", "send_queue_control", "inbox", "training_queue", "no_socket"}) {
      dropped_at.emplace(std::string(where), &dropped.Add({{"where", std::string(where)}}));
    }
    injected_compute = &injected_delay.Add({{"kind", "compute"}});
    injected_send = &injected_delay.Add({{"kind", "send"}});
    for (std::string_view setting : {"active", "slowdown", "delay_seconds", "exp_mean_seconds",
                                     "exp_slowdown", "send_delay_seconds", "drop_ratio"}) {
      injection_settings[std::string(setting)] = &injection.Add({{"setting", std::string(setting)}});
    }
  }

  Counter& Reason(std::string_view reason) {
    auto it = reasons.find(std::string(reason));
    if (it != reasons.end()) return *it->second;
    Counter* c = &rejected.Add({{"reason", std::string(reason)}});
    reasons.emplace(std::string(reason), c);
    return *c;
  }

  void ShowInjection(const StragglerOptions& o) {
    injection_settings["active"]->Set(o.active() ? 1 : 0);
    injection_settings["slowdown"]->Set(o.slowdown);
    injection_settings["delay_seconds"]->Set(ToSeconds(o.delay));
    injection_settings["exp_mean_seconds"]->Set(ToSeconds(o.exp_mean));
    injection_settings["exp_slowdown"]->Set(o.exp_slowdown);
    injection_settings["send_delay_seconds"]->Set(ToSeconds(o.send_delay));
    injection_settings["drop_ratio"]->Set(o.drop);
  }

  Gauge& build_info;
  prometheus::Family<Gauge>& node_info;
  Gauge& ready;
  Counter& steps;
  Counter& samples;
  Gauge& step_clock;
  prometheus::Family<Gauge>& loss;  // the series appears with the first value
  prometheus::Family<Gauge>& accuracy;
  Counter& nonfinite_steps;
  prometheus::Family<Counter>& checkpoints;
  Histogram& checkpoint_seconds;
  Gauge& checkpoint_step;
  prometheus::Family<Histogram>& step_phase;
  std::vector<Histogram*> phases;
  Histogram& staleness;
  prometheus::Family<Counter>& sent_bytes;
  prometheus::Family<Counter>& received_bytes;
  prometheus::Family<Counter>& sent_messages;
  prometheus::Family<Counter>& received_messages;
  std::array<Counter*, static_cast<size_t>(MessageKind::kCount)> sent_bytes_by_kind{};
  std::array<Counter*, static_cast<size_t>(MessageKind::kCount)> received_bytes_by_kind{};
  std::array<Counter*, static_cast<size_t>(MessageKind::kCount)> sent_messages_by_kind{};
  std::array<Counter*, static_cast<size_t>(MessageKind::kCount)> received_messages_by_kind{};
  Gauge& density;
  Gauge& residual;
  Gauge& consensus;
  Gauge& finish_contributors;
  Gauge& finish_moved;
  prometheus::Family<Gauge>& peers;
  std::vector<Gauge*> peers_by_state;
  Gauge& stragglers;
  Counter& stragglers_detected;
  Counter& late_dropped;
  Counter& coded_iterations;
  Counter& coded_decodes;
  Counter& coded_waited;
  Counter& coded_ignored;
  Counter& coded_undecodable;
  Counter& coded_stale;
  prometheus::Family<Counter>& rejected;
  std::vector<Counter*> envelope_rejections;  // index = proto::Rejection - 1
  std::mutex reasons_mu;  // guards `reasons` (CountRejected may come from several threads)
  std::map<std::string, Counter*> reasons;
  prometheus::Family<Counter>& dropped;
  std::map<std::string, Counter*, std::less<>> dropped_at;
  prometheus::Family<Counter>& injected_delay;
  Counter* injected_compute = nullptr;
  Counter* injected_send = nullptr;
  Counter& injected_drops;
  prometheus::Family<Gauge>& injection;
  std::map<std::string, Gauge*> injection_settings;
  Counter& process_cpu;
  Gauge& process_rss;
  Gauge& process_vsize;
  Gauge& process_fds;
  Gauge& process_max_fds;
  Gauge& process_threads;
  Gauge& process_start;
  uint64_t coded_late_seen = 0;  // CodedStats.late_dropped already added to late_dropped
  uint64_t shown_injection_version = ~uint64_t{0};
};

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
    if (peer_ == nullptr) m_->node_info.Add({{"id", std::to_string(peer->id())}}).Set(1);
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
  m_->phases[0]->Observe(ToSeconds(t.compute));
  m_->phases[1]->Observe(ToSeconds(t.communication));
  m_->phases[2]->Observe(ToSeconds(t.waiting));
  m_->phases[3]->Observe(ToSeconds(t.injected));
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
