#include "coding/compressor.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <optional>

#include "base/check.h"
#include "base/lane_sum.h"
#include "coding/dense_codec.h"
#include "coding/level_codec.h"
#include "coding/operator_traits.h"
#include "coding/update_codec.h"
#include "coding/vector_ops.h"
#include "fmt/format.h"
#include "kernels/compress_ops.h"

namespace murmur::coding {
namespace {

using internal::HasRatio;
using internal::HasTau;
using internal::HasThreshold;
using internal::IsQuantizer;

// QSGD Lemma 3.1: E||Q(v) - v||^2 <= min(d/s^2, sqrt(d)/s) ||v||^2.
double QsgdVarianceFactor(size_t dimension, uint32_t levels) {
  const double d = static_cast<double>(dimension);
  const double s = levels;
  return std::min(d / (s * s), std::sqrt(d) / s);
}

}  // namespace

void AdaptiveThreshold::Observe(double density) {
  if (density < options_.min_density) {
    tau_ = static_cast<float>(tau_ * options_.decay);
  } else if (density > options_.max_density) {
    tau_ = static_cast<float>(tau_ / options_.decay);
  }
  // Keep tau a positive normal float whatever the stream of densities.
  tau_ = std::clamp(tau_, std::numeric_limits<float>::min(), std::numeric_limits<float>::max());
}

StatusOr<Compressor> Compressor::Create(const CompressorOptions& o, size_t dimension) {
  const std::string_view name = OperatorName(o.op);
  auto error = [name](std::string_view why) {
    return InvalidArgumentError(fmt::format("compressor {}: {}", name, why));
  };
  if (static_cast<int>(o.op) >= kOperatorCount) return error("unknown operator");
  if (dimension > UINT32_MAX) {
    return error(fmt::format("dimension {} exceeds 2^32 - 1", dimension));
  }
  if (HasRatio(o.op) && !(o.ratio > 0 && o.ratio <= 1)) {
    return error(fmt::format("ratio {} must be in (0, 1]", o.ratio));
  }
  if (HasTau(o.op) && !(o.tau > 0 && std::isfinite(o.tau))) {
    return error(fmt::format("threshold {} must be positive and finite", o.tau));
  }
  if (o.op == Operator::kQsgd && (o.levels < 1 || o.levels > (1u << 30))) {
    return error(fmt::format("levels {} must be in 1..2^30", o.levels));
  }
  if (o.op == Operator::kQsgd && o.error_feedback && !o.rescale) {
    const double variance = QsgdVarianceFactor(dimension, o.levels);
    if (variance >= 1) {
      return error(
          fmt::format("error feedback with unbiased qsgd diverges here (variance factor min(d/s^2, "
                      "sqrt(d)/s) = {:.3g} >= 1); use rescale=on or ef=off",
                      variance));
    }
  }
  if (o.mantissa_bits != 23 && o.mantissa_bits != 10) {
    return error(fmt::format("mantissa bits {} (23 for fp32 or 10 for fp16)", o.mantissa_bits));
  }
  if (o.adaptive) {
    if (!HasTau(o.op)) return error("adaptive threshold applies to threshold and onebit");
    const auto& a = o.adaptive_options;
    if (!(a.min_density > 0 && a.min_density < a.max_density && a.max_density <= 1)) {
      return error(
          fmt::format("band {}..{} must satisfy 0 < min < max <= 1", a.min_density, a.max_density));
    }
    if (!(a.decay >= 0.5 && a.decay < 1)) {
      return error(fmt::format("decay {} must be in [0.5, 1)", a.decay));
    }
  }
  if (o.op == Operator::kSampledTopK) {
    const auto& s = o.sampled;
    if (!(s.sample_fraction > 0 && s.sample_fraction <= 1)) {
      return error(fmt::format("sample fraction {} must be in (0, 1]", s.sample_fraction));
    }
    if (!(s.lower > 0 && s.lower <= 1)) {
      return error(fmt::format("lower bound {} must be in (0, 1]", s.lower));
    }
    if (s.max_adaptations < 0) return error("adapt must be >= 0");
    if (!(s.aim >= 1 && s.aim <= 4)) return error(fmt::format("aim {} must be in [1, 4]", s.aim));
  }
  if (o.clip_multiple < 0 || !std::isfinite(o.clip_multiple)) {
    return error(fmt::format("clip {} must be >= 0", o.clip_multiple));
  }
  if (o.clip_multiple > 0) {
    if (!HasThreshold(o.op)) {
      return error("residual clipping is relative to a threshold: topk, dgc, threshold, onebit");
    }
    if (!o.error_feedback) return error("residual clipping needs error feedback (ef=on)");
    if (o.clip_every < 1) return error(fmt::format("clip_every {} must be >= 1", o.clip_every));
  }
  return Compressor(o, dimension);
}

Compressor::Compressor(const CompressorOptions& options, size_t dimension)
    : options_(options),
      residual_size_(dimension),
      residual_(options.error_feedback ? dimension : 0, 0.0f),
      adaptive_(options.tau, options.adaptive_options),
      threshold_(HasTau(options.op) ? options.tau : 0.0f),
      rng_(options.seed) {}

void Compressor::SetRatio(double ratio) {
  MURMUR_CHECK(ratio > 0 && ratio <= 1) << "ratio " << ratio;
  options_.ratio = ratio;
}

void Compressor::ResetResidual() { std::fill(residual_.begin(), residual_.end(), 0.0f); }

size_t Compressor::KeptCount() const {
  const double k = std::ceil(options_.ratio * static_cast<double>(residual_size_));
  return std::min(residual_size_, static_cast<size_t>(std::max(k, 1.0)));
}

Status Compressor::RefusedInput(std::span<const float> input) const {
  const std::string_view name = OperatorName(options_.op);
  if (const auto bad = FirstNonFinite(input)) {
    return InvalidArgumentError(fmt::format(
        "compressor {}: input[{}] is {}; nothing was compressed", name, *bad, input[*bad]));
  }
  return InvalidArgumentError(
      fmt::format("compressor {}: residual + input overflows float; input rejected", name));
}

Status Compressor::Compress(std::span<const float> input, Update& out,
                            std::vector<std::byte>& encoded) {
  if ((options_.op == Operator::kNone || options_.op == Operator::kFp16) &&
      input.size() == residual_size_) {
    switch (internal::CompressEncodeDense(options_.op, input, residual_, out, encoded)) {
      case internal::DenseResult::kDone:
        ++steps_;
        return OkStatus();
      case internal::DenseResult::kNonFinite:
        return RefusedInput(input);
      case internal::DenseResult::kNotHandled:
        break;
    }
  }
  MURMUR_RETURN_IF_ERROR(CompressInto(input, out, &encoded));
  if (!encoded_fresh_) EncodeUpdate(out, encoded);
  return OkStatus();
}

Status Compressor::CompressDifference(std::span<const float> a, std::span<const float> b,
                                      Update& out, std::vector<std::byte>& encoded) {
  if (a.size() != b.size()) {
    return InvalidArgumentError(fmt::format("compressor {}: a difference of {} and {} values",
                                            OperatorName(options_.op), a.size(), b.size()));
  }
  if (options_.op != Operator::kTopK || options_.error_feedback || a.size() != residual_size_) {
    difference_.resize(a.size());
    for (size_t i = 0; i < a.size(); ++i) difference_[i] = a[i] - b[i];
    return Compress(difference_, out, encoded);
  }
  out.Clear(options_.op, static_cast<uint32_t>(residual_size_));
  if (!Select(a, out, b)) {
    out.Clear(options_.op, static_cast<uint32_t>(residual_size_));
    for (size_t i = 0; i < a.size(); ++i) {
      if (const float d = a[i] - b[i]; !std::isfinite(d)) {
        return InvalidArgumentError(
            fmt::format("compressor {}: input[{}] = {} - {} is {}; nothing was compressed",
                        OperatorName(options_.op), i, a[i], b[i], d));
      }
    }
    MURMUR_CHECK(false) << "a selection saw a non-finite value the difference lacks";
  }
  DensifyIfSmaller(out);
  ++steps_;
  EncodeUpdate(out, encoded);
  return OkStatus();
}

Status Compressor::Compress(std::span<const float> input, Update& out) {
  return CompressInto(input, out, nullptr);
}

// The sums residual + input of error feedback (quantizer or not; the selections form theirs as
// they select), checked: residual + input is NaN or infinite exactly when the input is or the
// sum overflows. Only sums that all pass become the residual, by a swap; the quantizers' sums
// are only read here (for their scale and finiteness) and formed again as they quantize.
bool Compressor::SumWithResidual(std::span<const float> input, SourceFacts& facts) {
  const bool quantizer = IsQuantizer(options_.op);
  if (!quantizer) spare_.resize(residual_size_);
  const float* __restrict r = residual_.data();
  const float* __restrict in = input.data();
  float* __restrict sum = spare_.data();
  // The sums' largest magnitude bits: a NaN or infinity has the largest, and int8's scale is
  // this maximum. QSGD's scale, the sums' norm, is summed here too, in SquaredL2Norm's order.
  uint32_t largest = 0;
  auto scan = [&]<bool kWrite>() {
    auto add = [&](size_t k) {
      const float t = r[k] + in[k];
      if constexpr (kWrite) sum[k] = t;
      const uint32_t magnitude = std::bit_cast<uint32_t>(t) & 0x7FFFFFFFu;
      largest = magnitude > largest ? magnitude : largest;
      return t;
    };
    if (options_.op == Operator::kQsgd) {
      Lanes squares;
      ForEachLane(residual_size_, [&](size_t k, size_t l) {
        const double t = add(k);
        squares.v[l] += t * t;
      });
      facts.squared_norm = squares.Total();
    } else {
      for (size_t k = 0; k < residual_size_; ++k) add(k);
    }
  };
  if (quantizer) {
    scan.template operator()<false>();
  } else {
    scan.template operator()<true>();
  }
  if (largest >= 0x7F800000u) return false;
  facts.largest_bits = largest;
  if (!quantizer) residual_.swap(spare_);
  return true;
}

// The operator on `source` (the input, or the residual with error feedback's sums); false when
// it met a NaN or infinity, with `out` cleared.
bool Compressor::Encode(std::span<const float> source, SourceFacts facts,
                        std::span<const float> input, std::span<const float> addend, Update& out,
                        std::vector<std::byte>* encoded) {
  const auto dimension = static_cast<uint32_t>(residual_size_);
  if (IsQuantizer(options_.op)) {
    // Quantize overwrites every value: keeping the values' size spares a zeroing pass.
    std::vector<float> values = std::move(out.values);
    out.Clear(options_.op, dimension);
    out.values = std::move(values);
  } else {
    out.Clear(options_.op, dimension);
  }
  bool ok = true;
  switch (options_.op) {
    case Operator::kNone:
    case Operator::kFp16:
      out.dense = true;
      out.values.assign(source.begin(), source.end());
      out.format = options_.op == Operator::kNone ? ValueFormat::RawFloat32()
                                                  : QuantizeFloats(out.values, 10);
      return true;
    case Operator::kQsgd:
    case Operator::kInt8:
      // Without error feedback the scale's pass is the finiteness check.
      ok = Quantize(source, facts, out, encoded, addend);
      break;
    default:
      if (options_.error_feedback) {  // the selection forms the sums (the *OfSum selections)
        spare_.resize(residual_size_);
        ok = Select(residual_, out, {}, input);
        if (ok) residual_.swap(spare_);
      } else {
        ok = Select(source, out);
        MURMUR_CHECK(ok || FirstNonFinite(input).has_value())
            << "a selection saw a non-finite value the input lacks";
      }
      break;
  }
  if (!ok) {
    out.Clear(options_.op, dimension);
    return false;
  }
  DensifyIfSmaller(out);
  return true;
}

Status Compressor::CompressInto(std::span<const float> input, Update& out,
                                std::vector<std::byte>* encoded) {
  encoded_fresh_ = false;
  if (input.size() != residual_size_) {
    return InvalidArgumentError(fmt::format("compressor {}: input of {} values, dimension is {}",
                                            OperatorName(options_.op), input.size(),
                                            residual_size_));
  }
  // A rejected input changes no state. With error feedback the sums are checked before they
  // become the residual (SumWithResidual; a selection checks them while it selects). Without
  // it, selections find a NaN or infinity in their own scan (selection.h), the quantizers in
  // their scale's, and everything else checks first.
  const bool quantizer = IsQuantizer(options_.op);
  std::span<const float> source = input;
  std::span<const float> addend;  // the quantizers' input, summed again as they quantize
  SourceFacts facts;
  if (options_.error_feedback && !HasThreshold(options_.op)) {
    if (!SumWithResidual(input, facts)) return RefusedInput(input);
    if (quantizer) addend = input;
    source = residual_;
  } else if (!HasThreshold(options_.op) && !quantizer) {
    if (FirstNonFinite(input)) return RefusedInput(input);
  }
  if (!Encode(source, facts, input, addend, out, encoded)) return RefusedInput(input);
  if (options_.error_feedback) {
    if (!quantizer) AddTo(out, -1.0f, residual_);  // the quantizers subtract in their pass
    if (options_.clip_multiple > 0 && (steps_ + 1) % options_.clip_every == 0 && threshold_ > 0) {
      const auto bound = static_cast<float>(options_.clip_multiple * threshold_);
      for (float& r : residual_) r = std::clamp(r, -bound, bound);
    }
  }
  if (options_.adaptive) {
    adaptive_.Observe(residual_size_ == 0
                          ? 0.0
                          : static_cast<double>(out.count()) / static_cast<double>(residual_size_));
  }
  ++steps_;
  return OkStatus();
}

bool Compressor::Select(std::span<const float> source, Update& out,
                        std::span<const float> subtrahend, std::span<const float> addend) {
  MURMUR_CHECK(subtrahend.empty() || options_.op == Operator::kTopK);
  MURMUR_CHECK(subtrahend.empty() || addend.empty());
  const std::span<float> sum(spare_.data(), addend.empty() ? 0 : source.size());
  float threshold = 0;
  switch (options_.op) {
    case Operator::kTopK: {
      const size_t k = KeptCount();
      const bool ok = !subtrahend.empty() ? TopKOfDifference(source, subtrahend, k, out.indices,
                                                             out.values, difference_)
                      : !addend.empty() ? TopKOfSum(source, addend, k, out.indices, out.values, sum)
                                        : TopK(source, k, out.indices, out.values);
      if (!ok) return false;
      break;
    }
    case Operator::kSampledTopK: {
      const std::mt19937_64 saved = rng_;  // a rejected input must not advance the sampling
      sampled_stats_ =
          addend.empty()
              ? SampledTopK(source, KeptCount(), options_.sampled, rng_, out.indices, out.values)
              : SampledTopKOfSum(source, addend, KeptCount(), options_.sampled, rng_, out.indices,
                                 out.values, sum);
      if (sampled_stats_.non_finite) {
        rng_ = saved;
        return false;
      }
      break;
    }
    case Operator::kThreshold:
    case Operator::kOneBit:
      threshold = options_.adaptive ? adaptive_.tau() : options_.tau;
      if (addend.empty() ? !AtLeast(source, threshold, out.indices, out.values)
                         : !AtLeastOfSum(source, addend, threshold, out.indices, out.values, sum)) {
        return false;
      }
      break;
    default:
      MURMUR_CHECK(false) << "not a selection operator: " << OperatorName(options_.op);
  }
  threshold_ = internal::FinishSelection(options_.op, threshold, options_.mantissa_bits, out);
  return true;
}

std::optional<double> Compressor::QuantizerScale(std::span<const float> source,
                                                 SourceFacts facts) const {
  double scale = 0;
  if (options_.op == Operator::kQsgd) {
    scale = std::sqrt(facts.squared_norm ? *facts.squared_norm : SquaredL2Norm(source));
  } else {
    uint32_t largest_bits = facts.largest_bits;
    if (largest_bits == SourceFacts::kUnknown) {
      // max |v| as the largest magnitude bits: an integer max, which vectorizes where a
      // floating one does not without -ffast-math; the same value (the input is finite).
      largest_bits = 0;
      for (float v : source) {
        const uint32_t bits = std::bit_cast<uint32_t>(v) & 0x7FFFFFFFu;
        largest_bits = bits > largest_bits ? bits : largest_bits;
      }
    }
    if (largest_bits >= 0x7F800000u) return std::nullopt;  // a NaN or infinity: largest bits
    scale = static_cast<double>(std::bit_cast<float>(largest_bits));
  }
  if (!std::isfinite(scale)) return std::nullopt;  // a sum of squares of finite floats is finite
  return std::min(scale, double{std::numeric_limits<float>::max()});
}

bool Compressor::Quantize(std::span<const float> source, SourceFacts facts, Update& out,
                          std::vector<std::byte>* encoded, std::span<const float> addend) {
  // QSGD (Alistarh et al. 2017, §3.1): level l = floor(s |v|/scale) rounded up with probability
  // equal to the remainder, so E[value] = v exactly (up to float rounding of the level value).
  const bool qsgd = options_.op == Operator::kQsgd;
  const uint32_t levels = qsgd ? options_.levels : 127;
  const std::optional<double> scale = QuantizerScale(source, facts);
  if (!scale.has_value()) return false;
  const double per_level = levels / *scale;
  // Rescaled QSGD sends the same levels with a smaller unit: scale / (1 + variance factor).
  const auto scale_f = static_cast<float>(
      qsgd && options_.rescale ? *scale / (1 + QsgdVarianceFactor(source.size(), levels)) : *scale);
  out.format.coding = ValueCoding::kLevels;
  out.format.levels = levels;
  out.format.scale = scale_f;
  // With error feedback the source is the residual, and it becomes the sum - sent here.
  float* residual = options_.error_feedback ? residual_.data() : nullptr;
  if (residual != nullptr) MURMUR_CHECK(source.data() == residual);
  MURMUR_CHECK(addend.empty() || (residual != nullptr && addend.size() == source.size()));
  if (scale_f == 0) {  // nothing to send: an empty sparse update (and nothing to subtract)
    for (size_t k = 0; k < addend.size(); ++k) residual[k] = residual[k] + addend[k];
    out.values.clear();
    return true;
  }
  thread_local std::vector<float> table;
  const bool tabled = levels <= kMaxLevelTable;
  if (tabled) FillLevelTable(scale_f, levels, table);
  // The draws and rounding of DeviceCompressor (kernels::StochasticLevel over a hash of seed,
  // step and index), so a host and a device node quantize the same vector to the same levels.
  const uint64_t seed = kernels::Mix64(options_.seed ^ (steps_ * 0x9e3779b97f4a7c15ULL));
  internal::LevelPass pass{source,
                           levels,
                           kernels::MakeLevelScale(per_level),
                           kernels::LevelSeed(seed),
                           scale_f,
                           tabled ? table.data() : nullptr};
  pass.addend = addend.empty() ? nullptr : addend.data();
  // The sparse form goes first when the last step's levels were few (under 1 in 8): it writes
  // only them; denser, appending each costs more than the dense pass and its compaction. An
  // attempt that fills up costs a pass. With error feedback it forms the sums in its own pass
  // and writes them into the residual.
  if (sparse_first_ && QuantizeSparseFirst(pass, out, residual)) return true;
  QuantizeDenseForm(pass, out, encoded, residual, tabled);
  return true;
}

bool Compressor::QuantizeSparseFirst(internal::LevelPass& pass, Update& out, float* residual) {
  // With b bits per value a bitmap-indexed sparse form costs d/8 + nnz b/8 bytes against d b/8
  // dense, so it is built only when nnz < d (1 - 1/b); DensifyIfSmaller then decides exactly.
  const size_t n = pass.source.size();
  size_t summed = 0;
  if (internal::QuantizeSparse(pass, SparseBelow(n, out.format), out.indices, out.values, residual,
                               &summed)) {
    out.dense = false;
    if (residual != nullptr) {
      for (size_t k = 0; k < out.indices.size(); ++k) residual[out.indices[k]] -= out.values[k];
    }
    sparse_first_ = out.indices.size() < n / 8;
    return true;
  }
  if (pass.addend != nullptr) {  // it gave up: the sums past `summed`, for the dense pass
    for (size_t k = summed; k < n; ++k) residual[k] = residual[k] + pass.addend[k];
    pass.addend = nullptr;
  }
  return false;
}

void Compressor::QuantizeDenseForm(const internal::LevelPass& pass, Update& out,
                                   std::vector<std::byte>* encoded, float* residual, bool tabled) {
  const size_t n = pass.source.size();
  out.dense = true;
  out.indices.clear();
  out.values.resize(n);
  // One byte per value (int8's 7 level bits and sign): the wire bytes come out of the same pass.
  uint8_t* codes = nullptr;
  std::byte* header = nullptr;
  std::optional<internal::PayloadHash> hash;
  if (encoded != nullptr && tabled && out.format.BitsPerValue() == 8) {
    header = internal::PrepareBytes(out, *encoded);
    codes = reinterpret_cast<uint8_t*>(header + kUpdateHeaderBytes);
    hash.emplace();
  }
  const size_t nonzero =
      internal::QuantizeDense(pass, out.values, codes, hash ? &*hash : nullptr, residual);
  sparse_first_ = nonzero < n / 8;
  if (SparsifyIfSmaller(out, nonzero)) return;
  if (hash) {
    hash->Finish(header);
    encoded_fresh_ = true;
  }
}

}  // namespace murmur::coding
