#include "base/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>

namespace murmur {
namespace {

TEST(StatusTest, OkByDefaultAndCheap) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.ToString(), "OK");
  EXPECT_EQ(sizeof(Status), sizeof(void*));
}

TEST(StatusTest, CarriesCodeAndMessage) {
  Status s = DataLossError("frame truncated");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_EQ(s.message(), "frame truncated");
  EXPECT_EQ(s.ToString(), "data_loss: frame truncated");
  Status copy = s;
  EXPECT_EQ(copy, s);
  EXPECT_EQ(s.WithContext("peer 3").message(), "peer 3: frame truncated");
  EXPECT_TRUE(OkStatus().WithContext("x").ok());
}

TEST(StatusTest, EveryCodeHasADistinctName) {
  const StatusCode codes[] = {StatusCode::kOk, StatusCode::kInvalidArgument,
                              StatusCode::kDeadlineExceeded, StatusCode::kNotFound,
                              StatusCode::kResourceExhausted, StatusCode::kFailedPrecondition,
                              StatusCode::kOutOfRange, StatusCode::kUnimplemented,
                              StatusCode::kInternal, StatusCode::kUnavailable,
                              StatusCode::kDataLoss};
  std::set<std::string_view> names;
  for (auto c : codes) names.insert(StatusCodeName(c));
  EXPECT_EQ(names.size(), std::size(codes));
}

StatusOr<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgumentError("odd");
  return x / 2;
}

StatusOr<int> Quarter(int x) {
  MURMUR_ASSIGN_OR_RETURN(int h, Half(x));
  MURMUR_ASSIGN_OR_RETURN(h, Half(h));
  return h;
}

Status CheckEven(int x) {
  MURMUR_RETURN_IF_ERROR(Half(x).status());
  return OkStatus();
}

TEST(StatusOrTest, MacrosPropagateErrorsAndValues) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_EQ(Quarter(6).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckEven(4).ok());
  EXPECT_EQ(CheckEven(3).message(), "odd");
}

TEST(StatusOrTest, HoldsMoveOnlyValues) {
  StatusOr<std::unique_ptr<int>> p = std::make_unique<int>(7);
  ASSERT_TRUE(p.ok());
  std::unique_ptr<int> taken = std::move(p).value();
  EXPECT_EQ(*taken, 7);
}

TEST(StatusOrDeathTest, ValueOfErrorAborts) {
  StatusOr<int> bad = NotFoundError("nothing");
  EXPECT_DEATH((void)bad.value(), "not_found: nothing");
}

}  // namespace
}  // namespace murmur
