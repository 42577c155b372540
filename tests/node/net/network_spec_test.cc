#include "node/net/network_spec.h"

#include <gtest/gtest.h>

#include <string>

namespace murmur::node::net {
namespace {

TEST(NetworkSpecTest, LoopbackIsTheDefault) {
  for (const char* text : {"", "loopback"}) {
    auto spec = ParseNetworkSpec(text);
    ASSERT_TRUE(spec.ok()) << text;
    EXPECT_FALSE(spec->netns);
    EXPECT_EQ(spec->Describe(), "loopback");
  }
}

TEST(NetworkSpecTest, ParsesEveryPart) {
  auto spec = ParseNetworkSpec(
      "netns:rate=100mbit,burst=256kb,topology=two-racks,uplink=1gbit,latency=5ms,node3=10mbit,"
      "node12=2.5mbit");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec->netns);
  EXPECT_EQ(spec->rate_bps, 100'000'000u);
  EXPECT_EQ(spec->burst_bytes, 256u * 1024);
  EXPECT_EQ(spec->topology, Topology::kTwoRacks);
  EXPECT_EQ(spec->uplink_bps, 1'000'000'000u);
  EXPECT_EQ(spec->latency, std::chrono::milliseconds(5));
  EXPECT_EQ(spec->RateOf(3), 10'000'000u);
  EXPECT_EQ(spec->RateOf(12), 2'500'000u);
  EXPECT_EQ(spec->RateOf(1), 100'000'000u);
  const std::string said = spec->Describe();
  for (const char* part : {"100 Mbit/s per node", "node 3 at 10 Mbit/s", "node 12 at 2.5 Mbit/s",
                           "two racks joined by 1 Gbit/s", "5 ms send delay"}) {
    EXPECT_NE(said.find(part), std::string::npos) << part << " in " << said;
  }
}

TEST(NetworkSpecTest, RatesAtTheirEdges) {
  EXPECT_EQ(*ParseRate("8kbit"), 8'000u);
  EXPECT_EQ(*ParseRate("100gbit"), 100'000'000'000u);
  EXPECT_EQ(*ParseRate("20MBIT"), 20'000'000u);
  EXPECT_EQ(*ParseRate("1.5gbit"), 1'500'000'000u);
  for (const char* bad : {"7kbit", "101gbit", "20", "20mb", "mbit", "-5mbit", "0mbit", "nanmbit",
                          "1e400mbit", "5 mbit"}) {
    EXPECT_FALSE(ParseRate(bad).ok()) << bad;
  }
}

TEST(NetworkSpecTest, BurstFollowsTheRate) {
  EXPECT_EQ(BurstFor(10'000'000), 32u * 1024);     // 10 ms would be 12.5 KB: the floor
  EXPECT_EQ(BurstFor(1'000'000'000), 1'250'000u);  // 10 ms of 1 Gbit/s
}

TEST(NetworkSpecTest, RefusesWithTheReason) {
  const std::pair<const char*, const char*> cases[] = {
      {"netns", "not loopback or netns:"},
      {"wifi:rate=1mbit", "not loopback or netns:"},
      {"netns:", "needs rate"},
      {"netns:burst=64kb", "needs rate"},
      {"netns:rate=1mbit,uplink=1gbit", "needs topology=two-racks"},
      {"netns:rate=1mbit,topology=ring", "not star or two-racks"},
      {"netns:rate=1mbit,color=blue", "unknown part 'color'"},
      {"netns:rate=1mbit,,", "not key=value"},
      {"netns:rate=1mbit,node0=1mbit", "nodeK=RATE"},
      {"netns:rate=1mbit,node257=1mbit", "nodeK=RATE"},
      {"netns:rate=1mbit,nodex=1mbit", "nodeK=RATE"},
      {"netns:rate=1mbit,burst=1kb", "between 1600 bytes"},
      {"netns:rate=1mbit,burst=64", "needs a unit"},
      {"netns:rate=1mbit,latency=11s", "above 10 s"},
      {"netns:rate=1mbit,latency=5", "needs a unit"},
  };
  for (const auto& [text, why] : cases) {
    auto spec = ParseNetworkSpec(text);
    ASSERT_FALSE(spec.ok()) << text;
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(spec.status().message().find(why), std::string_view::npos)
        << text << ": " << spec.status().message();
  }
}

}  // namespace
}  // namespace murmur::node::net
