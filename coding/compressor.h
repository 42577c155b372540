#pragma once
// Compression operators C with error feedback: dense float vector in, Update out (update.h),
// to be encoded by update_codec.h. One Compressor per stream of updates (per node and
// neighbour set in CHOCO, per tensor in DGC); it owns that stream's residual.
//
// Operators (spec syntax `name[:parameter][,key=value...]`, see ParseCompressorSpec):
//   none            dense fp32, the reference
//   fp16            dense, fp16 precision (10-bit mantissa, 5-bit exponent window)
//   topk:R          exact top ceil(R d) by magnitude, ties by lower index
//   dgc:R           DGC sampled-threshold top-k (selection.h; docs/algorithms.md §4.3)
//   threshold:T     every |v| >= T, values sent
//   onebit:T        Strom 2015: every |v| >= T sent as sign only, magnitude T (docs/algorithms.md §5.1)
//   qsgd:S          QSGD (Alistarh et al. 2017): unbiased stochastic rounding of |v|/||v||_2 to
//                   S levels, sign per value; rescale=on scales it by 1/(1 + min(d/S^2,
//                   sqrt(d)/S)), the biased but contractive form CHOCO-SGD uses (docs/algorithms.md
//                   §3.1)
//   int8            the same with 127 levels of max|v|: 8 bits per value, unbiased
// Keys: values=fp32|fp16 (topk, dgc, threshold); adaptive=on with band=MIN..MAX and
// decay=RHO (threshold, onebit: DL4J's controller, docs/algorithms.md §5.3); sample=F, aim=A,
// lower=L, adapt=N (dgc); ef=on|off (error feedback, default on); clip=M and clip_every=N (clip the
// residual to M times the current threshold every N steps, as DL4J does; topk, dgc,
// threshold, onebit); seed=N (dgc sampling, qsgd/int8 rounding).
//
// Error feedback (Strom 2015; Stich et al. 2018): residual r starts at 0; each step compresses
// r + input and keeps r + input - update, so nothing is lost, only delayed: the sum of all
// updates plus r equals the sum of all inputs (to float rounding).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "coding/selection.h"
#include "coding/update.h"

namespace murmur::coding {

namespace internal {
struct LevelPass;
}  // namespace internal

struct AdaptiveThresholdOptions {
  double min_density = 1e-4;           // fraction of entries sent; below: lower tau
  double max_density = 1e-2;           // above: raise tau
  double decay = 0.96593632892485933;  // 0.5^(1/20): a factor 2 every 20 steps
};

// DL4J's AdaptiveThresholdAlgorithm: keeps the sent fraction inside a band by multiplying tau
// by decay (too sparse) or 1/decay (too dense) after each step.
class AdaptiveThreshold {
 public:
  AdaptiveThreshold(float initial_tau, AdaptiveThresholdOptions options)
      : tau_(initial_tau), options_(options) {}
  float tau() const { return tau_; }
  // Feeds the density of the update just sent.
  void Observe(double density);

 private:
  float tau_;
  AdaptiveThresholdOptions options_;
};

struct CompressorOptions {
  Operator op = Operator::kTopK;
  double ratio = 0.01;     // topk, dgc: fraction of entries sent
  float tau = 1e-3f;       // threshold, onebit: the threshold (initial, when adaptive)
  uint32_t levels = 16;    // qsgd
  bool rescale = false;    // qsgd: the contractive, biased form
  int mantissa_bits = 23;  // 23 (fp32) or 10 (fp16) values for topk, dgc, threshold
  bool adaptive = false;
  AdaptiveThresholdOptions adaptive_options;
  SampledTopKOptions sampled;
  bool error_feedback = true;
  double clip_multiple = 0;  // 0: no residual clipping
  int clip_every = 5;
  uint64_t seed = 1;
};

// Parses a spec such as "topk:0.01,values=fp16" or "onebit:1e-3,adaptive=on". Errors name the
// offending part and what is allowed.
StatusOr<CompressorOptions> ParseCompressorSpec(std::string_view spec);
// The canonical spec of `options` (parses back to the same options).
std::string CompressorSpec(const CompressorOptions& options);

class Compressor {
 public:
  // kInvalidArgument for options that do not fit (a ratio outside (0, 1], a clip on an operator
  // without a threshold, a dimension above 2^32 - 1).
  static StatusOr<Compressor> Create(const CompressorOptions& options, size_t dimension);

  // out = C(residual + input) with error feedback, C(input) without. A wrong size or a
  // non-finite input is kInvalidArgument and changes nothing (residual, threshold, rng).
  Status Compress(std::span<const float> input, Update& out);
  // The same, and `encoded` = EncodeUpdate(out). The dense operators (none, fp16) produce both
  // in one fused pass (dense_codec.h), the others encode after compressing. On an error
  // `encoded` holds unspecified contents, like `out`.
  Status Compress(std::span<const float> input, Update& out, std::vector<std::byte>& encoded);

