#include "base/clock.h"

#include <thread>

#include "base/check.h"

namespace murmur {

TimePoint RealClock::Now() const {
  return std::chrono::time_point_cast<Duration>(std::chrono::steady_clock::now());
}

void RealClock::SleepFor(Duration d) { std::this_thread::sleep_for(d); }

void ManualClock::Advance(Duration d) {
  MURMUR_CHECK_GE(d.count(), 0) << "time cannot go backwards";
  now_ns_.fetch_add(d.count());
}

void ManualClock::Set(TimePoint t) {
  MURMUR_CHECK_GE(t.time_since_epoch().count(), now_ns_.load()) << "time cannot go backwards";
  now_ns_.store(t.time_since_epoch().count());
}

}  // namespace murmur
