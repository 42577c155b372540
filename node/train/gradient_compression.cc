#include "node/train/gradient_compression.h"

#include "coding/update_codec.h"

namespace murmur::node {

StatusOr<GradientCompression> GradientCompression::Create(const coding::CompressorOptions& options,
                                                          size_t dimension,
                                                          const kernels::Device& device) {
  GradientCompression g;
  if (device.is_cpu()) {
    MURMUR_ASSIGN_OR_RETURN(g.compressor_, coding::Compressor::Create(options, dimension));
  } else {
    MURMUR_ASSIGN_OR_RETURN(g.device_compressor_,
                            coding::DeviceCompressor::Create(options, dimension, device));
  }
  return g;
}

const coding::CompressorOptions& GradientCompression::options() const {
  return compressor_ ? compressor_->options() : device_compressor_->options();
}

size_t GradientCompression::dimension() const {
  return compressor_ ? compressor_->dimension() : device_compressor_->dimension();
}

Status GradientCompression::Apply(std::span<float> gradient) {
  if (compressor_) {
    MURMUR_RETURN_IF_ERROR(compressor_->Compress(gradient, update_));
    coding::Densify(update_, gradient);
  } else {
    const kernels::Device& device = device_compressor_->device();
    MURMUR_RETURN_IF_ERROR(device_compressor_->Compress(gradient, update_));
    MURMUR_RETURN_IF_ERROR(kernels::ZeroBytes(device, gradient.data(), gradient.size_bytes()));
    MURMUR_RETURN_IF_ERROR(coding::AddTo(device, update_, 1.0f, gradient, staging_));
  }
  ++steps_;
  const double dimension = static_cast<double>(this->dimension());
  if (dimension > 0) density_sum_ += static_cast<double>(update_.count()) / dimension;
  bytes_ += static_cast<double>(coding::EncodedSize(update_));
  values_ += static_cast<double>(update_.count());
  return OkStatus();
}

CompressionReport GradientCompression::Report() const {
  CompressionReport r;
  r.spec = coding::CompressorSpec(options());
  r.steps = steps_;
  if (steps_ > 0) {
    r.mean_density = density_sum_ / static_cast<double>(steps_);
    r.bytes_per_step = bytes_ / static_cast<double>(steps_);
  }
  r.dense_bytes_per_step = 4.0 * static_cast<double>(dimension());
  r.bytes_per_nonzero = values_ > 0 ? bytes_ / values_ : 0;
  return r;
}

}  // namespace murmur::node
