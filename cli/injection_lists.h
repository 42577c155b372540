#pragma once
// The injections of a cluster run by node (`murmur local` and `murmur sim`: --straggle, --crash,
// --join), read once the number of processes is known (a node=K out of range is refused).

#include <map>
#include <string>
#include <vector>

#include "base/status.h"

namespace murmur::node {

// `node=K,<spec>;...` (K the node's id, 1..N), `worker=W,<spec>` (W 1.., the W-th process that
// computes gradients: the same worker in every mode) or, with `ranks` (synchronous modes),
// `rank=R,<spec>` (R 0..N-1, the tree's or ring's rank) -> the straggle spec of each process
// index (0-based: node K is process K-1, rank R process R, worker W process W-1+roots, where
// `roots` processes of a tree compute nothing); kInvalidArgument for a bad number or spec.
StatusOr<std::map<int, std::string>> ParseStraggleList(const std::string& text, int nodes,
                                                       bool ranks, int roots);

// An injected crash (--crash): SIGKILL process `index` `at` seconds into the run and, when
// `down` > 0, start it again that many seconds later.
struct CrashPlan {
  int index = 0;
  double at = 0;
  double down = 0;
  bool killed = false, restarted = false;
};
// `node=K,at=S[,down=D];...` (K 1..N, seconds; D 0: not restarted); kInvalidArgument says why.
StatusOr<std::vector<CrashPlan>> ParseCrashList(const std::string& text, int nodes);

// A late start (`murmur sim --join`): process `index` starts `at` seconds into the run.
struct JoinPlan {
  int index = 0;
  double at = 0;
};
// `node=K,at=S;...` (K 1..N); kInvalidArgument says why.
StatusOr<std::vector<JoinPlan>> ParseJoinList(const std::string& text, int nodes);

// A forward jump of a node's clock (`murmur sim --clock-jump`): from `at` seconds on, process
// `index`'s clock reads `by` seconds ahead.
struct ClockJumpPlan {
  int index = 0;
  double at = 0;
  double by = 0;
};
// `node=K,at=S,by=D;...` (K 1..N, D > 0); kInvalidArgument says why.
StatusOr<std::vector<ClockJumpPlan>> ParseClockJumpList(const std::string& text, int nodes);

// An insider gone hostile (`murmur sim --attack`): from `at` seconds on, process `index` sends a
// hostile copy of each training message first; `kind` is "clock" or "nonfinite".
struct AttackPlan {
  int index = 0;
  double at = 0;
  std::string kind;
};
// `node=K,at=S,kind=clock|nonfinite;...` (K 1..N); kInvalidArgument says why.
StatusOr<std::vector<AttackPlan>> ParseAttackList(const std::string& text, int nodes);

// A partition (`murmur sim --partition`): from `at` seconds on, the processes of `side` (0-based)
// and the others cannot reach each other, for `length` seconds (0: for good).
struct PartitionPlan {
  std::vector<int> side;
  double at = 0;
  double length = 0;
};
// `nodes=K1/K2/...,at=S[,for=D];...` (K 1..N); kInvalidArgument says why.
StatusOr<std::vector<PartitionPlan>> ParsePartitionList(const std::string& text, int nodes);

}  // namespace murmur::node
