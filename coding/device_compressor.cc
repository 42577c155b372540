#include "coding/device_compressor.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/check.h"
#include "coding/operator_traits.h"
#include "coding/selection.h"
#include "coding/update_codec.h"
#include "fmt/format.h"
#include "kernels/compress_ops.h"

namespace murmur::coding {
namespace {

using kernels::Buffer;

// QSGD Lemma 3.1, as in compressor.cc.
double VarianceFactor(size_t dimension, uint32_t levels) {
  const double d = static_cast<double>(dimension);
  const double s = levels;
  return std::min(d / (s * s), std::sqrt(d) / s);
}

template <typename T>
Status Download(const kernels::Device& device, std::span<const T> from, std::span<T> to,
                size_t& bytes) {
  bytes += from.size_bytes();
  return kernels::Copy<T>(kernels::Device::Cpu(), to, device, from);
}

}  // namespace

DeviceCompressor::DeviceCompressor(const CompressorOptions& options, size_t dimension,
                                   const kernels::Device& device)
    : options_(options),
      dimension_(dimension),
      device_(device),
      adaptive_(options.tau, options.adaptive_options),
      rng_(options.seed) {}

StatusOr<DeviceCompressor> DeviceCompressor::Create(const CompressorOptions& options,
                                                    size_t dimension,
                                                    const kernels::Device& device) {
  // The host compressor validates the options exactly as it always has.
  MURMUR_RETURN_IF_ERROR(Compressor::Create(options, dimension).status());
  if (options.clip_multiple > 0) {
    return UnimplementedError("residual clipping (clip=) has no device version; compress on the "
                              "CPU or drop the clip");
  }
  if (options.op == Operator::kQsgd && options.levels > 32767) {
    return UnimplementedError(fmt::format("qsgd with {} levels: the device version takes at most "
                                          "32767",
                                          options.levels));
  }
  DeviceCompressor c(options, dimension, device);
  if (options.error_feedback) {
    MURMUR_ASSIGN_OR_RETURN(c.residual_, Buffer<float>::Create(device, dimension));
    MURMUR_ASSIGN_OR_RETURN(c.source_, Buffer<float>::Create(device, dimension));
  }
  return c;
}

void DeviceCompressor::SetRatio(double ratio) {
  MURMUR_CHECK(ratio > 0 && ratio <= 1) << "ratio " << ratio;
  options_.ratio = ratio;
}

size_t DeviceCompressor::KeptCount() const {
  const double k = std::ceil(options_.ratio * static_cast<double>(dimension_));
  return std::min(dimension_, static_cast<size_t>(std::max(k, 1.0)));
}

Status DeviceCompressor::EnsureSelection(size_t capacity) {
  if (selection_.indices.size() >= capacity) return OkStatus();
  MURMUR_ASSIGN_OR_RETURN(selection_.indices, Buffer<uint32_t>::Create(device_, capacity));
  MURMUR_ASSIGN_OR_RETURN(selection_.values, Buffer<float>::Create(device_, capacity));
  return OkStatus();
}

Status DeviceCompressor::FetchSelection(size_t count, Update& out) {
  out.indices.resize(count);
  out.values.resize(count);
  MURMUR_RETURN_IF_ERROR(Download<uint32_t>(device_, selection_.indices.span().first(count), out.indices,
                                            transfer_bytes_));
  return Download<float>(device_, selection_.values.span().first(count), out.values, transfer_bytes_);
}

Status DeviceCompressor::SelectTopK(std::span<const float> source, size_t k, Update& out) {
  MURMUR_RETURN_IF_ERROR(EnsureSelection(std::max<size_t>(k, 1)));
  int64_t count = 0;
  MURMUR_RETURN_IF_ERROR(kernels::TopK(device_, source, static_cast<int64_t>(k),
                                       selection_.indices.span().first(k), selection_.values.span().first(k), &count));
  return FetchSelection(static_cast<size_t>(count), out);
}

Status DeviceCompressor::SelectAtLeast(std::span<const float> source, float tau, Update& out) {
  // Room for 1 % first; a denser selection is rerun once with room for all of it.
  MURMUR_RETURN_IF_ERROR(EnsureSelection(std::max<size_t>(1024, dimension_ / 100)));
  int64_t total = 0;
  for (int attempt = 0; attempt < 2; ++attempt) {
    MURMUR_RETURN_IF_ERROR(
        kernels::SelectAtLeast(device_, source, tau, selection_.indices.span(), selection_.values.span(), &total));
    if (static_cast<size_t>(total) <= selection_.indices.size()) break;
    MURMUR_RETURN_IF_ERROR(EnsureSelection(static_cast<size_t>(total)));
  }
  return FetchSelection(static_cast<size_t>(total), out);
}

// DGC's sampled threshold (Lin et al. 2018, §3; selection.h for the host version and its
// contract): estimate the k-th magnitude from a strided sample, select above it, trim a surplus
// to exactly k on the host (the candidates are what crosses anyway), lower the threshold by 0.8
// when fewer than lower * k pass, and fall back to exact top-k after max_adaptations.
Status DeviceCompressor::SelectSampled(std::span<const float> source, size_t k, Update& out) {
  const SampledTopKOptions& o = options_.sampled;
  const double d = static_cast<double>(dimension_);
  const auto wanted = static_cast<size_t>(
      std::ceil(std::max(o.sample_fraction * d, 2.0 * d / static_cast<double>(k))));
  const size_t samples_target = std::clamp<size_t>(wanted, 1, dimension_);
  const size_t stride = std::max<size_t>(1, dimension_ / samples_target);
  const size_t start = static_cast<size_t>(rng_() % stride);
  const size_t samples = (dimension_ - 1 - start) / stride + 1;
  if (sample_.size() < samples) {
    MURMUR_ASSIGN_OR_RETURN(sample_, Buffer<float>::Create(device_, samples));
  }
  std::span<float> sample = sample_.span().first(samples);
  MURMUR_RETURN_IF_ERROR(kernels::StridedGather(device_, source, static_cast<int64_t>(start),
                                                static_cast<int64_t>(stride), sample));
  const auto sample_k = std::clamp<size_t>(
      static_cast<size_t>(std::ceil(static_cast<double>(samples) * static_cast<double>(k) / d *
                                    o.aim)),
      1, samples);
  Update top;
  MURMUR_RETURN_IF_ERROR(SelectTopK(sample, sample_k, top));
  float threshold = std::numeric_limits<float>::max();
  for (float v : top.values) threshold = std::min(threshold, std::fabs(v));
  if (top.values.empty()) return SelectTopK(source, k, out);  // an all-zero sample
  const auto lowest = static_cast<size_t>(std::ceil(o.lower * static_cast<double>(k)));
  for (int adaptation = 0; adaptation <= o.max_adaptations; ++adaptation) {
    MURMUR_RETURN_IF_ERROR(SelectAtLeast(source, threshold, out));
    if (out.values.size() > k) {
      std::vector<uint32_t> keep;
      std::vector<float> kept_values;
      MURMUR_CHECK(TopK(out.values, k, keep, kept_values)) << "non-finite after the check";
      for (size_t i = 0; i < keep.size(); ++i) keep[i] = out.indices[keep[i]];
      out.indices = std::move(keep);
      out.values = std::move(kept_values);
      return OkStatus();
    }
    if (out.values.size() >= lowest) return OkStatus();
    threshold *= 0.8f;
  }
  return SelectTopK(source, k, out);
}

Status DeviceCompressor::Fp16(std::span<const float> source, Update& out) {
  if (half_.size() != dimension_) {
    MURMUR_ASSIGN_OR_RETURN(half_, Buffer<uint16_t>::Create(device_, dimension_));
    host_half_.resize(dimension_);
  }
  MURMUR_RETURN_IF_ERROR(kernels::FloatToHalf(device_, source, half_.span()));
  MURMUR_RETURN_IF_ERROR(
      Download<uint16_t>(device_, half_.span(), host_half_, transfer_bytes_));
  out.dense = true;
  out.values.resize(dimension_);
  MURMUR_RETURN_IF_ERROR(kernels::HalfToFloat(kernels::Device::Cpu(), host_half_, out.values));
  // IEEE half spans 40 binades, the wire's fp16 window 32: the few values QuantizeFloats flushes
  // are remembered so error feedback subtracts exactly what was sent.
  const std::vector<float> rounded = out.values;
  out.format = QuantizeFloats(out.values, 10);
  fp16_fixes_.Clear(Operator::kFp16, static_cast<uint32_t>(dimension_));
  for (size_t i = 0; i < dimension_; ++i) {
    if (out.values[i] != rounded[i]) {
      fp16_fixes_.indices.push_back(static_cast<uint32_t>(i));
      fp16_fixes_.values.push_back(out.values[i] - rounded[i]);
    }
  }
  return OkStatus();
}

Status DeviceCompressor::Quantize(std::span<const float> source, Update& out) {
  // QSGD (Alistarh et al. 2017, §3.1), as Compressor::Quantize; the rounding draws come from a
  // hash of (seed, step, index) so the device needs no generator state.
  const bool qsgd = options_.op == Operator::kQsgd;
  const uint32_t levels = qsgd ? options_.levels : 127;
  double scale = 0;
  if (qsgd) {
    double squares = 0;
    MURMUR_RETURN_IF_ERROR(kernels::SumOfSquares(device_, source, &squares));
    scale = std::sqrt(squares);
  } else {
    float max = 0;
    MURMUR_RETURN_IF_ERROR(kernels::MaxAbs(device_, source, &max));
    scale = max;
  }
  scale = std::min(scale, double{std::numeric_limits<float>::max()});
  const auto scale_f = static_cast<float>(
      qsgd && options_.rescale ? scale / (1 + VarianceFactor(dimension_, levels)) : scale);
  out.format.coding = ValueCoding::kLevels;
  out.format.levels = levels;
  out.format.scale = scale_f;
  if (scale_f == 0) return OkStatus();
  const double per_level = levels / scale;
  const uint64_t seed = kernels::Mix64(options_.seed ^ (steps_ * 0x9e3779b97f4a7c15ULL));
  out.dense = true;
  out.values.resize(dimension_);
  std::vector<float> table;
  FillLevelTable(scale_f, levels, table);
  auto decode = [&](auto& device_levels, auto& host_levels) -> Status {
    using L = typename std::remove_reference_t<decltype(host_levels)>::value_type;
    if (device_levels.size() != dimension_) {
      MURMUR_ASSIGN_OR_RETURN(device_levels, Buffer<L>::Create(device_, dimension_));
      host_levels.resize(dimension_);
    }
    MURMUR_RETURN_IF_ERROR(kernels::StochasticLevels<L>(device_, source, per_level, levels, seed,
                                                        device_levels.span()));
    MURMUR_RETURN_IF_ERROR(
        Download<L>(device_, device_levels.span(), host_levels, transfer_bytes_));
    for (size_t i = 0; i < dimension_; ++i) {
      const int l = host_levels[i];
      out.values[i] = l < 0 ? -table[static_cast<size_t>(-l)] : table[static_cast<size_t>(l)];
    }
    if (options_.error_feedback) {
      if (dense_.size() != dimension_) {
        MURMUR_ASSIGN_OR_RETURN(dense_, Buffer<float>::Create(device_, dimension_));
      }
      MURMUR_RETURN_IF_ERROR(kernels::LevelsToFloat<L>(
          device_, std::span<const L>(device_levels.span()), scale_f, levels, dense_.span()));
    }
    return OkStatus();
  };
  if (levels <= 127) {
    MURMUR_RETURN_IF_ERROR(decode(levels8_, host_levels8_));
  } else {
    MURMUR_RETURN_IF_ERROR(decode(levels16_, host_levels16_));
  }
  // Sparse when that is smaller, by the rule the host compressor applies.
  size_t nonzero = 0;
  for (float v : out.values) nonzero += v != 0;
  SparsifyIfSmaller(out, nonzero);
  return OkStatus();
}

uint64_t DeviceCompressor::HeldBytes() const {
  return (residual_.size() + source_.size() + dense_.size() + sample_.size()) * sizeof(float) +
         selection_.bytes() + half_.size() * sizeof(uint16_t) + levels8_.size() +
         levels16_.size() * sizeof(int16_t) + host_half_.capacity() * sizeof(uint16_t) +
         fp16_fixes_.HeldBytes() + host_levels8_.capacity() +
         host_levels16_.capacity() * sizeof(int16_t);
}

Status DeviceCompressor::SubtractSent(const Update& out) {
  if (options_.op == Operator::kNone) {
    // The source went out as it was: residual + input - sent is +0 everywhere, with nothing
    // sent back up (an H100 run counted 2 d floats over PCIe per step before).
    return residual_.Zero();
  }
  if (out.dense && internal::IsQuantizer(options_.op) && !dense_.empty()) {
    // The device decoded the same levels itself: nothing goes back up.
    return kernels::Axpy(device_, -1.0f, dense_.span(), residual_.span());
  }
  if (options_.op == Operator::kFp16) {
    // The device holds the halves it sent: decode them there, then apply the host's flushes.
    if (dense_.size() != dimension_) {
      MURMUR_ASSIGN_OR_RETURN(dense_, Buffer<float>::Create(device_, dimension_));
    }
    MURMUR_RETURN_IF_ERROR(kernels::HalfToFloat(device_, half_.span(), dense_.span()));
    MURMUR_RETURN_IF_ERROR(kernels::Axpy(device_, -1.0f, dense_.span(), residual_.span()));
    transfer_bytes_ += fp16_fixes_.values.size() * 8;
    return AddTo(device_, fp16_fixes_, -1.0f, residual_.span(), selection_);
  }
  transfer_bytes_ += out.values.size() * sizeof(float) + out.indices.size() * sizeof(uint32_t);
  return AddTo(device_, out, -1.0f, residual_.span(), selection_);
}

StatusOr<std::span<const float>> DeviceCompressor::CheckedSource(std::span<const float> input) {
  const std::string_view name = OperatorName(options_.op);
  if (input.size() != dimension_) {
    return InvalidArgumentError(fmt::format("compressor {} on {}: input of {} values, dimension "
                                            "is {}",
                                            name, device_.ToString(), input.size(), dimension_));
  }
  int64_t bad = 0;
  MURMUR_RETURN_IF_ERROR(kernels::CountNonFinite(device_, input, &bad));
  if (bad > 0) {
    return InvalidArgumentError(fmt::format("compressor {} on {}: input holds {} NaN or infinite "
                                            "values; nothing was compressed",
                                            name, device_.ToString(), bad));
  }
  if (!options_.error_feedback) return input;
  // source = residual + input in a scratch buffer, so a rejected step leaves the residual as it
  // was.
  MURMUR_RETURN_IF_ERROR(kernels::Copy<float>(device_, source_.span(), device_,
                                              std::span<const float>(residual_.span())));
  MURMUR_RETURN_IF_ERROR(kernels::Axpy(device_, 1.0f, input, source_.span()));
  MURMUR_RETURN_IF_ERROR(kernels::CountNonFinite(device_, source_.span(), &bad));
  if (bad > 0) {
    return InvalidArgumentError(
        fmt::format("compressor {}: residual + input overflows float; "
                    "input rejected",
                    name));
  }
  return std::span<const float>(source_.span());
}

Status DeviceCompressor::Select(std::span<const float> source, Update& out) {
  float tau = 0;
  if (options_.op == Operator::kTopK) {
    MURMUR_RETURN_IF_ERROR(SelectTopK(source, KeptCount(), out));
  } else if (options_.op == Operator::kSampledTopK) {
    MURMUR_RETURN_IF_ERROR(SelectSampled(source, KeptCount(), out));
  } else {
    tau = options_.adaptive ? adaptive_.tau() : options_.tau;
    MURMUR_RETURN_IF_ERROR(SelectAtLeast(source, tau, out));
  }
  threshold_ = internal::FinishSelection(options_.op, tau, options_.mantissa_bits, out);
  return OkStatus();
}

Status DeviceCompressor::Compress(std::span<const float> input, Update& out) {
  transfer_bytes_ = 0;
  MURMUR_ASSIGN_OR_RETURN(const std::span<const float> source, CheckedSource(input));
  out.Clear(options_.op, static_cast<uint32_t>(dimension_));
  switch (options_.op) {
    case Operator::kNone:
      out.dense = true;
      out.values.resize(dimension_);
      MURMUR_RETURN_IF_ERROR(Download<float>(device_, source, out.values, transfer_bytes_));
      out.format = ValueFormat::RawFloat32();
      break;
    case Operator::kFp16:
      MURMUR_RETURN_IF_ERROR(Fp16(source, out));
      break;
    case Operator::kQsgd:
    case Operator::kInt8:
      MURMUR_RETURN_IF_ERROR(Quantize(source, out));
      DensifyIfSmaller(out);
      break;
    default:
      MURMUR_RETURN_IF_ERROR(Select(source, out));
      DensifyIfSmaller(out);
      break;
  }
  if (options_.error_feedback) {
    // residual = source - sent: the scratch becomes the residual, then loses what was sent.
    std::swap(residual_, source_);
    MURMUR_RETURN_IF_ERROR(SubtractSent(out));
  }
  if (options_.adaptive) {
    adaptive_.Observe(dimension_ == 0 ? 0.0
                                      : static_cast<double>(out.count()) /
                                            static_cast<double>(dimension_));
  }
  ++steps_;
  return OkStatus();
}

Status AddTo(const kernels::Device& device, const Update& update, float alpha, std::span<float> x,
             DeviceUpdateStaging& staging) {
  if (x.size() != update.dimension) {
    return InvalidArgumentError(fmt::format("update of dimension {} added to a vector of {}",
                                            update.dimension, x.size()));
  }
  const size_t n = update.values.size();
  if (device.is_cpu()) {
    coding::AddTo(update, alpha, x);
    return OkStatus();
  }
  if (staging.values.size() < n) {
    MURMUR_ASSIGN_OR_RETURN(staging.values, Buffer<float>::Create(device, n));
  }
  std::span<float> values = staging.values.span().first(n);
  MURMUR_RETURN_IF_ERROR(kernels::Copy<float>(device, values, kernels::Device::Cpu(), update.values));
  if (update.dense) return kernels::Axpy(device, alpha, values, x);
  if (staging.indices.size() < n) {
    MURMUR_ASSIGN_OR_RETURN(staging.indices, Buffer<uint32_t>::Create(device, n));
  }
  std::span<uint32_t> indices = staging.indices.span().first(n);
  MURMUR_RETURN_IF_ERROR(
      kernels::Copy<uint32_t>(device, indices, kernels::Device::Cpu(), update.indices));
  return kernels::ScatterAdd(device, indices, values, alpha, x);
}

}  // namespace murmur::coding
