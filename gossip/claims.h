#pragma once
// Bounds on what members say about their own progress: a member's gossiped step
// clock and sample count steer every node (the cluster's sample budget ends the run, the most
// advanced clock makes trailing nodes catch up), so no single member's word decides either.
//
// - Samples: each member's claim counts for at most ClaimBound(all claims): the second-highest
//   claim (one member cannot exceed what another confirms by doing as much) and kClaimSlack
//   times the median claim (a colluding few cannot exceed what the typical member does). With
//   an honest majority both are honest figures, so liars add at most a few members' worth of
//   work to the estimate instead of ending the run at once; an honest member faster than the
//   rest is undercounted, which makes the run longer, never shorter. A claim is believed up to
//   the bound *when it is made* (GossipNode keeps what it believed of each member's latest
//   claim): a claim that stops growing does not rise with the honest members' progress. The
//   same trimming as Byzantine-robust aggregation's (Yin et al., ICML 2018: coordinate-wise
//   median and trimmed mean), applied to a scalar claim.
// - Clocks: the clock a node catches up to is QuorumClock: the highest live clock, unless it
//   leads every other member's by more than a gap (4 x max(S, the graph's diameter) steps,
//   where a trailing node would ask for a whole model): then the highest that two members (this
//   node among them) reach. One member alone can pull the others at most that far.
// The budget then ends by this node's own accounting (ReportedSamples) or by the finished
// members' quorum (gossip_node.cc), never by one member's claim. Pure functions.

#include <cstdint>
#include <span>

namespace murmur::gossip {

inline constexpr uint64_t kClaimSlack = 2;

// The most any member's sample claim counts for, given every member's claim (this node's own
// included): min(second-highest, kClaimSlack x median); the only claim when there is one.
uint64_t ClaimBound(std::span<const uint64_t> claims);

// The clock to catch up to from every live member's (this node's own included): the highest,
// or the second-highest when there are three or more and the highest leads it by more than
// `max_gap`; 0 when empty.
uint64_t QuorumClock(std::span<const uint64_t> clocks, uint64_t max_gap);

}  // namespace murmur::gossip
