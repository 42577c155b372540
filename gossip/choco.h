#pragma once
// CHOCO-Gossip / CHOCO-SGD averaging (Koloskova, Stich, Jaggi, ICML 2019; docs/algorithms.md §3) as
// a sans-IO state machine: messages in through Step(), a round through Round(), messages out
// through TakeOutput(). No sockets, no wall clock.
//
// Every node keeps its model x_i (owned by the caller: the trainer), its public copy x̂_i, and a
// copy x̂_j of each peer's public copy it has heard from. A round (§3.3 steps 2–5, the ICLR 2020
// ordering): q_i = C(x_i − x̂_i); x̂_i += q_i; send q_i to every tracker; then
// x_i += γ Σ_j w_ij d_j (x̂_j − x̂_i) over the peers this node mixes, with d_j ∈ (0, 1] the
// caller's staleness damping. Only q travels, and sender and receivers apply it to bit-identical
// copies, which is what makes the method correct (§3.3 "Key invariant"). There is no separate
// error feedback: x − x̂ is the memory of what has not been sent yet.
//
// Streams. A public copy is a stream owned by (node, incarnation) whose version grows by one per
// update; an update names the version it applies to. A receiver applies an update only at that
// version. Anything else — a gap (the transport dropped an update under back-pressure, a peer
// that was not a neighbour before, a restart, a corrupt message) — makes it ask the owner for
// its public copy and drop the stream's updates until the answer arrives (re-asking every
// `snapshot_retry`); the copy is not mixed meanwhile. Tracking never silently drifts. A stream
// whose version 0 is the cluster's seeded initial model (every node that started with the run)
// says so, and receivers then start it from that model without a snapshot.
//
// The initial model is kept only while a stream may still start from it (MaybeReleaseInitial).
//
// Replay: the owner keeps its latest updates' encoded bytes, at most a dense snapshot's worth. A
// requester that still holds the copy at some version (or the seeded initial model, version 0)
// says so, and when the log holds every update after it the owner sends those updates again
// instead of the dense snapshot, which costs more: a stream joined a few rounds late (a
// neighbour learned of after the first rounds) or a dropped update on a thin link then costs a
// few compressed updates, not a dense model (as a replicated log ships its entries and falls
// back to a snapshot only once they are compacted away). Replays share the snapshots' rate.
//
// Trackers: a node sends q_i to every node that may mix x̂_i: the union of PeersFor's send_to
// over one period of the topology (ring and random: the neighbours of the current view; the
// exponential graph: its ceil(log2 P) out-peers). The random topology is drawn once per view
// here (round 0), since a stream needs stable readers.
//
// Divergence guard (§3.4): every `guard_window` rounds the mean consensus distance
// ‖Σ_j w_ij (x̂_j − x̂_i)‖ of the window is compared with the previous window's; when it grew for
// `guard_checks` windows in a row while the relative distance (over ‖x̂_i‖) is above
// `guard_floor`, γ is halved (and the event reported), down to `min_gamma`. The floor keeps the
// guard quiet while SGD drives models apart from a common start (relative distances of a few
// percent); a diverging iteration sits near 1.
//
// Robust mixing: one faulty or hostile peer must not destroy the others' models. An
// update whose norm exceeds `outlier_factor` × the sender's recent update norms (an exponential
// average; for a stream's first update, this node's own; before this node's first round, none)
// and half of ‖x̂_i‖ is refused
// (kOutlier) and leaves a gap in the stream, so the next update brings a snapshot request. A
// public-copy snapshot is taken only when asked for, and only within `snapshot_distance` ×
// ‖x̂_i‖ of this node's public copy (an honest copy is within a few percent; two independently
// initialized models about √2). Both bounds must be exceeded: quantizers send runs of empty
// updates and then a full one (onebit near consensus), and one SGD step moves a model by far
// less than half its norm. An honest update refused by the rule costs one snapshot.
//
// Clipped mixing (ClippedGossip: He, Karimireddy, Jaggi 2022, arXiv 2202.01545, §4's adaptive
// radius): the bounds above stop what is far beyond any honest update, but a member with valid
// credentials can send, every round, an update just under them that pushes the same way. So in
// each round's consensus step every mixed term x̂_j − x̂_i is clipped to a radius τ taken from
// this round's own evidence: the mixing peers sorted by ‖x̂_j − x̂_i‖, τ is the distance at
// which the nearer peers hold 1 − `clip_fraction` of the round's mixing weight. The farther
// peers (at most that fraction of the weight) then pull with at most τ each: one neighbour's
// influence per round is bounded by what the nearer, honest ones differ by, not by the model's
// norm. Clipping w (x̂_j − x̂_i) to τ is w · min(1, τ / ‖x̂_j − x̂_i‖) (x̂_j − x̂_i), so it scales
// the term's weight; the weight removed stays with this node. With one mixing peer there is no
// second opinion and nothing is clipped. An honest but far peer (just caught up, or restarted)
// is clipped as well, which slows its mixing and keeps the iteration convergent (the paper's
// Theorem 1 covers clipping of honest neighbours). Each node clips on its own τ, so the weights
// are no longer symmetric and the iteration no longer keeps the cluster's average exactly (two
// ends of a link may clip it differently): with an outer optimizer's momentum and models far
// apart (exact gossip, γ = 1, models 30 % apart with no gradient noise) the mean's drift is
// amplified and the iteration can diverge; on real training, common or per-node initialization,
// the accuracy was unchanged (docs/security.md). Cost: one distance pass per mixed copy.
// A term clipped to under a quarter of its length (‖x̂_j − x̂_i‖ > 4τ) is counted for its peer
// (far_clipped): an honest ring's distances differ by less, so a peer counted in most rounds is
// one that pulls far from the others, and the reports name it.
// What it cannot stop: a majority of the mixing weight hostile; and a hostile peer that sits
// nearer than the honest ones sets a small τ, which slows consensus without moving the model.
//
// Bounded state: at most `max_copies` copies, the mixing peers' first; public-copy
// snapshots served at a bounded rate, so invented or runaway peers cost bounded memory.
//
// Device residence: x, x̂_i, the copies x̂_j and every scratch vector of a round live
// in the memory of `options.device` and all arithmetic on them runs there (kernels/gossip_ops.h,
// kernels/compress_ops.h): on a GPU only q_i goes down per round (compressed, by
// coding::DeviceCompressor) and only received updates go up; dense vectors cross only as snapshots.
// A device operation that fails (a GPU fault, device memory exhausted by a new copy) is fatal: the
// process cannot go on with a faulted context.
//
// Thread safety: none; one thread (the node's training thread) drives it.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/memory_use.h"
#include "base/status.h"
#include "base/token_bucket.h"
#include "coding/compressor.h"
#include "coding/device_compressor.h"
#include "coding/update.h"
#include "coding/update_codec.h"
#include "gossip/envelope.h"
#include "gossip/peer_sampling.h"
#include "kernels/device.h"
#include "kernels/memory.h"

