#include "base/check.h"

#include <gtest/gtest.h>

#include "base/log.h"
#include "base/status.h"

namespace murmur {
namespace {

TEST(CheckDeathTest, FailedCheckPrintsValuesAndAborts) {
  const int n = 3;
  EXPECT_DEATH(MURMUR_CHECK_EQ(n, 4) << "context", "check failed.*3 vs 4.*context");
  EXPECT_DEATH(MURMUR_CHECK_OK(InternalError("boom")), "internal: boom");
}

TEST(CheckTest, PassingCheckDoesNotEvaluateStream) {
  int evaluated = 0;
  MURMUR_CHECK(true) << (++evaluated);
  MURMUR_CHECK_LT(1, 2);
  EXPECT_EQ(evaluated, 0);
}

TEST(LogTest, LevelsAreValidated) {
  EXPECT_TRUE(SetLogLevel("debug").ok());
  EXPECT_TRUE(SetLogLevel("off").ok());
  EXPECT_EQ(SetLogLevel("loud").code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(SetLogLevel("info").ok());
}

}  // namespace
}  // namespace murmur
