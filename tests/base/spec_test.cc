// SplitSpec and ParseNumber: the shared pieces of every spec parser.
#include "base/spec.h"

#include <gtest/gtest.h>

namespace murmur {
namespace {

TEST(SpecTest, SplitsNameParameterAndOptions) {
  auto s = SplitSpec("topk:0.01,values=fp16,seed=3");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->name, "topk");
  ASSERT_TRUE(s->parameter.has_value());
  EXPECT_EQ(*s->parameter, "0.01");
  ASSERT_EQ(s->options.size(), 2u);
  EXPECT_EQ(s->options[0].first, "values");
  EXPECT_EQ(s->options[0].second, "fp16");
  EXPECT_EQ(s->options[1].first, "seed");
  EXPECT_EQ(s->options[1].second, "3");
}

TEST(SpecTest, NameAloneOrWithOptionsOnly) {
  auto bare = SplitSpec("none");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->name, "none");
  EXPECT_FALSE(bare->parameter.has_value());
  EXPECT_TRUE(bare->options.empty());
  auto options = SplitSpec("int8,ef=off");
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->name, "int8");
  EXPECT_FALSE(options->parameter.has_value());
  ASSERT_EQ(options->options.size(), 1u);
  EXPECT_EQ(options->options[0].first, "ef");
}

TEST(SpecTest, OptionsAfterTheColon) {
  auto s = SplitSpec("nesterov:every=20,lr=0.7", /*options_after_colon=*/true);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->name, "nesterov");
  EXPECT_FALSE(s->parameter.has_value());
  ASSERT_EQ(s->options.size(), 2u);
  EXPECT_EQ(s->options[1].first, "lr");
  EXPECT_EQ(s->options[1].second, "0.7");
  // An empty list after the colon is no options at all.
  auto empty = SplitSpec("nesterov:", true);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->options.empty());
}

TEST(SpecTest, AnOptionWithoutKeyOrEqualsIsRefused) {
  for (const char* text : {"topk:0.1,values", "topk:0.1,=fp16", "topk:0.1,", "a:b=1,,c=2"}) {
    auto s = SplitSpec(text, std::string_view(text).starts_with("a:"));
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(s.status().message().find("is not key=value"), std::string::npos) << text;
  }
}

TEST(SpecTest, NumbersAreWholeAndInRange) {
  EXPECT_EQ(*ParseNumber<int>("42", "n"), 42);
  EXPECT_EQ(*ParseNumber<double>("-0.5", "x"), -0.5);
  for (const char* bad : {"", "4x", " 4", "+4", "0x10"}) {
    auto v = ParseNumber<int>(bad, "every");
    EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(v.status().message(), "every '" + std::string(bad) + "' is not a number");
  }
  EXPECT_FALSE(ParseNumber<uint8_t>("300", "small").ok());  // out of range
  // A floating value must be finite: from_chars reads "inf" and "nan", no caller wants them.
  for (const char* bad : {"inf", "-inf", "nan", "1e999"}) {
    EXPECT_FALSE(ParseNumber<double>(bad, "lr").ok()) << bad;
    EXPECT_FALSE(ParseNumber<float>(bad, "lr").ok()) << bad;
  }
  EXPECT_EQ(*ParseNumber<float>("1e38", "x"), 1e38f);
}

TEST(SpecTest, DurationsNeedAUnitAndLieWithinADay) {
  using std::chrono::microseconds;
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  EXPECT_EQ(*ParseDuration("250ms"), milliseconds(250));
  EXPECT_EQ(*ParseDuration("1.5s"), milliseconds(1500));
  EXPECT_EQ(*ParseDuration("40us"), microseconds(40));
  EXPECT_EQ(*ParseDuration("0s"), Duration(0));
  EXPECT_EQ(*ParseDuration("86400s"), seconds(86400));
  for (const char* bad : {"5", "", "ms", "5 ms", "5min"}) {
    auto d = ParseDuration(bad);
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_NE(ParseDuration("5").status().message().find("needs a unit: us, ms or s"), std::string::npos);
  for (const char* bad : {"-1ms", "86401s", "86400001ms"}) {
    auto d = ParseDuration(bad);
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(d.status().message().find("between 0 and a day"), std::string::npos) << bad;
  }
  for (const char* bad : {"infs", "nanms"}) {
    auto d = ParseDuration(bad);
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(d.status().message().find("is not a number"), std::string::npos) << bad;
  }
}

}  // namespace
}  // namespace murmur
