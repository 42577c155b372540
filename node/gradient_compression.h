#pragma once
// Single-node use of a compression operator: the mini-batch gradient is replaced, before the
// optimizer step, by what a peer would receive (compressed with error feedback, decoded). This is
// how `murmur train --compress SPEC` shows what an operator does to learning with no network in
// the way, and it counts the bytes the encoded updates would have cost.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "coding/compressor.h"
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
  static StatusOr<GradientCompression> Create(std::string_view spec, size_t dimension);

  // Compresses `gradient` and overwrites it with the decoded update. kInvalidArgument (gradient
  // left as it was) for a non-finite gradient.
  Status Apply(std::span<float> gradient);

  CompressionReport Report() const;
  const coding::Compressor& compressor() const { return compressor_; }

 private:
  explicit GradientCompression(coding::Compressor compressor) : compressor_(std::move(compressor)) {}
  coding::Compressor compressor_;
  coding::Update update_;
  int64_t steps_ = 0;
  double density_sum_ = 0;
  double bytes_ = 0;
  double values_ = 0;
};

}  // namespace murmur::node
