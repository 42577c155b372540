#pragma once
// The keys of the synchronous modes (`--mode coded-tree|tree|gc|ring|ps` of `murmur node` and
// `murmur local`): the tree shape, the code, the parameter servers, the iteration budget and the
// batch. The model,
// optimizer, data, time limit, evaluation and straggler keys are the gossip mode's (GossipConfig).

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "node/config/config_schema.h"
#include "node/config/gossip_config.h"
#include "node/driver/sync_driver.h"

namespace murmur::node {

struct CodedConfig {
  int n = 0;       // children per parent
  int L = 0;       // layers
  int s = 0;       // stragglers tolerated per parent
  int64_t code_seed = 0;
  int64_t servers = 0;              // ps: K
  gossip::PsSyncSpec ps_sync = {};  // ps: full, async, ssp:S
  int64_t backup = 0;               // ps full: backup workers
  bool staleness_lr = false;        // ps async, ssp
  std::optional<gossip::PsMomentum> ps_momentum = std::nullopt;  // ps async, ssp; none: auto
  int64_t iterations = 0;
  int64_t global_batch = 0;
  double report_after_s = 0;
  double join_timeout_s = 0;
  double stall_timeout_s = 0;
};

const ConfigSchema<CodedConfig>& CodedSchema();
std::vector<std::string> CodedKeyNames();

// The keys of the other kind of mode, which a run of `mode` would ignore: for gossip the coded
// keys above, for a synchronous mode the GossipConfig keys CodedOptionsFrom does not read
// (compression, topology, soft sync, the epoch budget, the finish, ...); none otherwise.
std::vector<std::string> OtherModeKeys(gossip::Mode mode);
// kInvalidArgument naming the first of `set_flags` ("--flag=value", the OtherModeKeys(mode) a
// command's ConfigParser::GivenFlags found given) and why `mode` does not use it: an accepted
// flag must do what it says. OK when `set_flags` is empty.
Status RefuseOtherModeKeys(gossip::Mode mode, const std::vector<std::string>& set_flags);

// `--nodes N` in a synchronous mode: N workers in one layer (n = N, L = 1), so that one
// scenario compares every mode at the same N; with n or L given too (`shaped`) they must make N
// workers. kInvalidArgument with the reason.
Status NodesAsOneLayer(gossip::Mode mode, int64_t nodes, bool shaped, CodedConfig& coded);
// The parameter servers' shape the keys give.
gossip::PsOptions PsOptionsFrom(const CodedConfig& coded);
// The plan of a synchronous mode (or ps) from its keys; kInvalidArgument with the reason.
StatusOr<gossip::SyncPlan> SyncPlanFrom(gossip::Mode mode, const CodedConfig& coded);

// kInvalidArgument naming the key (a bad straggle spec, for instance).
StatusOr<CodedTrainerOptions> CodedOptionsFrom(gossip::Mode mode, const CodedConfig& coded,
                                               const GossipConfig& gossip);

// A straggle spec for a synchronous mode: ParseStraggle plus what those modes cannot do (pause;
// drop where nothing tolerates a lost message). kInvalidArgument with the reason.
StatusOr<StragglerOptions> ParseCodedStraggle(gossip::Mode mode, const std::string& spec);
// The synchronous modes' rules alone, on parsed options (also a run-time injection's check).
Status CheckCodedStraggle(gossip::Mode mode, const StragglerOptions& options);


}  // namespace murmur::node
