#pragma once
// A gossip node's rounds in time (gossip_node.h "training"): on which step a round falls, when a
// published outer round may mix, and when the step clock alone goes to the trackers between
// rounds. The periods themselves are RoundPeriod's.
//
// - A round falls on the step clock's multiples of the outer H (the same steps on every member:
//   the members' updates of one round are what the wait is for), or every `period` steps since
//   the last one.
// - An outer round goes out at once and mixes once the mixing peers sent theirs of the same
//   round: each peer within a quarter round (H / 4 steps, plus the overlap) of the round's step
//   that is not a marked straggler nor finished, and whose public copy here is not from the round
//   or later yet; at most until `wait_until`. Under OuterOptions::overlap the node steps on
//   meanwhile and the round mixes at the latest `overlap` steps after it.
// - Per neighbour, the highest step clock of a message that changed its public copy here: its
//   copy holds its rounds up to that clock (members of the view only, pruned at each round).
// - Between rounds, every S / 2 steps the clock alone, so that the neighbours' soft-sync gates
//   need not wait for the membership view's clocks, a probe period old.
//
// Invariants: a round is never due while one is pending (an overlapped round mixes within H − 1
// steps); a copy's clock never decreases; the overlap is 0 unless a round is pending. Sans-IO.
// Thread safety: none.

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "base/clock.h"
#include "gossip/choco.h"
#include "gossip/claims_ledger.h"
#include "gossip/soft_sync.h"

namespace murmur::gossip {

class RoundScheduler {
 public:
  // After the step that raised the clock to `step`: whether a round falls on it. `outer_h`: the
  // outer rounds' H while the outer optimizer is active; else every `period` steps.
  bool Due(uint64_t step, std::optional<int> outer_h, int period);

  // The round at `clock` over `view`, published with `stats`; it mixes at once unless Pend.
  void Begin(uint64_t clock, std::vector<NodeId> view, const ChocoRoundStats& stats);
  // The round begun waits for its peers until `wait_until`, stepping on `overlap` steps meanwhile.
  void Pend(TimePoint wait_until, int overlap);
  // An outer round of H `outer_h` waits at most a quarter of its steps at this node's pace
  // (`step_seconds` a step), and never beyond soft sync's wait `max_wait`.
  void PendOuter(int outer_h, double step_seconds, Duration max_wait, int overlap, TimePoint now) {
    const auto reach = std::chrono::duration_cast<Duration>(
        std::chrono::duration<double>(0.25 * outer_h * step_seconds));
    Pend(now + std::min(max_wait, reach), overlap);
  }
  // The round mixed: nothing pending, no overlap.
  void Mixed();

  bool pending() const { return pending_; }
  int overlap() const { return overlap_; }
  uint64_t clock() const { return clock_; }
  TimePoint wait_until() const { return wait_until_; }
  const std::vector<NodeId>& view() const { return view_; }
  const ChocoRoundStats& stats() const { return stats_; }

  // Whether every peer of `mixing` (the round's mixing peers) that the round waits for has its
  // update of the round in (see above).
  bool PeersIn(const std::vector<NodeId>& mixing, int outer_h, const SoftSync& sync,
               const ClaimsLedger& claims, TimePoint now) const;
  // Whether the pending round mixes now (the budget aside): without overlap once its peers are
  // in or the wait is over; under overlap once its peers are in or `overlap` steps passed.
  bool MixDue(uint64_t step, const std::vector<NodeId>& mixing, int outer_h, const SoftSync& sync,
              const ClaimsLedger& claims, TimePoint now) const;

  // A message at `clock` from `from` changed its public copy here.
  void CopyApplied(NodeId from, uint64_t clock);
  // Forgets the copies of members not in `view` (sorted).
  void Prune(const std::vector<NodeId>& view);

  // Whether the clock alone goes out after `step` (every max(S / 2, 1) steps since the latest
  // round or announcement; never without soft sync, S < 0); recorded as sent when so.
  bool ClockDue(uint64_t step, int64_t max_lead);
  // A round or an announcement told the trackers `step`.
  void ClockSent(uint64_t step) { clock_sent_ = step; }

 private:
  bool pending_ = false;
  int overlap_ = 0;
  uint64_t clock_ = 0;
  TimePoint wait_until_{};
  std::vector<NodeId> view_;
  ChocoRoundStats stats_;
  std::map<NodeId, uint64_t> copy_clock_;
  int64_t steps_since_round_ = 0;
  uint64_t clock_sent_ = 0;
};

}  // namespace murmur::gossip
