#pragma once
// The metric families and series a node exports (names, help, labels, buckets): the private
// state of NodeTelemetry, included by telemetry.cc only. telemetry.cc fills them.

#include <array>
#include <map>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <string>
#include <string_view>

#include "base/config.h"
#include "coding/update_codec.h"
#include "gossip/membership.h"
#include "node/observe/telemetry.h"
#include "node/peer/peer_node.h"
#include "proto/envelope_codec.h"

namespace murmur::node {

inline constexpr std::string_view kTransportEmpty = "transport_empty_header";
inline constexpr std::string_view kTransportFrames = "transport_too_many_frames";
inline constexpr std::string_view kAuthRefused = "auth_refused";
inline constexpr std::string_view kHandshakeFailed = "handshake_failed";

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;
using prometheus::Counter;
using prometheus::Gauge;
using prometheus::Histogram;

inline constexpr std::array<std::string_view, 4> kPeerStates = {"alive", "suspect", "dead", "left"};

// Exponential buckets from `start`, `count` of them, each `factor` times the previous.
inline Histogram::BucketBoundaries Exponential(double start, double factor, int count) {
  Histogram::BucketBoundaries b;
  for (double v = start; count-- > 0; v *= factor) b.push_back(v);
  return b;
}

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
                      .Help("Always 1 once the peer has started; labels id: this node's id, "
                            "device: where it trains (cpu, cuda:N)")
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
                       .Help("Wall time of a step by phase: compute; gossip's compress, mix, "
                             "apply and send (messages handed to the transport); the coded modes' "
                             "communication; waiting on peers; evaluate; injected straggler "
                             "delay; other (the driver's own work)")
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
        clipped(BuildCounter()
                    .Name("murmur_clipped_terms_total")
                    .Help("Neighbours' terms of the consensus step clipped to the nearer "
                          "neighbours' distance (robust mixing)")
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
        inbound_disconnects(BuildCounter()
                                .Name("murmur_transport_inbound_disconnects_total")
                                .Help("Inbound peer connections that ended: closed by the peer, "
                                      "or by the socket on a frame beyond the size limit "
                                      "(ZeroMQ gives no reason)")
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
                          .Add({})),
        device_memory(BuildGauge()
                          .Name("murmur_device_memory_bytes")
                          .Help("GPU memory this process holds (model, optimizer, shard, CHOCO "
                                "copies, scratch); 0 on the CPU")
                          .Register(r)
                          .Add({})),
        memory(BuildGauge()
                   .Name("murmur_memory_bytes")
                   .Help("Bytes this node holds by buffer (model, gradient, optimizer_state, "
                         "choco_public, choco_copies, outer_anchor, replay_log, finish, inbox, "
                         "...): the report's memory table, live")
                   .Register(r)),
        host_device_bytes(BuildCounter()
                              .Name("murmur_host_device_bytes_total")
                              .Help("Bytes copied between host and GPU, both ways (per step: "
                                    "the batch's row positions, the loss, the compressed updates "
                                    "out and in); 0 on the CPU")
                              .Register(r)
                              .Add({})) {
    build_info.Set(1);
    // Step phases: 100 us to ~100 s.
    for (std::string_view phase : kStepPhases) {
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
          gossip::kRejectUnconfirmedIncarnation, gossip::kRejectUnconfirmedSamples,
          gossip::kRejectUnconfirmedClock, gossip::kRejectFrames, gossip::kRejectOutlier,
          gossip::kRejectIncarnation, gossip::kRejectClock, kTransportEmpty, kTransportFrames,
          kAuthRefused, kHandshakeFailed, kSenderKeyMismatch}) {
      Reason(reason);
    }
    for (std::string_view reason :
         {gossip::kRejectIncarnation, gossip::kRejectClock, gossip::kRejectMemberLimit,
          gossip::kRejectImpersonation, gossip::kRejectMalformedMember, gossip::kRejectJoinBacklog,
          gossip::kRejectUnverified, gossip::kRejectStrangerGossip}) {
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
  Counter& clipped;
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
  Counter& inbound_disconnects;
  prometheus::Family<Gauge>& injection;
  std::map<std::string, Gauge*> injection_settings;
  Counter& process_cpu;
  Gauge& process_rss;
  Gauge& process_vsize;
  Gauge& process_fds;
  Gauge& process_max_fds;
  Gauge& process_threads;
  Gauge& process_start;
  Gauge& device_memory;
  prometheus::Family<Gauge>& memory;
  std::map<std::string, Gauge*, std::less<>> memory_by_buffer;  // series added as buffers appear
  Counter& host_device_bytes;
  uint64_t coded_late_seen = 0;  // CodedStats.late_dropped already added to late_dropped
  uint64_t shown_injection_version = ~uint64_t{0};
};

}  // namespace murmur::node
