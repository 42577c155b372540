#include "node/peer/straggler.h"

#include <gtest/gtest.h>

namespace murmur::node {
namespace {

using std::chrono::milliseconds;

TEST(StragglerTest, ParsesEveryKeyAndPrintsItBack) {
  auto o = ParseStraggle("slowdown=4,delay=20ms,exp=1.5s,exp_slowdown=2,pause=100..200,send_delay=40us,drop=0.25,seed=9");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_DOUBLE_EQ(o->slowdown, 4);
  EXPECT_EQ(o->delay, milliseconds(20));
  EXPECT_EQ(o->exp_mean, milliseconds(1500));
  EXPECT_DOUBLE_EQ(o->exp_slowdown, 2);
  EXPECT_EQ(o->pause_from, 100);
  EXPECT_EQ(o->pause_to, 200);
  EXPECT_EQ(o->send_delay, std::chrono::microseconds(40));
  EXPECT_DOUBLE_EQ(o->drop, 0.25);
  EXPECT_EQ(o->seed, 9u);
  EXPECT_TRUE(o->active());
  auto again = ParseStraggle(StraggleSpec(*o));
  ASSERT_TRUE(again.ok()) << StraggleSpec(*o);
  EXPECT_EQ(StraggleSpec(*again), StraggleSpec(*o));
  auto none = ParseStraggle("");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->active());
  EXPECT_EQ(StraggleSpec(*none), "");
  auto spelled = ParseStraggle("none");
  ASSERT_TRUE(spelled.ok());
  EXPECT_EQ(StraggleSpec(*spelled), "");
  EXPECT_FALSE(ParseStraggle("none,slowdown=2").ok());
}

TEST(StragglerTest, BadSpecsSayWhatIsWrong) {
  const std::pair<const char*, const char*> cases[] = {
      {"slowdown=0.5", "slowdown must be in [1, 1000]"},
      {"slowdown=abc", "is not a number"},
      {"delay=10", "needs a unit"},
      {"delay=-5ms", "between 0 and a day"},
      {"drop=1", "probability in [0, 1)"},
      {"pause=200..100", "FROM < TO"},
      {"pause=5", "FROM..TO"},
      {"speed=2", "unknown key 'speed'"},
      {"slowdown", "is not key=value"},
      {"exp_slowdown=0", "exp_slowdown must be in (0, 1000]"},
  };
  for (const auto& [spec, want] : cases) {
    auto o = ParseStraggle(spec);
    ASSERT_FALSE(o.ok()) << spec;
    EXPECT_NE(o.status().message().find(want), std::string_view::npos)
        << spec << ": " << o.status().ToString();
  }
}

TEST(StragglerTest, SlowdownDelayAndPause) {
  StragglerInjector slow(*ParseStraggle("slowdown=4,delay=5ms"));
  EXPECT_EQ(slow.AfterStep(milliseconds(10)), milliseconds(35));
  StragglerInjector none(StragglerOptions{});
  EXPECT_EQ(none.AfterStep(milliseconds(10)).count(), 0);
  // Exponential delays: seeded, mean close to the configured one over many draws.
  StragglerInjector exp(*ParseStraggle("exp=10ms,seed=3"));
  double sum = 0;
  for (int i = 0; i < 20000; ++i) sum += ToSeconds(exp.AfterStep(Duration(0)));
  EXPECT_NEAR(sum / 20000, 0.010, 0.0005) << "seed 3";
  // exp_slowdown: the mean scales with the step's compute time.
  StragglerInjector relative(*ParseStraggle("exp_slowdown=1,seed=3"));
  sum = 0;
  for (int i = 0; i < 20000; ++i) sum += ToSeconds(relative.AfterStep(milliseconds(4)));
  EXPECT_NEAR(sum / 20000, 0.004, 0.0002) << "seed 3";
  EXPECT_EQ(relative.AfterStep(Duration(0)).count(), 0);
  const StragglerOptions pause = *ParseStraggle("pause=10..20");  // applied by GossipNode
  EXPECT_EQ(pause.pause_from, 10);
  EXPECT_EQ(pause.pause_to, 20);
}

}  // namespace
}  // namespace murmur::node
