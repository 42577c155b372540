#include "node/sim/workload.h"

#include <algorithm>
#include <cmath>

namespace murmur::sim {
namespace {

constexpr int64_t kBlocks = 16;
constexpr int64_t kRowParts = 61;

uint64_t SplitMix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// A value in [-1, 1) from (seed, a, b).
float Hashed(uint64_t seed, uint64_t a, uint64_t b) {
  const uint64_t h = SplitMix(seed ^ SplitMix(a * 0x100000001B3ULL + b));
  return static_cast<float>(static_cast<double>(h >> 11) * 0x1.0p-52 - 1.0);
}

std::pair<int64_t, int64_t> Shard(int64_t rows, size_t node, size_t nodes) {
  const int64_t n = static_cast<int64_t>(std::max<size_t>(nodes, 1));
  const int64_t i = static_cast<int64_t>(node);
  return {rows * i / n, rows * (i + 1) / n};
}

}  // namespace

SyntheticWorkload::SyntheticWorkload(size_t nodes, size_t dimension, int64_t rows, int64_t batch,
                                     double lr, uint64_t seed)
    : dimension_(dimension),
      rows_(std::max<int64_t>(rows, 1)),
      batch_(std::max<int64_t>(batch, 1)),
      lr_(lr),
      seed_(seed),
      row_part_(static_cast<size_t>(kRowParts) * dimension),
      block_part_(static_cast<size_t>(kBlocks) * dimension),
      optimum_(dimension, 0.0f),
      params_(nodes, std::vector<float>(dimension, 0.0f)),
      cursor_(nodes, 0),
      gradient_(dimension) {
  for (int64_t r = 0; r < kRowParts; ++r) {
    for (size_t j = 0; j < dimension_; ++j) {
      row_part_[r * dimension_ + j] = Hashed(seed_ ^ 0xC0, 0, j) + 0.5f * Hashed(seed_, r + 1, j);
    }
  }
  for (int64_t b = 0; b < kBlocks; ++b) {
    for (size_t j = 0; j < dimension_; ++j) {
      block_part_[b * dimension_ + j] = 0.25f * Hashed(seed_ ^ 0xB10C, b, j);
    }
  }
  std::vector<double> sum(dimension, 0.0);
  for (int64_t r = 0; r < rows_; ++r) {
    for (size_t j = 0; j < dimension_; ++j) sum[j] += Target(r, j);
  }
  for (size_t j = 0; j < dimension_; ++j) optimum_[j] = static_cast<float>(sum[j] / rows_);
}

float SyntheticWorkload::Target(int64_t row, size_t j) const {
  const int64_t block = row * kBlocks / rows_;
  return row_part_[(row % kRowParts) * dimension_ + j] + block_part_[block * dimension_ + j];
}

std::vector<float> SyntheticWorkload::InitialModel() const {
  std::vector<float> x(dimension_);
  for (size_t j = 0; j < dimension_; ++j) x[j] = 0.1f * Hashed(seed_ ^ 0x1A17, 0, j);
  return x;
}

std::vector<float> SyntheticWorkload::OwnInitialModel(uint64_t node_id) const {
  std::vector<float> x(dimension_);
  for (size_t j = 0; j < dimension_; ++j) x[j] = 0.1f * Hashed(seed_ ^ 0x1A17, node_id + 1, j);
  return x;
}

int64_t SyntheticWorkload::ShardRows(size_t node) const {
  const auto [begin, end] = Shard(rows_, node, nodes());
  return std::max<int64_t>(end - begin, 1);
}

void SyntheticWorkload::Reset(size_t node, std::span<const float> model) {
  params_[node].assign(model.begin(), model.end());
  cursor_[node] = 0;
}

std::pair<double, int64_t> SyntheticWorkload::Step(size_t node, std::optional<double> lr) {
  std::vector<float>& x = params_[node];
  const auto [begin, end] = Shard(rows_, node, nodes());
  const int64_t shard = std::max<int64_t>(end - begin, 1);
  std::fill(gradient_.begin(), gradient_.end(), 0.0f);
  double loss = 0;
  for (int64_t b = 0; b < batch_; ++b) {
    const int64_t row =
        begin + static_cast<int64_t>(SplitMix(seed_ ^ SplitMix(node + 1) ^ cursor_[node]++) %
                                     static_cast<uint64_t>(shard));
    const float* p = &row_part_[(row % kRowParts) * dimension_];
    const float* q = &block_part_[(row * kBlocks / rows_) * dimension_];
    float squares = 0;
    for (size_t j = 0; j < dimension_; ++j) {
      const float diff = x[j] - p[j] - q[j];
      gradient_[j] += diff;
      squares += diff * diff;
    }
    loss += 0.5 * squares;
  }
  const float step = static_cast<float>(lr.value_or(lr_) / static_cast<double>(batch_));
  for (size_t j = 0; j < dimension_; ++j) x[j] -= step * gradient_[j];
  return {loss / static_cast<double>(batch_ * static_cast<int64_t>(dimension_)), batch_};
}

std::span<const float> SyntheticWorkload::Gradient(size_t, uint64_t iteration,
                                                   std::span<const coding::WeightedSample> own,
                                                   std::span<const float> model) {
  std::fill(gradient_.begin(), gradient_.end(), 0.0f);
  for (const coding::WeightedSample& s : own) {
    const int64_t row = static_cast<int64_t>(
        (iteration * static_cast<uint64_t>(batch_) + static_cast<uint64_t>(s.sample)) %
        static_cast<uint64_t>(rows_));
    const float w = static_cast<float>(s.weight);
    const float* p = &row_part_[(row % kRowParts) * dimension_];
    const float* q = &block_part_[(row * kBlocks / rows_) * dimension_];
    for (size_t j = 0; j < dimension_; ++j) gradient_[j] += w * (model[j] - p[j] - q[j]);
  }
  return gradient_;
}

std::pair<double, double> SyntheticWorkload::Evaluate(std::span<const float> model, bool) {
  // The mean loss over every row is ½ (‖x − x*‖² + mean_r ‖t_r − x*‖²) / d; the second term does
  // not depend on x, so the loss reported is the first (0 at the optimum).
  double d2 = 0;
  for (size_t j = 0; j < dimension_; ++j) {
    const double diff = static_cast<double>(model[j]) - optimum_[j];
    d2 += diff * diff;
  }
  return {-1.0, 0.5 * d2 / static_cast<double>(dimension_)};
}

std::optional<double> SyntheticWorkload::OptimumDistance(std::span<const float> model) const {
  double d2 = 0, n2 = 0;
  for (size_t j = 0; j < dimension_; ++j) {
    const double diff = static_cast<double>(model[j]) - optimum_[j];
    d2 += diff * diff;
    n2 += static_cast<double>(optimum_[j]) * optimum_[j];
  }
  return std::sqrt(d2 / std::max(n2, 1e-30));
}

double MaxRelativeDistance(const std::vector<std::span<const float>>& models) {
  if (models.size() < 2) return 0;
  const size_t d = models[0].size();
  std::vector<double> mean(d, 0.0);
  for (const auto m : models) {
    for (size_t j = 0; j < d; ++j) mean[j] += m[j];
  }
  double norm = 0;
  for (double& v : mean) {
    v /= static_cast<double>(models.size());
    norm += v * v;
  }
  double worst = 0;
  for (const auto m : models) {
    double d2 = 0;
    for (size_t j = 0; j < d; ++j) d2 += (m[j] - mean[j]) * (m[j] - mean[j]);
    worst = std::max(worst, std::sqrt(d2 / std::max(norm, 1e-30)));
  }
  return worst;
}

}  // namespace murmur::sim
