#pragma once
// The simulator's network: every node has one NIC whose uplink serializes what it
// sends and whose downlink serializes what it receives; a message occupies each for
// bytes / bandwidth, and its first byte reaches the receiver's NIC one latency after it left the
// sender's (cut-through: an idle path delivers at send + latency + bytes / bandwidth). Two
// messages that arrive at one downlink at once queue (a parent's incast, a snapshot behind an
// update). Loss is drawn per message from a seeded generator; a partition or a node that is down
// loses what crosses it. No wall clock: the caller passes virtual time.
// Lanes: membership messages travel on a connection of their own (the real transport's, see
// gossip/transport/transport.h), so they neither wait for nor hold a NIC's queue: they take
// latency + their own bytes / bandwidth. This idealizes TCP flows sharing a link packet by packet;
// on a link shaped by tc tbf a probe still waits behind the qdisc's backlog (at most its
// `latency`, 200 ms under murmur local's netns), which is not modeled.
// Thread safety: none; the simulator's one thread.

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/status.h"

namespace murmur::sim {

struct LinkSpec {
  Duration latency{0};    // one way
  double bits_per_s = 0;  // 0: unlimited (a message takes no time on a link)
  double loss = 0;        // probability a message is lost, in [0, 1)
  // Faults for the fault swarm (cli/swarm_command.cc), each drawn per message from the seeded
  // stream: a message delivered twice (the copy up to `jitter` later), a message held up to
  // `jitter` beyond its latency (so later ones may overtake it), one byte of a message flipped
  // (of its header or its tensor frame) before the receiver decodes it.
  double duplicate = 0;  // in [0, 1)
  Duration jitter{0};
  double corrupt = 0;  // in [0, 1)

  // Time `bytes` occupy a link.
  Duration Transmission(uint64_t bytes) const;
  // The canonical text, which parses back to the same spec ("latency=50ms,bandwidth=100Mbit").
  std::string ToString() const;
};

// A link by name, then optional overrides, comma-separated:
//   ideal                     no latency, unlimited bandwidth
//   loopback                  5 us, 40 Gbit/s (what one host's TCP loopback roughly gives)
//   100GbE | 25GbE | 10GbE    5 / 10 / 20 us, that many Gbit/s (a data-centre rack)
//   1GbE                      50 us, 1 Gbit/s
//   wan:D                     latency D, 100 Mbit/s unless given ("wan:50ms,100Mbit")
//   latency=D  bandwidth=B  loss=P   overrides; a bare bandwidth (100Mbit) also works
//   duplicate=P  jitter=D  corrupt=P  faults (LinkSpec)
// Bandwidths take bit, Kbit, Mbit, Gbit (per second); durations us, ms, s.
// kInvalidArgument naming the part that is wrong and what is allowed.
StatusOr<LinkSpec> ParseLink(std::string_view text);

// A tensor frame's bytes at the model dimension the links carry (`scale` × the dimension
// computed): its fixed 40-byte header as is, its index and value sections stretched (top-k's gaps,
// and so its varint indices, keep their size when k and the dimension grow together).
uint64_t StretchedFrameBytes(size_t bytes, double scale);

class NetworkModel {
 public:
  NetworkModel(size_t nodes, LinkSpec link, uint64_t seed);

  const LinkSpec& link() const { return link_; }
  // Reserves `from`'s uplink for a message of `bytes` sent at `now` (plus `hold`, an injected
  // send delay, before it reaches the NIC). Returns when its first byte reaches `to`'s NIC, or
  // nullopt when it is lost (drawn loss). Partitions and down nodes are checked at arrival.
  // `own_lane`: a membership message (above), which reserves nothing.
  std::optional<TimePoint> Send(size_t from, size_t to, uint64_t bytes, TimePoint now,
                                Duration hold = Duration(0), bool own_lane = false);
  // Reserves `to`'s downlink for a message whose first byte arrives at `at`: returns when its
  // last byte is in (the delivery time).
  TimePoint Receive(size_t to, uint64_t bytes, TimePoint at, bool own_lane = false);
  // False across a partition or when the receiver is down (what a sender sent before it went
  // down is on its way).
  bool Reachable(size_t from, size_t to) const;

  // Nodes in different groups cannot reach each other; `groups` has one entry per node.
  void Partition(std::vector<int> groups) { group_ = std::move(groups); }
  void Heal() { std::fill(group_.begin(), group_.end(), 0); }
  void SetDown(size_t node, bool down);

  // A seeded draw in [0, 1), shared with the callers that inject loss (one stream: one seed
  // gives one run).
  double Uniform() { return std::uniform_real_distribution<double>(0, 1)(rng_); }
  // A delay drawn in [0, link().jitter).
  Duration Jitter();

 private:
  LinkSpec link_;
  std::mt19937_64 rng_;
  std::vector<TimePoint> uplink_free_;
  std::vector<TimePoint> downlink_free_;
  std::vector<int> group_;
  std::vector<bool> down_;
};

}  // namespace murmur::sim
