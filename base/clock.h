#pragma once
// Time as the protocols see it. Protocol code takes a `Clock&` (or a `TimePoint now`) instead of
// reading the wall clock, so tests and the simulator drive it with a ManualClock.
// Thread safety: RealClock is stateless; ManualClock is safe to read and advance from several
// threads.

#include <atomic>
#include <chrono>

namespace murmur {

using Duration = std::chrono::nanoseconds;
// Nanoseconds since an arbitrary, clock-specific epoch. Monotonic.
using TimePoint = std::chrono::time_point<std::chrono::steady_clock, Duration>;

class Clock {
 public:
  virtual TimePoint Now() const = 0;
  // Blocks the calling thread for `d` of this clock's time. ManualClock returns at once after
  // advancing itself, so code that sleeps runs instantly under test.
  virtual void SleepFor(Duration d) = 0;

 protected:
  ~Clock() = default;
};

// std::chrono::steady_clock.
class RealClock final : public Clock {
 public:
  TimePoint Now() const override;
  void SleepFor(Duration d) override;
};

// Time moves only when a test says so.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimePoint start = TimePoint{}) : now_ns_(start.time_since_epoch().count()) {}
  TimePoint Now() const override { return TimePoint(Duration(now_ns_.load())); }
  void SleepFor(Duration d) override { Advance(d); }
  // REQUIRES: d >= 0
  void Advance(Duration d);
  void Set(TimePoint t);

 private:
  std::atomic<int64_t> now_ns_;
};

// Seconds as a double, for reports and metrics.
inline double ToSeconds(Duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace murmur
