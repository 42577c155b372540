#include "node/peer/straggler.h"

#include "base/log.h"
#include "base/spec.h"
#include "node/peer/peer_node.h"

#include <cmath>
#include <fmt/format.h>

namespace murmur::node {
namespace {

// Step clocks stay far below this (gossip::kMaxStepClock is 2^48); a double holds it exactly.
constexpr double kMaxPauseStep = 281474976710656.0;

StatusOr<double> Number(std::string_view text, std::string_view key) {
  const StatusOr<double> v = ParseNumber<double>(text, key);
  if (!v.ok()) return InvalidArgumentError(fmt::format("straggle: {}='{}' is not a number", key, text));
  return *v;
}

std::string DurationText(Duration d) {
  return fmt::format("{}us", std::chrono::duration_cast<std::chrono::microseconds>(d).count());
}

}  // namespace

bool StragglerOptions::active() const {
  return slowdown != 1 || delay.count() > 0 || exp_mean.count() > 0 || exp_slowdown > 0 ||
         pause_from >= 0 ||
         send_delay.count() > 0 || drop > 0;
}

StatusOr<StragglerOptions> ParseStraggle(std::string_view spec) {
  StragglerOptions o;
  if (spec == "none") return o;  // spelled out where an empty value cannot be (compose defaults)
  while (!spec.empty()) {
    const size_t comma = spec.find(',');
    std::string_view item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return InvalidArgumentError(fmt::format("straggle: '{}' is not key=value", item));
    }
    const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    auto duration = [&](Duration& out) -> Status {
      auto d = ParseDuration(value);
      if (!d.ok()) return InvalidArgumentError(fmt::format("straggle: {}: {}", key, d.status().message()));
      out = *d;
      return OkStatus();
    };
    if (key == "slowdown") {
      MURMUR_ASSIGN_OR_RETURN(o.slowdown, Number(value, key));
      if (o.slowdown < 1 || o.slowdown > 1000) {
        return InvalidArgumentError("straggle: slowdown must be in [1, 1000] (a factor on compute time)");
      }
    } else if (key == "delay") {
      MURMUR_RETURN_IF_ERROR(duration(o.delay));
    } else if (key == "exp") {
      MURMUR_RETURN_IF_ERROR(duration(o.exp_mean));
    } else if (key == "exp_slowdown") {
      MURMUR_ASSIGN_OR_RETURN(o.exp_slowdown, Number(value, key));
      if (o.exp_slowdown <= 0 || o.exp_slowdown > 1000) {
        return InvalidArgumentError(
            "straggle: exp_slowdown must be in (0, 1000] (mean of the exponential delay, as a "
            "factor on compute time)");
      }
    } else if (key == "send_delay") {
      MURMUR_RETURN_IF_ERROR(duration(o.send_delay));
    } else if (key == "drop") {
      MURMUR_ASSIGN_OR_RETURN(o.drop, Number(value, key));
      if (o.drop < 0 || o.drop >= 1) {
        return InvalidArgumentError("straggle: drop must be a probability in [0, 1)");
      }
    } else if (key == "pause") {
      const size_t dots = value.find("..");
      if (dots == std::string_view::npos) {
        return InvalidArgumentError("straggle: pause takes FROM..TO steps, e.g. pause=100..200");
      }
      MURMUR_ASSIGN_OR_RETURN(double a, Number(value.substr(0, dots), key));
      MURMUR_ASSIGN_OR_RETURN(double b, Number(value.substr(dots + 2), key));
      if (a < 0 || b <= a || a != std::floor(a) || b != std::floor(b) || b > kMaxPauseStep) {
        return InvalidArgumentError(fmt::format(
            "straggle: pause needs whole steps 0 <= FROM < TO <= {}", kMaxPauseStep));
      }
      o.pause_from = static_cast<int64_t>(a);
      o.pause_to = static_cast<int64_t>(b);
    } else if (key == "seed") {
      MURMUR_ASSIGN_OR_RETURN(double s, Number(value, key));
      if (s < 0 || s != std::floor(s) || s > 9007199254740992.0) {
        return InvalidArgumentError("straggle: seed must be a whole number in [0, 2^53]");
      }
      o.seed = static_cast<uint64_t>(s);
    } else {
      return InvalidArgumentError(fmt::format(
          "straggle: unknown key '{}' (slowdown, delay, exp, exp_slowdown, pause, send_delay, drop, seed)", key));
    }
  }
  return o;
}