namespace murmur::gossip {

// γ when none is configured, per operator: 1 for lossless or nearly lossless operators (CHOCO
// is then exact gossip), the tuned values of the CHOCO experiments for QSGD, and for top-k / DGC
// a value that grows with the kept fraction: 0.05 at 1 % (docs/algorithms.md §3.4 gives 0.04 for
// convex logistic regression on a ring of 9; for the MLP on a ring of 8, 0.05 gave the lowest
// consensus distance of 0.02–0.4 in bench/gossip_bench.sh, and 0.4 drove the guard to act).
double DefaultGamma(const coding::CompressorOptions& compressor);
// Whether an operator's kept fraction can be scaled round by round (top-k; DGC's warm-up sets its
// own): ChocoGossip::SetDensityFactor.
bool DensityScalable(const coding::CompressorOptions& compressor);

struct ChocoOptions {
  NodeId self = 0;
  Incarnation incarnation = 0;
  uint32_t dimension = 0;
  coding::CompressorOptions compressor;  // error feedback is turned off: x − x̂ is the memory
  double gamma = 0;                      // 0: DefaultGamma(compressor)
  PeerSamplingOptions sampling;
  Duration snapshot_retry = std::chrono::seconds(2);
  int guard_window = 10;
  int guard_checks = 3;
  double guard_floor = 0.25;
  double min_gamma = 1e-4;
  double outlier_factor = 10;     // 0: no norm check
  double snapshot_distance = 4;   // 0: no distance check
  // Clipped mixing (see the header comment): the fraction of a round's mixing weight, farthest
  // peers first, whose terms are clipped to the nearer peers' distance. In [0, 1); 0: off.
  double clip_fraction = 0.5;
  // Per-sender state is bounded: at most this many copies x̂_j (a dense model each). When full,
  // a stream from one of this node's mixing peers takes the place of the least recently updated
  // copy of a peer it does not mix; any other new stream is refused (kNotTracked). Public-copy
  // snapshots are served at most `snapshot_burst` at once and `snapshots_per_s` on average.
  size_t max_copies = 16;
  double snapshots_per_s = 2;
  double snapshot_burst = 4;
  // Where the vectors live (see the header comment).
  kernels::Device device;
  // Compress with coding::DeviceCompressor on `device` instead of coding::Compressor on the host.
  // Implied by a GPU; on the CPU it runs the device path's host kernels, which is how the CPU
  // test suite checks that path bit for bit against the host one.
  bool device_compressor = false;

