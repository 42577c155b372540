#include "node/sim/cpu.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"

namespace murmur::sim {

double SharedCpu::Rate() const {
  if (cores_ <= 0 || left_ns_.empty()) return 1.0;
  return std::min(1.0, static_cast<double>(cores_) / static_cast<double>(left_ns_.size()));
}

void SharedCpu::Advance(TimePoint now) {
  const double done = static_cast<double>((now - at_).count()) * Rate();
  for (auto& [node, left] : left_ns_) left -= done;
  at_ = now;
}

void SharedCpu::Add(size_t node, Duration work, TimePoint now) {
  Advance(now);
  MURMUR_CHECK(!left_ns_.contains(node));
  left_ns_[node] = static_cast<double>(work.count());
  ++version_;
}

void SharedCpu::Remove(size_t node, TimePoint now) {
  Advance(now);
  if (left_ns_.erase(node) > 0) ++version_;
}

std::optional<TimePoint> SharedCpu::NextCompletion() const {
  if (left_ns_.empty()) return std::nullopt;
  double least = left_ns_.begin()->second;
  for (const auto& [node, left] : left_ns_) least = std::min(least, left);
  // Rounded up, so that at that time the job's work is done.
  return at_ + Duration(static_cast<int64_t>(std::ceil(std::max(0.0, least) / Rate())));
}

std::vector<size_t> SharedCpu::TakeDone(TimePoint now) {
  Advance(now);
  std::vector<size_t> done;
  for (auto it = left_ns_.begin(); it != left_ns_.end();) {
    if (it->second <= 0.5) {  // within half a nanosecond of done (rounding)
      done.push_back(it->first);
      it = left_ns_.erase(it);
    } else {
      ++it;
    }
  }
  if (!done.empty()) ++version_;
  return done;
}

}  // namespace murmur::sim
