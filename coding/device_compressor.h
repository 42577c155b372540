#pragma once
// Compression operators on the device the gradient lives on (kernels/compress_ops.h): the same
// operators and options as Compressor (compressor.h), with the residual of error feedback kept
// in device memory. Only the compressed update crosses to the host: indices and values for the
// selections (top-k, DGC, threshold, 1-bit), 1 or 2 bytes per value for QSGD/int8, 2 for fp16,
// and, for `none`, the dense fp32 vector that operator sends anyway.
//
// What comes out is an ordinary Update, encoded and decoded by update_codec.h as before. The
// selections and quantizers agree with Compressor bit for bit (top-k, threshold, 1-bit, fp16 to
// its window, none, and QSGD / int8, whose rounding both take from kernels::StochasticLevel over
// seed, step and index); DGC samples every stride-th entry rather than blocks of 16, so it differs
// from Compressor sample by sample but not in distribution. With a CPU device this runs
// the kernels' host versions, which is how the CPU test suite checks it.
//
// Thread safety: none; one per stream of updates, like Compressor.

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "base/status.h"
#include "coding/compressor.h"
#include "coding/update.h"
#include "kernels/device.h"
#include "kernels/memory.h"

namespace murmur::coding {

// Device buffers for an update's indices and values (AddTo's staging).
struct DeviceUpdateStaging {
  kernels::Buffer<uint32_t> indices;
  kernels::Buffer<float> values;
  uint64_t bytes() const {
    return indices.size() * sizeof(uint32_t) + values.size() * sizeof(float);
  }
};

class DeviceCompressor {
 public:
  // As Compressor::Create, plus kUnimplemented for what has no device version yet (residual
  // clipping; QSGD with more than 32767 levels) and the device's allocation errors.
  static StatusOr<DeviceCompressor> Create(const CompressorOptions& options, size_t dimension,
                                           const kernels::Device& device);

  // out = C(residual + input) (error feedback) or C(input); `input` is device memory. A wrong
  // size or a non-finite input (or residual + input overflowing) is kInvalidArgument and changes
  // no state.
  Status Compress(std::span<const float> input, Update& out);

  void SetRatio(double ratio);
  Status ResetResidual() { return residual_.Zero(); }
  // In device memory; empty without error feedback.
  std::span<const float> residual() const { return residual_.span(); }
  float threshold() const { return threshold_; }
  uint64_t steps() const { return steps_; }
  size_t dimension() const { return dimension_; }
  const CompressorOptions& options() const { return options_; }
  const kernels::Device& device() const { return device_; }
  // Bytes the last Compress moved between device and host, both ways.
  size_t last_transfer_bytes() const { return transfer_bytes_; }
  // Bytes of its buffers, on the device and the host's staging.
  uint64_t HeldBytes() const;

 private:
  DeviceCompressor(const CompressorOptions& options, size_t dimension,
                   const kernels::Device& device);
  size_t KeptCount() const;
  Status EnsureSelection(size_t capacity);
  // Copies the first `count` selected (index, value) pairs to `out`.
  Status FetchSelection(size_t count, Update& out);
  Status SelectTopK(std::span<const float> source, size_t k, Update& out);
  Status SelectSampled(std::span<const float> source, size_t k, Update& out);
  Status SelectAtLeast(std::span<const float> source, float tau, Update& out);
  Status Quantize(std::span<const float> source, Update& out);
  // The input checked (size, finiteness) and, with error feedback, residual + input in the
  // scratch buffer (checked too): what the operator compresses.
  StatusOr<std::span<const float>> CheckedSource(std::span<const float> input);
  // The selections (top-k, DGC, threshold, one-bit) into `out`, and the threshold they met.
  Status Select(std::span<const float> source, Update& out);
  Status Fp16(std::span<const float> source, Update& out);
  // residual -= out (the values every receiver decodes), on the device.
  Status SubtractSent(const Update& out);

  CompressorOptions options_;
  size_t dimension_;
  kernels::Device device_;
  AdaptiveThreshold adaptive_;
  float threshold_ = 0;
  uint64_t steps_ = 0;
  std::mt19937_64 rng_;
  size_t transfer_bytes_ = 0;
  kernels::Buffer<float> residual_;   // error feedback
  kernels::Buffer<float> source_;     // residual + input of the step in progress
  kernels::Buffer<float> dense_;      // a decoded dense update (fp16, QSGD)
  // A selection's positions and values; also the staging AddTo uploads the sent update into.
  DeviceUpdateStaging selection_;
  kernels::Buffer<float> sample_;     // DGC's sample
  kernels::Buffer<uint16_t> half_;    // fp16
  kernels::Buffer<int8_t> levels8_;   // QSGD / int8 levels
  kernels::Buffer<int16_t> levels16_;
  // Host staging.
  std::vector<uint16_t> host_half_;
  Update fp16_fixes_;  // where the wire's fp16 window changed a half, and by how much
  std::vector<int8_t> host_levels8_;
  std::vector<int16_t> host_levels16_;
};

// x += alpha * update on `device` (x in device memory): the receiving end of a compressed
// update. The update's indices and values go up (a dense update: all of it); `staging` holds
// them between calls.
Status AddTo(const kernels::Device& device, const Update& update, float alpha, std::span<float> x,
             DeviceUpdateStaging& staging);

}  // namespace murmur::coding
