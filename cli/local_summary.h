#pragma once
// Sentences of `murmur local`'s gossip summary that must agree with each other: how the run
// ended, said with the samples the nodes trained against the budget, in one place.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace murmur::node {

// "1, 2, 4" (node ids).
std::string JoinIds(const std::vector<size_t>& ids);

// How the run ended, from the finished nodes' final reports: `end_reason` the first reason that
// is not "peer" ("" none), `ends` each reason with its nodes, `failure` the first node that failed
// ("" none), `trained` the samples the finished nodes trained, `budget` the cluster's budget in
// samples (0: none), `finished` of `nodes` finished cleanly, `crashed`: a process was killed
// during the run (what it trained before is in no final report). E.g. "ended by epochs (the nodes'
// estimate of the cluster's samples reached the budget) after 2.7 s; the nodes' final reports
// count 104656 of 120000 samples (87%): nodes 1, 2, 4 by epochs, node 3 by peer".
std::string EndAccount(const std::string& end_reason,
                       const std::map<std::string, std::vector<size_t>>& ends,
                       const std::string& failure, int64_t trained, int64_t budget, double wall,
                       size_t finished, size_t nodes, bool crashed);

}  // namespace murmur::node
