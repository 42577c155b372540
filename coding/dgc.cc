#include "coding/dgc.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "coding/vector_ops.h"
#include "fmt/format.h"

namespace murmur::coding {

StatusOr<DgcMomentum> DgcMomentum::Create(const DgcOptions& options, size_t dimension) {
  if (!(options.momentum >= 0 && options.momentum < 1)) {
    return InvalidArgumentError(fmt::format("dgc: momentum {} must be in [0, 1)", options.momentum));
  }
  if (!(options.clip_norm >= 0 && std::isfinite(options.clip_norm))) {
    return InvalidArgumentError(fmt::format("dgc: clip norm {} must be >= 0", options.clip_norm));
  }
  if (options.workers < 1) {
    return InvalidArgumentError(fmt::format("dgc: workers {} must be >= 1", options.workers));
  }
  return DgcMomentum(options, dimension);
}

Status DgcMomentum::Accumulate(std::span<const float> gradient) {
  if (gradient.size() != v_.size()) {
    return InvalidArgumentError(
        fmt::format("dgc: gradient of {} values, dimension is {}", gradient.size(), v_.size()));
  }
  if (const auto bad = FirstNonFinite(gradient)) {
    return InvalidArgumentError(
        fmt::format("dgc: gradient[{}] is {}; step skipped", *bad, gradient[*bad]));
  }
  last_gradient_norm_ = std::sqrt(SquaredL2Norm(gradient));
  float factor = 1.0f;
  if (options_.clip_norm > 0) {
    const double bound = options_.clip_norm / std::sqrt(static_cast<double>(options_.workers));
    if (last_gradient_norm_ > bound) factor = static_cast<float>(bound / last_gradient_norm_);
  }
  const auto m = static_cast<float>(options_.momentum);
  for (size_t i = 0; i < v_.size(); ++i) {
    const float g = factor * gradient[i];
    if (options_.nesterov) {
      u_[i] = m * (u_[i] + g);
      v_[i] += u_[i] + g;
    } else {
      u_[i] = m * u_[i] + g;
      v_[i] += u_[i];
    }
  }
  return OkStatus();
}

void DgcMomentum::Commit(const Update& sent) {
  MURMUR_CHECK_EQ(sent.dimension, v_.size());
  AddTo(sent, -1.0f, std::span<float>(v_));
  if (!options_.momentum_masking) return;
  if (sent.dense) {
    std::fill(u_.begin(), u_.end(), 0.0f);
  } else {
    for (uint32_t index : sent.indices) u_[index] = 0.0f;
  }
}

StatusOr<DensitySchedule> DensitySchedule::Exponential(double final_density, int warmup_epochs) {
  if (!(final_density > 0 && final_density <= 1)) {
    return InvalidArgumentError(
        fmt::format("density schedule: final density {} must be in (0, 1]", final_density));
  }
  if (warmup_epochs < 0) {
    return InvalidArgumentError(
        fmt::format("density schedule: warm-up epochs {} must be >= 0", warmup_epochs));
  }
  std::vector<double> densities;
  for (int e = 0; e <= warmup_epochs; ++e) {
    densities.push_back(std::max(
        std::pow(final_density, static_cast<double>(e + 1) / (warmup_epochs + 1)), final_density));
  }
  return DensitySchedule(std::move(densities));
}

StatusOr<DensitySchedule> DensitySchedule::FromList(std::vector<double> densities) {
  if (densities.empty()) return InvalidArgumentError("density schedule: empty list");
  for (double d : densities) {
    if (!(d > 0 && d <= 1)) {
      return InvalidArgumentError(
          fmt::format("density schedule: density {} must be in (0, 1]", d));
    }
  }
  return DensitySchedule(std::move(densities));
}

double DensitySchedule::DensityAt(int epoch) const {
  const size_t e = static_cast<size_t>(std::max(epoch, 0));
  return densities_[std::min(e, densities_.size() - 1)];
}

}  // namespace murmur::coding
