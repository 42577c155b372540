// The injection lists of murmur local and murmur sim (cli/injection_lists.h): which process each
// entry names, and the refusals of entries that name none or say too little.

#include "cli/injection_lists.h"

#include <gtest/gtest.h>

namespace murmur::node {
namespace {

TEST(InjectionListsTest, StraggleEntriesMapToProcessIndices) {
  // Four workers under one root (roots = 1): node K is process K-1, worker W process W-1+1.
  auto s = ParseStraggleList("node=2,slowdown=4;worker=3,delay=10ms", 5, /*ranks=*/true, 1);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->size(), 2u);
  EXPECT_EQ(s->at(1), "slowdown=4");
  EXPECT_EQ(s->at(3), "delay=10ms");
  auto r = ParseStraggleList("rank=0,slowdown=2", 5, /*ranks=*/true, 1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->at(0), "slowdown=2");
}

TEST(InjectionListsTest, StraggleEntriesThatNameNoProcessAreRefused) {
  for (const char* bad : {"node=0,slowdown=4", "node=6,slowdown=4", "slowdown=4",
                          "node=x,slowdown=4", "node=2,slowdown=nope"}) {
    EXPECT_EQ(ParseStraggleList(bad, 5, true, 1).status().code(), StatusCode::kInvalidArgument)
        << bad;
  }
  // rank=R is the synchronous modes' only.
  EXPECT_EQ(ParseStraggleList("rank=1,slowdown=2", 5, /*ranks=*/false, 0).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(InjectionListsTest, CrashesAndJoinsReadTheirTimes) {
  auto c = ParseCrashList("node=3,at=5s,down=1500ms;node=1,at=2s", 4);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->size(), 2u);
  EXPECT_EQ((*c)[0].index, 2);
  EXPECT_DOUBLE_EQ((*c)[0].at, 5.0);
  EXPECT_DOUBLE_EQ((*c)[0].down, 1.5);
  EXPECT_DOUBLE_EQ((*c)[1].down, 0.0);  // not restarted
  for (const char* bad : {"node=5,at=1s", "node=1", "node=1,at=1", "node=1,at=1s,when=2s"}) {
    EXPECT_FALSE(ParseCrashList(bad, 4).ok()) << bad;
  }
  auto j = ParseJoinList("node=2,at=3s", 4);
  ASSERT_TRUE(j.ok()) << j.status();
  ASSERT_EQ(j->size(), 1u);
  EXPECT_EQ((*j)[0].index, 1);
  EXPECT_DOUBLE_EQ((*j)[0].at, 3.0);
  EXPECT_FALSE(ParseJoinList("node=2,at=3s,down=1s", 4).ok());  // a join has no down time
}

}  // namespace
}  // namespace murmur::node
