#pragma once
// The parameter-server baselines (`--mode ps`; docs/algorithms.md §1, the source documents' "who
// aggregates" axis) as two sans-IO protocol machines that gossip::SyncNode hosts, as it hosts
// TreeAggregator and RingAllReduce (coded_reduce.h): the same actions (CodedSend,
// ComputeRequest, Aggregated), the same CodedMessage frames.
//
// Ranks: servers are ranks 0..K-1, workers K..K+N-1. Server k owns the contiguous slice
// PsSlice(d, K, k) of the model; a worker pushes slice k of every gradient to server k and pulls
// slice k of the model from it. Worker w's part of an iteration is positions [B w/N, B (w+1)/N)
// of its iteration's B (the same samples ring all-reduce gives rank w).
//
//   full       bulk synchronous: server k sums iteration t's slices from every live worker and
//              emits Aggregated{t} with weight 1 / (positions summed), the mean gradient ring
//              all-reduce computes; once applied, the model t+1 goes to every live worker.
//              Backup workers (Chen et al. 2016, "Revisiting Distributed Synchronous SGD",
//              §3): with b > 0 the server steps with the first N - b gradients; the others of t
//              arrive late and are dropped (counted), and their workers compute t+1 next.
//   async      every gradient is applied as it arrives, in arrival order (Hogwild-style
//              asynchronous SGD, Dean et al. 2012), with weight 1 / B: a worker's B/N positions
//              count as they would in the synchronous step, so N arrivals move the model as one
//              synchronous step. The reply is the server's model after that gradient, which the
//              worker computes on next. Staleness τ = the server's updates since the version the
//              gradient was computed on; with staleness_lr the step is scaled by 1 / max(1, τ)
//              (Zhang et al., IJCAI 2016, "Staleness-aware Async-SGD", §3.1).
//   ssp:S      stale-synchronous parallel (Ho et al., NIPS 2013, §2): as async, but the reply to a
//              worker that has pushed more than S gradients beyond the slowest live worker waits
//              until the slowest catches up (S = 0: lock-step).
// Momentum under async and ssp (PsMomentum):
//   server     one velocity for the whole stream of gradients (the textbook asynchronous server;
//              asynchrony adds momentum of its own, Mitliagkas et al. 2016).
//   dana       DANA-Zero (Hakimi et al. 2019, "Taming Momentum in a Distributed Asynchronous
//              Environment", §4): a velocity per worker, v_w = μ v_w + g_w / B, the step
//              θ -= lr v_w, and the reply the look-ahead θ - lr μ Σ_w v_w: where the model will be
//              once every worker's momentum has moved it again, so a gradient computed there is
//              less stale when it lands. With one worker it is Nesterov's momentum. It costs N
//              velocities of the server's slice (bounded: kMaxDanaBytes).
// A worker that dies is dropped from every count once the membership says so (DropWorker). The
// server is the single point of failure: SyncNode fails the run when one is gone.
// Thread safety: none; one driver thread per machine.

#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "coding/compressor.h"
#include "coding/update.h"
#include "gossip/coded_reduce.h"
#include "kernels/device.h"
#include "kernels/memory.h"

namespace murmur::gossip {

enum class PsSync : uint8_t { kFull, kAsync, kSsp };
enum class PsMomentum : uint8_t { kServer, kDana };

// Host bytes a server may spend on DANA's per-worker velocities (N x its slice x 4 bytes).
inline constexpr size_t kMaxDanaBytes = size_t{1} << 30;

// How a server waits for its workers (the key ps_sync).
struct PsSyncSpec {
  PsSync sync = PsSync::kFull;
  int64_t ssp_bound = 0;
};
// "full", "async" or "ssp:S" (S >= 0); kInvalidArgument with the reason otherwise.
StatusOr<PsSyncSpec> ParsePsSync(std::string_view text);

// The parameter server's shape (SyncPlan::ps).
struct PsOptions {
  int64_t servers = 1;  // K
  PsSync sync = PsSync::kFull;
  int64_t ssp_bound = 0;      // S, for kSsp
  int64_t backup = 0;         // b, for kFull: step with the first N - b gradients
  bool staleness_lr = false;  // async, ssp: the step scaled by 1 / max(1, staleness)
  PsMomentum momentum = PsMomentum::kServer;  // async, ssp: whose velocity a gradient moves
};

// "full", "full, backup 1", "async, staleness lr", "ssp:2", ...
std::string PsDescription(const PsOptions& options);
// kInvalidArgument when the options do not fit N workers.
Status ValidatePs(const PsOptions& options, int64_t workers);
// [begin, end) of server k's slice of a d-dimensional model.
std::pair<size_t, size_t> PsSlice(size_t dimension, int64_t servers, int64_t server);

class PsServer {
 public:
  struct Options {
    int64_t server = 0;  // k (its rank)
    int64_t workers = 1;
    int64_t batch = 1;       // B
    uint32_t dimension = 0;  // d, the whole model
    PsOptions ps;
    double momentum = 0;  // μ, for PsMomentum::kDana
    kernels::Device device = kernels::Device::Cpu();
  };
  // `slice` is this server's slice of the initial model (host). kInvalidArgument when DANA's
  // velocities would exceed kMaxDanaBytes.
  static StatusOr<PsServer> Create(Options options, std::span<const float> slice);

