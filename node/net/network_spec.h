#pragma once
// Where the nodes of `murmur local` talk: loopback (the default), or a network of namespaces
// with shaped links (netns_network.h), parsed once from its key into this type.
//
//   loopback
//   netns:rate=100mbit[,burst=256kb][,topology=star|two-racks][,uplink=1gbit][,latency=5ms]
//         [,node3=10mbit,...]
//
// rate: every node's link, each way (tc tbf on its egress and on its bridge port's egress, its
// ingress); nodeK=R: node K (1..N) behind its own rate (a bandwidth straggler); topology
// two-racks: the first half of the nodes on one bridge, the rest on another, the bridges joined
// by a link of `uplink` (default: rate); latency: netem is absent here, so it is the nodes' own
// send delay (node/peer/straggler.h send_delay), added to every node's injection.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/status.h"

namespace murmur::node::net {

enum class Topology { kStar, kTwoRacks };

struct NetworkSpec {
  bool netns = false;        // false: loopback, and the rest is unused
  uint64_t rate_bps = 0;     // bits per second, each way, per node
  uint64_t burst_bytes = 0;  // tbf bucket; 0: BurstFor(rate)
  Topology topology = Topology::kStar;
  uint64_t uplink_bps = 0;                // two-racks: the link between the racks; 0: rate_bps
  std::map<int, uint64_t> node_rate_bps;  // node id (1-based) -> its own rate
  Duration latency{0};

  // The rate of node `id` (1-based).
  uint64_t RateOf(int id) const;
  // "netns, 100 Mbit/s per node (node 3: 10 Mbit/s), star": what a run prints.
  std::string Describe() const;
  bool operator==(const NetworkSpec&) const = default;
};

// kInvalidArgument saying which part is wrong and what it allows.
StatusOr<NetworkSpec> ParseNetworkSpec(std::string_view text);
// "100mbit" -> 100'000'000 (bit, kbit, mbit, gbit; decimal, as tc reads them).
StatusOr<uint64_t> ParseRate(std::string_view text);
// "10 Mbit/s", "1.5 Gbit/s".
std::string RateText(uint64_t bps);
// The tbf bucket for a rate: 10 ms of the rate, at least 32 KiB (a few full-size packets and
// the kernel's timer granularity; smaller buckets shape below the rate).
uint64_t BurstFor(uint64_t bps);

}  // namespace murmur::node::net
