#pragma once
// What a running node tells its operators: Prometheus metrics (in a registry the caller owns and
// passes in; never a global one), the state behind /healthz and /status, and the run-time
// straggler control behind /straggler. The trainers push what they measure per step; counters
// kept elsewhere (the peer's traffic, membership, rejections) and the process's own figures are
// pulled when a scrape asks for them.
//
// Metric names follow the Prometheus conventions (docs/operations.md, "Metric names"): `murmur_`
// prefix, base units (seconds, bytes, ratios), `_total` counters, histograms only, and labels
// with a fixed set of values (phase, kind, state, reason); node identity is in
// murmur_build_info and in the scrape's target labels, never a per-peer label. Process metrics
// use the names every Prometheus client library exports (process_cpu_seconds_total, ...), which
// prometheus-cpp lacks.
// Thread safety: every method may be called from any thread.

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/memory_use.h"
#include "gossip/coded_reduce.h"
#include "gossip/envelope.h"
#include "node/peer/straggler.h"

namespace prometheus {
class Registry;
}

namespace murmur::node {

class PeerNode;

// One training step (gossip: a local SGD step with its gossip round; coded modes: one iteration
// as this rank saw it). The phases add up to the step's wall time.
struct StepTimes {
  Duration compute{0};        // forward/backward and the optimizer
  Duration compress{0};       // gossip: q = C(x - x̂), x̂ += q, encoding (CHOCO steps 2-4)
  Duration mix{0};            // gossip: the consensus step x += γ Σ w (x̂_j - x̂) (step 5)
  Duration apply{0};          // gossip: decoding and applying received updates and snapshots
  Duration send{0};           // gossip: handing messages to the transport (envelope, socket)
  Duration communication{0};  // coded modes: encoding, aggregating, handling messages
  Duration waiting{0};        // blocked on peers: the soft-sync gate, children, the next model
  Duration evaluate{0};       // periodic evaluation on the held-out subset
  Duration injected{0};       // straggler injection slept
  Duration other{0};          // the driver's own work: membership views, reports
};
// StepTimes' phases in order, named as the metric's `phase` label and the reports name them.
inline constexpr std::array<std::string_view, 10> kStepPhases = {
    "compute",       "compress", "mix",      "apply",    "send",
    "communication", "waiting",  "evaluate", "injected", "other"};
inline std::array<Duration, 10> PhaseDurations(const StepTimes& t) {
  return {t.compute,       t.compress, t.mix,      t.apply,    t.send,
          t.communication, t.waiting,  t.evaluate, t.injected, t.other};
}

// murmur_rejected_messages_total{reason}: the envelope's reasons (proto::RejectionName), the
// payload's (coding::DecodeFailureName), the machines' (gossip/node_io.h, gossip/membership.h;
// membership's prefixed "membership_"), and the transport's ("transport_empty_header",
// "transport_too_many_frames", "auth_refused", "handshake_failed") and the peer's
// ("sender_key_mismatch": a sender other than the member its link's key is bound to).
// murmur_dropped_messages_total{where}: "send_queue_update", "send_queue_control", "inbox",
// "training_queue" (bounded queues that dropped their oldest message).

struct NodeHealth {
  bool ready = false;
  std::string detail;  // why not (yet), or "joined"
};


// The injection as /straggler and /status show it: every setting, the canonical spec, where it
// came from, and the seconds left of a timed one.
nlohmann::json StragglerStateJson(const StragglerControl::State& state);

class NodeTelemetry {
 public:
  // Registers every metric family in `registry`, which must outlive this object.
  NodeTelemetry(prometheus::Registry& registry, std::string mode, StragglerOptions initial);
  ~NodeTelemetry();
  NodeTelemetry(const NodeTelemetry&) = delete;
  NodeTelemetry& operator=(const NodeTelemetry&) = delete;

  // The peer whose traffic and membership a scrape reads; nullptr before it starts and after it
  // stops. The caller detaches before destroying the peer.
  void AttachPeer(const PeerNode* peer);
  // Where the node trains ("cpu", "cuda:0"): murmur_node_info's device label. Set before
  // AttachPeer (default "cpu").
  void SetDevice(std::string device);
  // /healthz answers 200 only once the node has joined (gossip: the cluster seen and the model
  // taken; coded modes: the tree or ring assembled; membership: a member besides itself).
  void SetJoined(bool joined, std::string detail);
  void SetRole(int64_t rank, std::string role);
  void SetFinished(std::string reason);

  // Pushed by the training thread.
  void ObserveStep(const StepTimes& times, int64_t samples);
  void SetStepClock(int64_t step);
  void ObserveStaleness(double steps);
  // A NaN before any finite value means "none yet"; after one, it is reported (and alerted on).
  void SetLoss(double loss);
  void CountNonFiniteStep();
  // `what`: written (with its duration), write_failed, resumed, none, corrupt.
  void CountCheckpoint(std::string_view what, int64_t step, Duration took = Duration(0));
  void SetAccuracy(double accuracy);
  void SetConsensusDistance(double distance);
  // The consensus finish: models in the adopted average (0: missed), and how far it moved this
  // node's model (relative).
  void SetFinish(uint32_t contributors, double moved);
  void SetCompression(double density, double residual_norm);
  void SetStragglers(std::vector<gossip::NodeId> current, uint64_t detected_total);
  void AddLateDropped(uint64_t count);
  void AddClipped(uint64_t terms);
  void SetCodedStats(const gossip::CodedStats& stats);
  void CountRejected(std::string_view reason);
  // murmur_memory_bytes{buffer}: what the node holds now, by buffer.
  void SetMemory(const MemoryUse& memory);

  StragglerControl& straggler() { return straggler_; }
  const std::string& mode() const { return mode_; }

  // For the admin server: the exposition text (pulled values refreshed first), the /status
  // document, and readiness.
  std::string Exposition();
  std::string StatusJson();
  NodeHealth Health();

 private:
  struct Metrics;
  void PullLocked();

  RealClock clock_;
  const std::string mode_;
  const TimePoint start_;
  StragglerControl straggler_;
  prometheus::Registry& registry_;
  std::unique_ptr<Metrics> m_;

  std::mutex mu_;  // guards what follows
  const PeerNode* peer_ = nullptr;
  std::string device_ = "cpu";
  bool joined_ = false;
  std::string join_detail_ = "starting";
  int64_t rank_ = -1;
  std::string role_;
  std::string finished_;
  int64_t step_clock_ = 0;
  int64_t steps_ = 0;
  double loss_ = 0;
  bool have_loss_ = false;
  double accuracy_ = -1;
  std::vector<gossip::NodeId> stragglers_;
};

}  // namespace murmur::node