  // A gradient slice pushed by worker rank `from` (header: kPartialGradient, iteration = the
  // server version it was computed on).
  void Step(int64_t from, const CodedMessage& header, std::span<const float> vector);
  // The node applied the last Aggregated at learning rate `lr`; `slice` is this server's slice of
  // the model after it.
  void Applied(std::span<const float> slice, double lr);
  // Worker rank `rank` is gone: no longer waited for or answered.
  void DropWorker(int64_t rank);

  std::vector<CodedAction> TakeOutput();
  const CodedStats& stats() const { return stats_; }
  uint64_t version() const { return version_; }  // updates applied
  size_t live_workers() const { return live_.size(); }
  std::pair<size_t, size_t> range() const { return range_; }
  bool dana() const { return !velocities_.empty(); }

 private:
  PsServer(Options options, std::span<const float> slice);
  int64_t Worker(int64_t rank) const { return rank - options_.ps.servers; }
  int64_t Positions(int64_t worker) const;
  bool MayProceed(int64_t worker) const;
  void Reply(int64_t worker);
  void TryCut();
  void Release();

  const Options options_;
  const std::pair<size_t, size_t> range_;
  std::vector<float> model_;  // host: this server's slice after the latest update
  uint64_t version_ = 0;
  std::set<int64_t> live_;       // live workers (worker indices)
  std::vector<int64_t> pushes_;  // gradients received per worker
  // full: iteration version_'s sum so far (double), who is in it and how many positions;
  // dana: Σ_w v_w.
  std::vector<double> sum_;
  std::vector<float> rounded_;  // sum_ in float, for the device (sized once)
  std::set<int64_t> got_;
  int64_t positions_ = 0;
  bool applying_ = false;          // an Aggregated is out and Applied has not come yet
  std::optional<int64_t> answer_;  // async, ssp: the worker whose gradient is being applied
  std::set<int64_t> deferred_;     // ssp: replies held by the staleness bound
  // dana: each live worker's velocity (host), their sum in sum_, and the last step's rate.
  std::vector<std::vector<float>> velocities_;
  std::vector<float> reply_;  // the look-ahead model (sized once)
  double lr_ = 0;
  kernels::Buffer<float> result_;  // on the device: what Aggregated points at
  std::vector<CodedAction> actions_;
  CodedStats stats_;
};

class PsWorker {
 public:
  struct Options {
    int64_t rank = 0;
    int64_t workers = 1;
    uint32_t dimension = 0;
    PsOptions ps;
    // Pushes compressed with this operator and error feedback, a residual per server slice
    // (Seide et al. 2014; Karimireddy et al. 2019); none: dense fp32.
    std::optional<coding::CompressorOptions> compress;
  };
  // kInvalidArgument when the compressor does not fit a slice.
  static StatusOr<PsWorker> Create(Options options, std::vector<float> initial_model);

  // Asks for the first computation (iteration 0 on the initial model).
  void Start();
  // A model slice from server rank `from` (header: kModel, iteration = the server's version,
  // tree_position = the server).
  void Step(int64_t from, const CodedMessage& header, std::span<const float> vector);
  // This worker's gradient for the computation asked for (device memory, read now).
  void Step(const OwnPart& own, const kernels::Device& device);

  std::vector<CodedAction> TakeOutput();
  const CodedStats& stats() const { return stats_; }
  int64_t worker() const { return options_.rank - options_.ps.servers; }
  // What the compressors have not sent yet, over the whole model (empty when not compressing).
  std::vector<float> residual() const;

 private:
  PsWorker(Options options, std::vector<float> initial_model);

  Options options_;
  std::vector<coding::Compressor> compressors_;  // one per server, when compressing
  coding::Update update_;
  std::vector<float> model_;       // host: the newest slice from every server
  std::vector<uint64_t> version_;  // per server: the version of its slice in model_
  std::vector<float> gradient_;    // host copy of the own part
  uint64_t current_ = 0;           // the iteration asked for last
  uint64_t answered_ = 0;          // servers whose reply came since the last push (bitmask)
  uint64_t clock_ = 0;             // gradients pushed
  std::vector<CodedAction> actions_;
  CodedStats stats_;
};

}  // namespace murmur::gossip
