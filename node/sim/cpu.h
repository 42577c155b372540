#pragma once
// Compute on shared cores: the simulated processes of a run on `cores` cores, as
// `murmur local` runs them on one machine. Processor sharing: while k jobs compute, each advances
// at min(1, cores / k) of full speed, so a process that sleeps (an injected straggler delay) frees
// its share for the others, as it does on a real machine. cores = 0: every process has its own.
// No wall clock: the caller passes virtual time. Thread safety: none.

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "base/clock.h"

namespace murmur::sim {

class SharedCpu {
 public:
  explicit SharedCpu(int cores) : cores_(cores) {}

  // `node` starts a computation of `work` CPU time at `now`. REQUIRES: it has none.
  void Add(size_t node, Duration work, TimePoint now);
  // Drops `node`'s computation (it crashed); nothing when it has none.
  void Remove(size_t node, TimePoint now);
  // When the first computation ends if nothing changes; nullopt when none runs.
  std::optional<TimePoint> NextCompletion() const;
  // The computations done by `now`, removed, in node order.
  std::vector<size_t> TakeDone(TimePoint now);
  // Bumps on every change: a completion computed for an older version is void.
  uint64_t version() const { return version_; }
  size_t running() const { return left_ns_.size(); }

 private:
  double Rate() const;
  void Advance(TimePoint now);

  int cores_;
  std::map<size_t, double> left_ns_;  // CPU time each computation still needs
  TimePoint at_{};                    // when left_ns_ was last brought up to date
  uint64_t version_ = 0;
};

}  // namespace murmur::sim