  // Compress(a − b, out, encoded), the difference taken per entry in float: a CHOCO round's
  // x − x̂ (gossip/choco.h). Top-k without error feedback selects from a and b as it reads them
  // (TopKOfDifference), so the difference is never written; the other operators compress it from
  // a buffer of the compressor's. A non-finite difference is kInvalidArgument naming the first.
  Status CompressDifference(std::span<const float> a, std::span<const float> b, Update& out,
                            std::vector<std::byte>& encoded);

  // Changes the kept fraction of topk/dgc (DGC's warm-up, dgc.h). REQUIRES 0 < ratio <= 1.
  void SetRatio(double ratio);

  // Drops everything not yet sent.
  void ResetResidual();
  std::span<const float> residual() const { return residual_; }

  // The current threshold: tau for threshold/onebit, the smallest magnitude sent by the last
  // topk/dgc step, 0 for the others. Residual clipping is relative to it.
  float threshold() const { return threshold_; }
  uint64_t steps() const { return steps_; }
  size_t dimension() const { return residual_size_; }
  const CompressorOptions& options() const { return options_; }
  // Selection details of the last dgc step.
  const SampledTopKStats& last_sampled_stats() const { return sampled_stats_; }
  // Bytes of the compressor's own vectors (residual, spare sums, the difference).
  uint64_t HeldBytes() const {
    return (residual_.capacity() + spare_.capacity() + difference_.capacity()) * sizeof(float);
  }

 private:
  Compressor(const CompressorOptions& options, size_t dimension);
  // False when source holds a NaN or infinity (then nothing but `out` and spare_ changed). With
  // a `subtrahend` (top-k only) the source is source − subtrahend; with an `addend` it is
  // source + addend, written into spare_ (sized to match) as it is selected from.
  bool Select(std::span<const float> source, Update& out, std::span<const float> subtrahend = {},
              std::span<const float> addend = {});
  // Both Compress overloads: `encoded` is null for the one without bytes.
  Status CompressInto(std::span<const float> input, Update& out, std::vector<std::byte>* encoded);
  // What error feedback's sum pass learned of the source, for the quantizers' scales.
  struct SourceFacts {
    static constexpr uint32_t kUnknown = 0xFFFFFFFFu;
    uint32_t largest_bits = kUnknown;    // the largest magnitude's bits
    std::optional<double> squared_norm;  // SquaredL2Norm(source)
  };
  // False when source holds a NaN or infinity (then nothing but `out` changed). With an
  // `encoded` output int8 writes its bytes (encoded_fresh_). With error feedback, source is the
  // residual and `addend` the input: their sums (finite, described by `facts`) are quantized
  // and the residual becomes sum - value.
  bool Quantize(std::span<const float> source, SourceFacts facts, Update& out,
                std::vector<std::byte>* encoded, std::span<const float> addend = {});
  // The quantizer's scale (QSGD: the L2 norm; int8: max |v|); none for a non-finite source.
  std::optional<double> QuantizerScale(std::span<const float> source, SourceFacts facts) const;
  // The sparse form, tried first: true when it fit (then done); else the residual holds every
  // sum and `pass` reads it alone.
  bool QuantizeSparseFirst(internal::LevelPass& pass, Update& out, float* residual);
  // The dense form (int8 writes its wire bytes in the same pass), sparsified if smaller.
  void QuantizeDenseForm(const internal::LevelPass& pass, Update& out,
                         std::vector<std::byte>* encoded, float* residual, bool tabled);
  // Error feedback's residual + input for the operators that do not select: false (nothing
  // changed) when a sum is not finite; else `facts` describe the sums and, but for the
  // quantizers, the sums are the residual.
  bool SumWithResidual(std::span<const float> input, SourceFacts& facts);
  // The operator's pass into `out`; false (out cleared) when it met a NaN or infinity.
  bool Encode(std::span<const float> source, SourceFacts facts, std::span<const float> input,
              std::span<const float> addend, Update& out, std::vector<std::byte>* encoded);
  size_t KeptCount() const;
  // The error for an input the sums refused: the first non-finite input entry, or the overflow.
  Status RefusedInput(std::span<const float> input) const;

  CompressorOptions options_;
  size_t residual_size_;
  std::vector<float> residual_;    // empty without error feedback
  std::vector<float> spare_;       // the next residual + input, before it is accepted
  std::vector<float> difference_;  // CompressDifference's a − b, where it is written
  AdaptiveThreshold adaptive_;
  float threshold_ = 0;
  uint64_t steps_ = 0;
  std::mt19937_64 rng_;
  SampledTopKStats sampled_stats_;
  // Whether the last Compress wrote `encoded` itself (int8's dense pass).
  bool encoded_fresh_ = false;
  // Whether the quantizer tries the sparse form first (the last step's levels were few).
  bool sparse_first_ = false;
};

}  // namespace murmur::coding