  Status Validate() const;
};

// A received CHOCO message (header already decoded and checked by the node).
struct ChocoIncoming {
  NodeId from = 0;
  Incarnation incarnation = 0;
  Payload payload;                   // UpdateHeader, SnapshotRequest (model = false) or SnapshotReply
  std::span<const std::byte> frame;  // the encoded update or snapshot; empty for a request
};

struct ChocoOutgoing {
  NodeId to = 0;
  Payload payload;  // UpdateHeader, SnapshotRequest or SnapshotReply
  // Encoded update or snapshot (coding::EncodeUpdate bytes), shared by all receivers of one
  // round; null for a request.
  std::shared_ptr<const std::vector<std::byte>> frame;
};

// What Step did with a message; the node counts each.
enum class ChocoVerdict : uint8_t {
  kApplied,           // an update applied, or a snapshot installed
  kDuplicate,         // an update the copy already holds
  kGap,               // the copy is not at the update's base version: a snapshot was requested
  kAwaitingSnapshot,  // dropped while a snapshot of that stream is on its way
  kStaleIncarnation,  // from an older life of the sender
  kSnapshotServed,    // a snapshot request answered with a dense snapshot
  kReplayServed,      // a snapshot request answered with the updates after the requester's version
  kRejected,          // undecodable or inconsistent (see `status` and `failure`)
  kOutlier,           // refused by robust mixing (see the header comment)
  kNotTracked,        // a new stream while max_copies are held and the sender is not mixed
  kRateLimited,       // a snapshot request beyond the snapshot rate
  kClosed,            // an update or snapshot after this node's training ended (Close): dropped
};
inline constexpr int kChocoVerdictCount = 12;
const char* ChocoVerdictName(ChocoVerdict verdict);

struct ChocoStepResult {
  ChocoVerdict verdict = ChocoVerdict::kApplied;
  Status status;                                          // set for kRejected
  coding::DecodeFailure failure = coding::DecodeFailure::kNone;
};
// The reason a refused message is counted under (node_io.h: kRejectOutlier, kRejectUntracked,
// kRejectSnapshotRate, the decoder's failure or kRejectProtocol); empty for a verdict that
// accepts the message.
std::string_view ChocoRefusal(const ChocoStepResult& result);

struct ChocoRoundStats {
  size_t sent_values = 0;         // entries of q_i
  size_t encoded_bytes = 0;       // size of q_i on the wire (per receiver)
  size_t trackers = 0;            // receivers of q_i
  size_t mixed = 0;               // peers whose copies took part in the consensus step
  size_t missing = 0;             // peers to mix whose copies are not ready (weight kept)
  size_t clipped = 0;             // mixed peers whose term was clipped (clipped mixing)
  size_t far_clipped = 0;         // ... to under a quarter of its length
  double consensus_distance = 0;  // ‖Σ_j w_ij d_j (x̂_j − x̂_i)‖ / ‖x̂_i‖
  // ‖x_i − x̂_i‖ after the consensus step: what is not yet sent.
  double residual_norm = 0;
  bool gamma_halved = false;
};

class ChocoGossip {
 public:
  // `public_copy` is x̂_i at version 0: the seeded initial model when `from_initial` (then
  // `initial_model` is the same vector), or the model a joining node adopted. `initial_model` is
  // what streams that start from the cluster's initial model begin at. Both are host memory.
  // kUnavailable / kResourceExhausted when the device cannot hold them.
  static StatusOr<std::unique_ptr<ChocoGossip>> Create(const ChocoOptions& options,
                                                       std::span<const float> public_copy,
                                                       std::span<const float> initial_model,
                                                       bool from_initial);

  // One message from a peer.
  ChocoStepResult Step(const ChocoIncoming& message, TimePoint now);