std::string StraggleSpec(const StragglerOptions& o) {
  std::string out;
  auto add = [&](const std::string& item) { out += (out.empty() ? "" : ",") + item; };
  if (o.slowdown != 1) add(fmt::format("slowdown={}", o.slowdown));
  if (o.delay.count() > 0) add("delay=" + DurationText(o.delay));
  if (o.exp_mean.count() > 0) add("exp=" + DurationText(o.exp_mean));
  if (o.exp_slowdown > 0) add(fmt::format("exp_slowdown={}", o.exp_slowdown));
  if (o.pause_from >= 0) add(fmt::format("pause={}..{}", o.pause_from, o.pause_to));
  if (o.send_delay.count() > 0) add("send_delay=" + DurationText(o.send_delay));
  if (o.drop > 0) add(fmt::format("drop={}", o.drop));
  if (!out.empty() && o.seed != 1) add(fmt::format("seed={}", o.seed));
  return out;
}

Duration StragglerInjector::AfterStep(Duration compute) {
  double ns = (options_.slowdown - 1) * static_cast<double>(compute.count()) +
              static_cast<double>(options_.delay.count());
  if (options_.exp_mean.count() > 0) {
    std::exponential_distribution<double> exp(1.0 / static_cast<double>(options_.exp_mean.count()));
    ns += exp(rng_);
  }
  if (options_.exp_slowdown > 0 && compute.count() > 0) {
    std::exponential_distribution<double> exp(
        1.0 / (options_.exp_slowdown * static_cast<double>(compute.count())));
    ns += exp(rng_);
  }
  return Duration(static_cast<int64_t>(ns));
}

StragglerControl::StragglerControl(StragglerOptions initial) {
  state_.options = initial;
  state_.source = initial.active() ? "config" : "";
}

void StragglerControl::Set(StragglerOptions options, Duration for_duration, std::string source) {
  std::lock_guard<std::mutex> lock(mu_);
  state_.options = options;
  state_.source = options.active() ? std::move(source) : "";
  ++state_.version;
  until_.reset();
  if (for_duration.count() > 0) until_ = clock_.Now() + for_duration;
}

void StragglerControl::Clear() { Set(StragglerOptions{}, Duration(0), ""); }

void StragglerControl::ExpireLocked(TimePoint now) {
  if (until_.has_value() && now >= *until_) {
    state_.options = StragglerOptions{};
    state_.source = "";
    ++state_.version;
    until_.reset();
  }
}

StragglerControl::State StragglerControl::Current() {
  std::lock_guard<std::mutex> lock(mu_);
  const TimePoint now = clock_.Now();
  ExpireLocked(now);
  State s = state_;
  if (until_.has_value()) s.remaining_s = ToSeconds(*until_ - now);
  return s;
}

uint64_t StragglerControl::version() {
  std::lock_guard<std::mutex> lock(mu_);
  ExpireLocked(clock_.Now());
  return state_.version;
}

bool ApplyInjectionChange(StragglerControl& control, uint64_t& seen, StragglerInjector& injector,
                          PeerNode& peer) {
  if (control.version() == seen) return false;
  const StragglerControl::State state = control.Current();
  seen = state.version;
  injector = StragglerInjector(state.options);
  peer.SetSendInjection(state.options.send_delay, state.options.drop, state.options.seed);
  MURMUR_LOG_INFO("node {}: straggler injection now '{}'", peer.id(), StraggleSpec(state.options));
  return true;
}

}  // namespace murmur::node
