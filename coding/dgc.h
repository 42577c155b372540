#pragma once
// Deep Gradient Compression's training-side pieces (Lin et al., ICLR 2018; docs/algorithms.md §4):
// local gradient clipping, momentum correction, momentum factor masking, and the warm-up
// schedule of densities. The selection itself is a Compressor (dgc or topk) run with error
// feedback off: the accumulated velocity v below *is* the residual.
//
// Per step: Accumulate(gradient); compressor.Compress(velocity(), update); Commit(update);
// then apply the (aggregated) update with plain SGD (momentum already applied here).

#include <cstddef>
#include <span>
#include <vector>

#include "base/status.h"
#include "coding/update.h"

namespace murmur::coding {

struct DgcOptions {
  double momentum = 0.9;
  bool nesterov = false;
  bool momentum_masking = true;  // zero u where v was sent (§4.2 step 6)
  // Local gradient clipping (§4.2 step 2): the gradient's L2 norm is clipped to
  // clip_norm / sqrt(workers). 0: off.
  double clip_norm = 0;
  int workers = 1;
};

class DgcMomentum {
 public:
  static StatusOr<DgcMomentum> Create(const DgcOptions& options, size_t dimension);

  // Clips, then u = m u + g; v += u (Nesterov: u = m (u + g); v += u + g). A wrong size or a
  // non-finite gradient is kInvalidArgument and changes nothing.
  Status Accumulate(std::span<const float> gradient);

  // What to compress this step.
  std::span<const float> velocity() const { return v_; }
  std::span<const float> momentum() const { return u_; }

  // Takes what was sent out of v (v -= sent: exact zero for fp32 values, the rounding error
  // stays for fp16) and, with masking, zeroes u at every sent index.
  // REQUIRES sent.dimension == dimension.
  void Commit(const Update& sent);

  // L2 norm of the last gradient before clipping.
  double last_gradient_norm() const { return last_gradient_norm_; }

 private:
  DgcMomentum(const DgcOptions& options, size_t dimension)
      : options_(options), u_(dimension, 0.0f), v_(dimension, 0.0f) {}
  DgcOptions options_;
  std::vector<float> u_;
  std::vector<float> v_;
  double last_gradient_norm_ = 0;
};

// Kept fraction per epoch during DGC's warm-up (§4.4).
class DensitySchedule {
 public:
  // density_e = max(final^((e+1)/(E+1)), final) for E warm-up epochs: E = 4, final 0.001 gives
  // 25.1 %, 6.31 %, 1.58 %, 0.398 %, then 0.1 % (the 25 % -> 0.1 % ramp of the paper).
  static StatusOr<DensitySchedule> Exponential(double final_density, int warmup_epochs);
  // One density per epoch; the last holds afterwards. Each in (0, 1].
  static StatusOr<DensitySchedule> FromList(std::vector<double> densities);

  // Density for a 0-based epoch (negative counts as 0).
  double DensityAt(int epoch) const;

 private:
  explicit DensitySchedule(std::vector<double> densities) : densities_(std::move(densities)) {}
  std::vector<double> densities_;
};

}  // namespace murmur::coding