  // One round (see the header comment). `x` is x_half on entry and the mixed model on return,
  // in the memory of options().device (as are `out`, public_copy() and CopyOf() below).
  // `view` is the live view (sorted, with this node). `damping(j)` scales w_ij (1 = none); the
  // weight removed stays with this node. kInvalidArgument (and nothing changes) when x has a
  // NaN or infinity, or the wrong size.
  StatusOr<ChocoRoundStats> Round(std::span<float> x, const std::vector<NodeId>& view,
                                  uint64_t round, const std::function<double(NodeId)>& damping);
  // Round in its two halves: Publish is steps 2–4 (q_i, x̂_i, output), Mix is step 5. A
  // synchronous simulation publishes on every node and delivers before anyone mixes, which is
  // the paper's iteration exactly; the node runtime calls them in a row (Round's order), with
  // its observer told in between.
  StatusOr<ChocoRoundStats> Publish(std::span<float> x, const std::vector<NodeId>& view,
                                    uint64_t round);
  void Mix(std::span<float> x, const std::vector<NodeId>& view, uint64_t round,
           const std::function<double(NodeId)>& damping, ChocoRoundStats& stats);

  std::vector<ChocoOutgoing> TakeOutput();

  // The weighted average of this node's mixing peers' public copies (ready ones only, renormalized
  // over their weights) into `out`: what a straggler adopts to catch up without a transfer.
  // False (and `out` untouched) when no mixing peer's copy is ready.
  bool NeighbourAverage(const std::vector<NodeId>& view, std::span<float> out);

  // Who this node mixes with in `round` and with what weights (the random topology is fixed per
  // view here); empty when `view` lacks this node. The node's soft-sync gate waits on these.
  RoundPeers Peers(const std::vector<NodeId>& view, uint64_t round) const;
  // The ids of Peers(view, round).receive_from: whose updates this node mixes in that round.
  std::vector<NodeId> MixingPeers(const std::vector<NodeId>& view, uint64_t round) const {
    std::vector<NodeId> out;
    for (const auto& n : Peers(view, round).receive_from) out.push_back(n.id);
    return out;
  }

  // Who may mix this node's public copy (the receivers of q_i; see "Trackers" above).
  std::vector<NodeId> Trackers(const std::vector<NodeId>& view, uint64_t round) const;

  // Forgets the copy of `id` (a member that left or died).
  void Forget(NodeId id);

  // Training is over (the consensus finish begins): what only mixing needs is released — the
  // neighbours' copies, the initial model, the sent and received updates, the compressor and the
  // scratch — so the finish's buffers do not come on top of them. The public copy and the replay
  // log stay, to answer peers that still train (requests are served as before); their updates
  // and snapshots are dropped (kClosed). Invariant: no round after Close (CHECKed).
  void Close();
  bool closed() const { return closed_; }

  // Whether SetDensityFactor may scale the operator's kept fraction (DensityScalable below).
  bool DensityScalable() const;
  // Keeps `factor` (1 or 2) times the operator's fraction from the next Publish on, and, where γ
  // is the operator's default, takes the default for that fraction (the guard's halvings kept):
  // GossipNode's schedule for small clusters (GossipNodeOptions::local_steps 0). REQUIRES
  // factor 1, or DensityScalable().
  void SetDensityFactor(int factor);
  int density_factor() const { return density_factor_; }

  const ChocoOptions& options() const { return options_; }
  double gamma() const { return gamma_; }
  uint64_t version() const { return version_; }
  std::span<const float> public_copy() const { return public_.span(); }
  // The copy of `id`'s public copy, empty when none is ready (tests compare them bit for bit).
  std::span<const float> CopyOf(NodeId id) const;
  // x̂_i copied to the host (a dense snapshot; on the CPU a plain copy).
  std::vector<float> PublicCopyOnHost() const;
  uint64_t CopyVersion(NodeId id) const;
  uint64_t gamma_halvings() const { return gamma_halvings_; }
  // Mixed terms clipped by clipped mixing, over the run.
  uint64_t clipped_terms() const { return clipped_terms_; }
  // Per mixing peer: its terms clipped to under a quarter of their length (see the header
  // comment). Entries only for peers with a copy (Forget drops one's).
  const std::map<NodeId, uint64_t>& far_clipped() const { return far_clipped_; }
  // Its buffers (base/memory_use.h): choco_public, choco_copies, initial_model, replay_log,
  // update (q_i, or the update received), compressor (its own vectors) and round_scratch (x − x̂
  // on a device, a snapshot being checked, staging).
  void AddMemory(MemoryUse& memory) const;

 private:
  struct Copy {
    Incarnation incarnation = 0;
    uint64_t version = 0;
    bool valid = false;  // `values` hold the sender's public copy at `version`
    bool ready = false;  // valid and not behind a gap: mixed
    bool requested = false;
    TimePoint requested_at{};
    int snapshots_asked = 0;      // requests not answered yet (at most 8 counted)
    double norm_average = 0;      // of applied updates
    uint64_t norms = 0;
    uint64_t last_update = 0;     // update_counter_ at its latest message
    kernels::Buffer<float> values;
  };

