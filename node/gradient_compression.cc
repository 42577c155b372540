#include "node/gradient_compression.h"

#include "coding/update_codec.h"

namespace murmur::node {

StatusOr<GradientCompression> GradientCompression::Create(std::string_view spec,
                                                          size_t dimension) {
  MURMUR_ASSIGN_OR_RETURN(coding::CompressorOptions options, coding::ParseCompressorSpec(spec));
  MURMUR_ASSIGN_OR_RETURN(coding::Compressor compressor,
                          coding::Compressor::Create(options, dimension));
  return GradientCompression(std::move(compressor));
}

Status GradientCompression::Apply(std::span<float> gradient) {
  MURMUR_RETURN_IF_ERROR(compressor_.Compress(gradient, update_));
  coding::Densify(update_, gradient);
  ++steps_;
  const double dimension = static_cast<double>(compressor_.dimension());
  if (dimension > 0) density_sum_ += static_cast<double>(update_.count()) / dimension;
  bytes_ += static_cast<double>(coding::EncodedSize(update_));
  values_ += static_cast<double>(update_.count());
  return OkStatus();
}

CompressionReport GradientCompression::Report() const {
  CompressionReport r;
  r.spec = coding::CompressorSpec(compressor_.options());
  r.steps = steps_;
  if (steps_ > 0) {
    r.mean_density = density_sum_ / static_cast<double>(steps_);
    r.bytes_per_step = bytes_ / static_cast<double>(steps_);
  }
  r.dense_bytes_per_step = 4.0 * static_cast<double>(compressor_.dimension());
  r.bytes_per_nonzero = values_ > 0 ? bytes_ / values_ : 0;
  return r;
}

}  // namespace murmur::node
