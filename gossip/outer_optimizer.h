#pragma once
// The outer optimizer of local-update training (DiLoCo, Douillard et al. 2023, arXiv 2311.08105,
// §2 and Algorithm 1), decentralized: the all-reduce of the pseudo-gradients is a CHOCO round
// (choco.h), as NoLoCo (arXiv 2506.10911, §3) replaces it by averaging with peers.
//
// Every H inner steps, at a gossip round: the round mixes the model x with the neighbours'
// public copies, x̄ = x + γ Σ_j w_ij d_j (x̂_j − x̂_i) (choco.h); the averaged pseudo-gradient is
// Δ̄ = a − x̄, with a the anchor (the model at the previous outer step); then the outer step
//   v ← μ v + Δ̄;   a ← a − η (Δ̄ + μ v)  (Nesterov)   or   a ← a − η v  (momentum, SGD: μ = 0)
// and the next inner steps start from x = a. The inner optimizer's state stays local (DiLoCo §2).
// With exact all-to-all averaging and equal anchors, Δ̄ is the mean of the members' Δ_i = a − x_i:
// DiLoCo exactly. With η = 1 and μ = 0 it is local SGD with gossip (x = x̄).
//
// What the mix adds on a sparse graph. The neighbours' copies hold their anchors plus their inner
// progress, so the mix also pulls this node's anchor toward theirs (NoLoCo's anchor pull, §3.2).
// Rounds fall on the same steps of every member (the step clock's multiples of H), and a node
// mixes once its neighbours' updates of the same round are in, waiting at most a quarter of a
// round's steps and only for neighbours within a quarter round of it (GossipNode::RoundWaitOver); a later pseudo-gradient is mixed in the round it
// reaches, its weight scaled down by its staleness (soft_sync.h; asynchronous local SGD, Liu et
// al. 2024, arXiv 2401.09135, §3). That wait marks nobody: a peer that falls S behind is marked
// a straggler by the soft-sync gate, and is not waited for at rounds either.
//
// The anchor and the momentum buffer live in the memory of the model's device; arithmetic there
// (kernels::OuterStep). Not saved in checkpoints: a resumed or re-joined node restarts its anchor
// from its model with zero momentum.

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"
#include "kernels/device.h"
#include "kernels/memory.h"

namespace murmur::gossip {

enum class OuterMethod : uint8_t { kNesterov, kMomentum, kSgd };

// The defaults here are the defaults of every entry point (`--outer`'s schema default is
// OuterSpec(OuterOptions{}), `--outer nesterov` parses to them): H 80, η 0.9, μ 0.8 and 4 rounds,
// tuned on murmur's gossip (docs/algorithms.md, "Outer optimizer"); DiLoCo §3 used η 0.7, μ 0.9
// with an exact all-reduce of the pseudo-gradients.
struct OuterOptions {
  OuterMethod method = OuterMethod::kNesterov;
  int every = 80;          // H: inner steps per outer round
  double lr = 0.9;         // η
  double momentum = 0.8;   // μ; kSgd: 0
  // The local epoch from which outer rounds run; before it, plain CHOCO rounds at the node's own
  // H (a dense warm-up while the models move fast, Kong et al. 2021 §5).
  double start_epoch = 0;
  // At least this many outer rounds in a run with a sample budget: H is `every`, or, when the
  // node's share of the budget holds fewer than rounds × every steps, the largest power of two
  // at most share / rounds (at least 1), so members whose estimates differ still meet at rounds
  // (powers of two divide each other). 0: H is `every` however short the run.
  int rounds = 4;
  // Inner steps a round's exchange may overlap (Streaming DiLoCo, Douillard et al. 2025, arXiv
  // 2501.18512, §2.3: the outer step lands τ steps late): 0, the node waits for its neighbours'
  // updates before its next inner step (at most a quarter round); K > 0, it goes on stepping
  // and mixes once they are in, or after min(K, H − 1) steps. The mix and the outer step are
  // then those of the model at the round; the steps taken since are kept on top of the new
  // anchor (x ← a' + (x − x_round)).
  int overlap = 0;

  Status Validate() const;
};

// "none" (no outer optimizer) or METHOD[:KEY=VALUE,...] with METHOD nesterov, momentum or sgd
// and keys every (H, ≥ 1), lr (η, in (0, 10]), momentum (μ, in [0, 1); not for sgd), start
// (a local epoch, ≥ 0), rounds (≥ 0) and overlap (inner steps, ≥ 0). kInvalidArgument naming the
// spec and the key otherwise.
StatusOr<std::optional<OuterOptions>> ParseOuterSpec(std::string_view text);
// The spec of `options` (what ParseOuterSpec reads back), for reports and logs.
std::string OuterSpec(const std::optional<OuterOptions>& options);

// H for a node whose share of the run is `steps` steps (OuterOptions::rounds); `every` when the
// share is unknown (0) or long enough.
int OuterEvery(const OuterOptions& options, int64_t steps);

struct OuterStats {
  double delta_norm = 0;  // ‖Δ̄‖
  double relative = 0;    // ‖Δ̄‖ / ‖a‖ before the step (0 for a zero anchor)
};

class OuterOptimizer {
 public:
  // The anchor starts at `model` (device memory of `device`), the momentum at zero.
  static StatusOr<OuterOptimizer> Create(const OuterOptions& options, const kernels::Device& device,
                                         std::span<const float> model);

  // One outer step on `x` (the mixed model, device memory): x becomes the new anchor.
  // kInvalidArgument (nothing changed) when x has the wrong size or a NaN or infinity.
  StatusOr<OuterStats> Step(std::span<float> x);

  // The model was replaced (adopted from a peer, caught up, resumed): the anchor restarts from
  // it; the momentum, the cluster's direction, is kept.
  void Restart(std::span<const float> x);

  const OuterOptions& options() const { return options_; }
  uint64_t steps() const { return steps_; }
  std::span<const float> anchor() const { return anchor_.span(); }
  std::span<const float> velocity() const { return velocity_.span(); }

 private:
  OuterOptimizer(const OuterOptions& options, const kernels::Device& device)
      : options_(options), device_(device) {}

  OuterOptions options_;
  kernels::Device device_;
  kernels::Buffer<float> anchor_;
  kernels::Buffer<float> velocity_;
  uint64_t steps_ = 0;
};

}  // namespace murmur::gossip
