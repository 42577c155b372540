#include "node/peer/seeds.h"

#include <gtest/gtest.h>

namespace murmur::node {
namespace {

TEST(SeedsTest, NormalizesAndChecksEntries) {
  auto list = ParseSeedList(" a.example:7070, tcp://10.0.0.1:1 ,ipc:///tmp/s.sock,,");
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(*list, (std::vector<std::string>{"tcp://a.example:7070", "tcp://10.0.0.1:1",
                                             "ipc:///tmp/s.sock"}));
  EXPECT_TRUE(ParseSeedList("")->empty());
  for (const char* bad : {"host", "host:", ":80", "host:0", "host:70000", "host:8o"}) {
    auto r = ParseSeedList(bad);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(SeedsTest, ResolvesNamesToEveryAddressAndSkipsUnknownOnes) {
  std::vector<std::string> unresolved;
  auto resolved = ResolveSeeds({"tcp://localhost:7070", "tcp://127.0.0.1:7070",
                                "tcp://no-such-host.invalid:1", "ipc:///tmp/x"},
                               &unresolved);
  // localhost gives 127.0.0.1 (and ::1 where configured); duplicates collapse.
  EXPECT_NE(std::find(resolved.begin(), resolved.end(), "tcp://127.0.0.1:7070"), resolved.end());
  EXPECT_EQ(std::count(resolved.begin(), resolved.end(), "tcp://127.0.0.1:7070"), 1);
  EXPECT_NE(std::find(resolved.begin(), resolved.end(), "ipc:///tmp/x"), resolved.end());
  EXPECT_EQ(unresolved, std::vector<std::string>{"tcp://no-such-host.invalid:1"});
}

}  // namespace
}  // namespace murmur::node
