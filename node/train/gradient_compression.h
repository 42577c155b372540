#pragma once
// Single-node use of a compression operator: the mini-batch gradient is replaced, before the
// optimizer step, by what a peer would receive (compressed with error feedback, decoded). This is
// how `murmur train --compress SPEC` shows what an operator does to learning with no network in
// the way, and it counts the bytes the encoded updates would have cost.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "coding/compressor.h"
#include "coding/device_compressor.h"
#include "kernels/device.h"
#include "coding/update.h"

namespace murmur::node {

struct CompressionReport {
  std::string spec;  // canonical
  int64_t steps = 0;
  double mean_density = 0;          // values sent / dimension, averaged over steps
  double bytes_per_step = 0;        // encoded update, header included
  double dense_bytes_per_step = 0;  // the same gradient as raw fp32
  double bytes_per_nonzero = 0;     // total bytes / total values sent
};

class GradientCompression {
 public:
  // On a GPU the operator runs there (coding::DeviceCompressor): the gradient and the residual
  // stay in device memory, the compressed update comes to the host (where its bytes are
  // counted) and goes back up to be decoded in place, as a receiving peer would.
  static StatusOr<GradientCompression> Create(
      const coding::CompressorOptions& options, size_t dimension,
      const kernels::Device& device = kernels::Device::Cpu());

  // Compresses `gradient` (memory of the device) and overwrites it with the decoded update.
  // kInvalidArgument (gradient left as it was) for a non-finite gradient.
  Status Apply(std::span<float> gradient);

  CompressionReport Report() const;
  const coding::CompressorOptions& options() const;
  size_t dimension() const;

 private:
  GradientCompression() = default;
  std::optional<coding::Compressor> compressor_;              // the CPU
  std::optional<coding::DeviceCompressor> device_compressor_;  // a GPU
  coding::DeviceUpdateStaging staging_;
  coding::Update update_;
  int64_t steps_ = 0;
  double density_sum_ = 0;
  double bytes_ = 0;
  double values_ = 0;
};

}  // namespace murmur::node
