#pragma once
// Seeded synthetic tasks for the CodedReduce experiments (full-batch regression, as in the
// CodedReduce authors' evaluation). The same (options, seed) always gives the same data.

#include <cstdint>

#include "base/status.h"
#include "node/train/dataset.h"

namespace murmur::node {

struct SyntheticOptions {
  int64_t train_samples = 10000;  // m
  int64_t test_samples = 2000;
  int64_t features = 50;          // d
  double noise = 0.1;             // regression: std of the additive noise on y
  double separation = 1.5;        // mixture: distance between the class means, in noise stds
  uint64_t seed = 1;
};

// y = x . w* + noise with x ~ N(0, I_d) and w* ~ N(0, I_d / d), so y has unit-scale variance.
StatusOr<TrainTest> MakeLinearRegression(const SyntheticOptions& options);

// Two equiprobable classes: x ~ N(+mu, I) for label 1 and N(-mu, I) for label 0, with
// |2 mu| = separation. Labels are the `targets` in {0, 1}.
StatusOr<TrainTest> MakeGaussianMixture(const SyntheticOptions& options);

}  // namespace murmur::node
