#include "node/train/synthetic.h"

#include <cmath>
#include <random>
#include <string>

namespace murmur::node {
namespace {

Status Validate(const SyntheticOptions& o) {
  if (o.train_samples < 1 || o.test_samples < 0 || o.features < 1) {
    return InvalidArgumentError("synthetic task needs train_samples >= 1, test_samples >= 0 and "
                                "features >= 1 (got " + std::to_string(o.train_samples) + ", " +
                                std::to_string(o.test_samples) + ", " +
                                std::to_string(o.features) + ")");
  }
  if (!(o.noise >= 0) || !(o.separation >= 0)) {
    return InvalidArgumentError("synthetic task needs noise >= 0 and separation >= 0");
  }
  return OkStatus();
}

Dataset Empty(const std::string& name, TaskKind task, int64_t rows, int64_t cols) {
  Dataset d;
  d.name = name;
  d.task = task;
  d.rows = rows;
  d.cols = cols;
  d.features.resize(static_cast<size_t>(rows * cols));
  d.targets.resize(static_cast<size_t>(rows));
  return d;
}

}  // namespace

StatusOr<TrainTest> MakeLinearRegression(const SyntheticOptions& o) {
  MURMUR_RETURN_IF_ERROR(Validate(o));
  std::mt19937_64 rng(o.seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> w(static_cast<size_t>(o.features));
  for (double& v : w) v = normal(rng) / std::sqrt(static_cast<double>(o.features));
  auto fill = [&](Dataset& d) {
    for (int64_t r = 0; r < d.rows; ++r) {
      double y = 0;
      for (int64_t c = 0; c < d.cols; ++c) {
        const double x = normal(rng);
        d.features[static_cast<size_t>(r * d.cols + c)] = static_cast<float>(x);
        y += x * w[static_cast<size_t>(c)];
      }
      d.targets[static_cast<size_t>(r)] = static_cast<float>(y + o.noise * normal(rng));
    }
  };
  TrainTest out{Empty("linear/train", TaskKind::kRegression, o.train_samples, o.features),
                Empty("linear/test", TaskKind::kRegression, o.test_samples, o.features)};
  fill(out.train);
  fill(out.test);
  return out;
}

StatusOr<TrainTest> MakeGaussianMixture(const SyntheticOptions& o) {
  MURMUR_RETURN_IF_ERROR(Validate(o));
  std::mt19937_64 rng(o.seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  // A random direction scaled so the two means are `separation` apart.
  std::vector<double> mu(static_cast<size_t>(o.features));
  double norm = 0;
  for (double& v : mu) {
    v = normal(rng);
    norm += v * v;
  }
  norm = std::sqrt(norm);
  for (double& v : mu) v *= 0.5 * o.separation / norm;
  std::bernoulli_distribution coin(0.5);
  auto fill = [&](Dataset& d) {
    for (int64_t r = 0; r < d.rows; ++r) {
      const bool positive = coin(rng);
      for (int64_t c = 0; c < d.cols; ++c) {
        const double m = positive ? mu[static_cast<size_t>(c)] : -mu[static_cast<size_t>(c)];
        d.features[static_cast<size_t>(r * d.cols + c)] = static_cast<float>(m + normal(rng));
      }
      d.targets[static_cast<size_t>(r)] = positive ? 1.0f : 0.0f;
    }
  };
  TrainTest out{Empty("mixture/train", TaskKind::kBinary, o.train_samples, o.features),
                Empty("mixture/test", TaskKind::kBinary, o.test_samples, o.features)};
  fill(out.train);
  fill(out.test);
  return out;
}

}  // namespace murmur::node