  explicit ChocoGossip(const ChocoOptions& options);
  // dst = src (memory of the device), allocating dst on first use.
  void Assign(kernels::Buffer<float>& dst, std::span<const float> src) const;
  // x += alpha · update on the device.
  void Add(const coding::Update& update, std::span<float> x);
  StatusOr<kernels::Buffer<float>> Upload(std::span<const float> host) const;
  // Room for a new copy of `from` (evicting one of a peer not mixed when full); false: none.
  // Whether a copy of `from` can be held: room, or one of a peer not mixed to evict for a mixing
  // peer; MakeRoom evicts it (the least recently updated) and says the same.
  bool CanAdmit(NodeId from) const;
  bool MakeRoom(NodeId from);
  std::map<NodeId, Copy>::const_iterator Victim() const;
  // An update or snapshot for `copy` (the tracked one, or a fresh one staged by Step).
  ChocoStepResult OnCopyMessage(const ChocoIncoming& m, Copy& copy, TimePoint now);
  ChocoStepResult OnUpdate(const ChocoIncoming& m, const UpdateHeader& h, Copy& copy, TimePoint now);
  ChocoStepResult OnSnapshot(const ChocoIncoming& m, const SnapshotReply& h, Copy& copy);
  ChocoStepResult ServeRequest(const ChocoIncoming& m, const SnapshotRequest& request, TimePoint now);
  // Appends an update to the replay log, dropping the oldest beyond a dense snapshot's bytes.
  void Log(const UpdateHeader& header, std::shared_ptr<const std::vector<std::byte>> bytes);
  void RequestSnapshot(NodeId id, Copy& copy, TimePoint now);
  // Frees the initial model once it can serve no stream: every peer mixed last round has a copy,
  // and this node's own log no longer reaches version 0 (a peer's, of updates of the same
  // operator, no longer does either, so a stream that starts later costs a snapshot anyway).
  void MaybeReleaseInitial();
  bool Guard(double distance, double relative);
  // Clipped mixing over mix_copies_ and mix_weights_ (see the header comment).
  void Clip(ChocoRoundStats& stats);

  ChocoOptions options_;
  const kernels::Device device_;
  std::optional<coding::Compressor> host_compressor_;
  std::optional<coding::DeviceCompressor> device_compressor_;
  double gamma_;
  bool closed_ = false;
  int density_factor_ = 1;
  bool from_initial_ = false;
  uint64_t version_ = 0;
  kernels::Buffer<float> public_;
  kernels::Buffer<float> initial_;
  std::map<NodeId, Copy> copies_;
  std::vector<ChocoOutgoing> output_;
  // The replay log: consecutive updates ending at version_, oldest first.
  struct Logged {
    UpdateHeader header;
    std::shared_ptr<const std::vector<std::byte>> bytes;
  };
  std::deque<Logged> log_;
  size_t log_bytes_ = 0;
  // Scratch, on the device: x − x̂ (device compressor only), the consensus step's terms (GPU
  // only).
  kernels::Buffer<float> diff_;
  kernels::Buffer<float> terms_;
  // Peers() of the ring and random topologies for the view they were built for.
  mutable std::optional<std::vector<NodeId>> peers_view_;
  mutable RoundPeers peers_;
  std::vector<std::span<const float>> mix_copies_;  // a round's ready copies and their weights
  std::vector<double> mix_weights_;
  std::vector<NodeId> mix_ids_;                           // whose copy each of mix_copies_ is
  std::vector<std::pair<double, size_t>> mix_distances_;  // ‖x̂_j − x̂_i‖ and j, for Clip
  uint64_t clipped_terms_ = 0;
  std::map<NodeId, uint64_t> far_clipped_;
  kernels::Buffer<float> incoming_;  // a snapshot being checked
  coding::DeviceUpdateStaging staging_;
  // q_i of a round, or an update or snapshot received: one at a time (Publish uses it no longer
  // than Step does), so one buffer.
  coding::Update update_;
  // Divergence guard.
  double window_sum_ = 0;
  double window_relative_ = 0;
  int window_rounds_ = 0;
  double previous_window_ = -1;
  int growing_windows_ = 0;
  uint64_t gamma_halvings_ = 0;
  // Bounded per-sender state.
  std::vector<NodeId> mixing_;  // peers mixed in the latest round, sorted
  uint64_t update_counter_ = 0;
  TokenBucket snapshots_served_;
  // Robust mixing.
  double own_norm_average_ = 0;
  uint64_t own_norms_ = 0;
  double public_norm_ = 0;
};

}  // namespace murmur::gossip
