#pragma once
// Straggler injection inside the node (the kernel here has no netem, so the node slows itself):
// a compute slowdown factor, a fixed or exponential delay per step, a pause from step a until
// the cluster reaches step b, a delay on outgoing messages, and a drop probability on outgoing
// messages. Set per node by flag (--straggle) or config.
//
// Spec: comma-separated key=value, e.g. "slowdown=4", "delay=20ms,exp=10ms",
// "pause=100..200", "send_delay=50ms,drop=0.1". Durations take us, ms or s.
//   slowdown=F     after a step that computed for t, sleep (F-1) t        (F >= 1)
//   delay=D        sleep D after every step
//   exp=M          sleep an exponential draw with mean M after every step (seeded)
//   exp_slowdown=F after a step that computed for t, sleep an exponential draw with mean F t
//   pause=A..B     at step A, stop until the most advanced live peer reaches step B (applied by
//                  gossip::GossipNode: an InjectedPause input; it ends when no live peer is left)
//   send_delay=D   hold every outgoing message D before it goes to the socket
//   drop=P         lose each outgoing message with probability P (0 <= P < 1)
//   seed=N         seed of the draws
// Thread safety: StragglerInjector is used by the training thread only.

#include <cstdint>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/status.h"

namespace murmur::node {

class PeerNode;

struct StragglerOptions {
  double slowdown = 1;
  Duration delay{0};
  Duration exp_mean{0};
  double exp_slowdown = 0;  // 0: off
  int64_t pause_from = -1;  // -1: no pause
  int64_t pause_to = -1;
  Duration send_delay{0};
  double drop = 0;
  uint64_t seed = 1;

  bool active() const;
};

// kInvalidArgument naming the key and what it allows.
StatusOr<StragglerOptions> ParseStraggle(std::string_view spec);
// The canonical spec ("" when nothing is injected); parses back to the same options.
std::string StraggleSpec(const StragglerOptions& options);

class StragglerInjector {
 public:
  explicit StragglerInjector(StragglerOptions options)
      : options_(options), rng_(options.seed) {}
  // How long to sleep after a step whose computation took `compute`.
  Duration AfterStep(Duration compute);
  const StragglerOptions& options() const { return options_; }

 private:
  StragglerOptions options_;
  std::mt19937_64 rng_;
};

// The injection in force, changeable at run time (the admin port's /straggler) while the training
// thread applies it. A change bumps `version`; the training thread compares versions once per
// step and rebuilds its injector, so a change takes effect at the next step boundary. A timed
// injection ends by itself (the state reverts to no injection) once `Current` sees it expire.
// Thread safety: every method may be called from any thread.
class StragglerControl {
 public:
  struct State {
    StragglerOptions options;
    uint64_t version = 0;
    std::string source;          // "config" (flag, env, file), "admin", or "" when none
    std::optional<double> remaining_s;  // a timed injection: seconds left
  };
  explicit StragglerControl(StragglerOptions initial = {});
  // Replaces the injection; `for_duration` 0 keeps it until the next change.
  void Set(StragglerOptions options, Duration for_duration, std::string source);
  void Clear();
  State Current();
  uint64_t version();

 private:
  void ExpireLocked(TimePoint now);

  std::mutex mu_;
  RealClock clock_;
  State state_;
  std::optional<TimePoint> until_;
};

// Takes a run-time change of the injection (the control's version differs from `seen`, which it
// updates): rebuilds `injector` and the peer's send injection, and logs it. False when nothing
// changed. Called by the training thread at step boundaries; `seen` = ~0 forces the first take.
bool ApplyInjectionChange(StragglerControl& control, uint64_t& seen, StragglerInjector& injector,
                          PeerNode& peer);

}  // namespace murmur::node
