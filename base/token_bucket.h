#pragma once
// A token bucket on a caller's clock (sans-IO): at most `burst` events at once and `per_second`
// on average. Bounds what a peer can make a node do for it (snapshots served, for one).
// Thread safety: none.

#include <algorithm>
#include <optional>

#include "base/clock.h"

namespace murmur {

class TokenBucket {
 public:
  TokenBucket(double per_second, double burst)
      : per_second_(per_second), burst_(burst), tokens_(burst) {}

  // True, and one token spent, when an event may happen at `now`.
  bool Take(TimePoint now) {
    if (refilled_.has_value()) {
      tokens_ = std::min(burst_, tokens_ + per_second_ * ToSeconds(now - *refilled_));
    }
    refilled_ = now;
    if (tokens_ < 1) return false;
    tokens_ -= 1;
    return true;
  }
  // Gives back the token of an event Take allowed that did not happen.
  void Return() { tokens_ = std::min(burst_, tokens_ + 1); }

 private:
  double per_second_;
  double burst_;
  double tokens_;
  std::optional<TimePoint> refilled_;  // none before the first event
};

}  // namespace murmur
