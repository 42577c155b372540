#include "node/train/synthetic.h"

#include <gtest/gtest.h>

namespace murmur::node {
namespace {

TEST(SyntheticTest, SameSeedSameDataOtherSeedOtherData) {
  SyntheticOptions o;
  o.train_samples = 101;
  o.test_samples = 7;
  o.features = 13;
  o.seed = 5;
  auto a = MakeGaussianMixture(o), b = MakeGaussianMixture(o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->train.features, b->train.features);
  EXPECT_EQ(a->train.targets, b->train.targets);
  EXPECT_EQ(a->train.rows, 101);
  EXPECT_EQ(a->test.rows, 7);
  EXPECT_EQ(a->train.task, TaskKind::kBinary);
  o.seed = 6;
  auto c = MakeGaussianMixture(o);
  EXPECT_NE(a->train.features, c->train.features);
}

TEST(SyntheticTest, LinearTargetsFollowTheModelUpToNoise) {
  SyntheticOptions o;
  o.train_samples = 4000;
  o.features = 8;
  o.noise = 0.0;
  auto d = MakeLinearRegression(o);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->train.task, TaskKind::kRegression);
  // y = x . w* with |w*|^2 ~ 1, so Var(y) ~ 1. (That y is exactly linear in x is shown by
  // TrainerTest, which fits it down to the noise floor.)
  double mean = 0, var = 0;
  for (float t : d->train.targets) mean += t;
  mean /= 4000;
  for (float t : d->train.targets) var += (t - mean) * (t - mean);
  var /= 4000;
  EXPECT_GT(var, 0.2);
  EXPECT_LT(var, 5.0);
}

TEST(SyntheticTest, MixtureClassesAreBalancedAndSeparated) {
  SyntheticOptions o;
  o.train_samples = 20000;
  o.features = 4;
  o.separation = 3.0;
  auto d = MakeGaussianMixture(o);
  ASSERT_TRUE(d.ok());
  double positives = 0;
  for (float t : d->train.targets) positives += t;
  EXPECT_NEAR(positives / 20000, 0.5, 0.02);
}

TEST(SyntheticTest, RejectsEmptyShapes) {
  SyntheticOptions o;
  o.features = 0;
  EXPECT_EQ(MakeLinearRegression(o).status().code(), StatusCode::kInvalidArgument);
  o.features = 3;
  o.train_samples = 0;
  EXPECT_EQ(MakeGaussianMixture(o).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace murmur::node
