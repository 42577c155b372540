#include "node/config/coded_config.h"

#include <fmt/format.h>

#include <algorithm>

#include "gossip/gossip_node.h"
#include "gossip/sync_node.h"

namespace murmur::node {

const ConfigSchema<CodedConfig>& CodedSchema() {
  static const ConfigSchema<CodedConfig>* schema = [] {
    using C = CodedConfig;
    auto* s = new ConfigSchema<CodedConfig>();
    s->Integer("n", &C::n, 3, 1, 4096,
               "coded-tree, tree: children per parent (at most 64, the codes' limit); every mode "
               "runs N = n + n^2 + ... + n^L workers (ring and ps: n with L = 1)")
        .Integer("L", &C::L, 2, 1, 8, "coded-tree, tree: layers of workers under the root")
        .Integer("s", &C::s, 1, 0, 63,
                 "coded-tree: stragglers tolerated among each parent's n children; gc: among "
                 "all N workers (tree uses 0, ring none)")
        .Integer("code_seed", &C::code_seed, int64_t{1}, int64_t{0}, int64_t{1} << 62,
                 "seed of the cyclic gradient code (fractional repetition needs none)")
        .Integer("servers", &C::servers, int64_t{1}, int64_t{1}, int64_t{64},
                 "ps: parameter servers, each holding a contiguous slice of the model")
        .Parsed("ps_sync", &C::ps_sync, "full", "full, async or ssp:S (S >= 0)",
                "ps: full (bulk synchronous: a step per iteration with every worker's gradient), "
                "async (each gradient applied as it arrives) or ssp:S (async, but no worker more "
                "than S gradients ahead of the slowest)",
                &gossip::ParsePsSync)
        .Integer("backup", &C::backup, int64_t{0}, int64_t{0}, int64_t{1} << 20,
                 "ps full: backup workers; the servers step with the first N - backup gradients")
        .Bool("staleness_lr", &C::staleness_lr, false,
              "ps async, ssp: scale each step by 1 / staleness (staleness-aware async SGD)")
        .Enum("ps_momentum", &C::ps_momentum, "auto",
              {{"auto", std::nullopt},
               {"server", gossip::PsMomentum::kServer},
               {"dana", gossip::PsMomentum::kDana}},
              "ps async, ssp: server (one velocity for every gradient, the textbook form) or dana "
              "(a velocity per worker and the look-ahead model in each reply, DANA-Zero: the "
              "staleness compensated); auto: dana for async and ssp")
        .Integer("iterations", &C::iterations, int64_t{100}, int64_t{1}, int64_t{1} << 40,
                 "budget: model updates (the time limit may end the run sooner)")
        .Integer("global_batch", &C::global_batch, int64_t{0}, int64_t{0}, int64_t{1} << 40,
                 "samples per iteration over the whole cluster; 0: the whole training set "
                 "(full-batch gradient descent)")
        .Real("report_after_s", &C::report_after_s, "5", 0.001, 86400,
              "a parent still short of decodable children after this long says so (and keeps "
              "waiting)")
        .Real("join_timeout_s", &C::join_timeout_s, "30", 0.1, 86400,
              "give up when the tree or ring has not assembled (all its nodes alive) by then")
        .Real("stall_timeout_s", &C::stall_timeout_s, "30", 0.1, 86400,
              "a running rank that neither took a message nor computed for this long ends "
              "its run with the reason (a message it needed was lost, or a member went quiet "
              "while alive); from a quarter of it on, it sends its last messages again (not an "
              "asynchronous parameter server); keep it above the slowest member's step");
    return s;
  }();
  return *schema;
}

std::vector<std::string> CodedKeyNames() {
  std::vector<std::string> out;
  for (const auto& key : CodedSchema().keys()) out.push_back(key.name);
  return out;
}

namespace {

// The gossip keys no synchronous mode reads (CodedOptionsFrom and the synchronous drivers read
// the training ones, time_limit_s, eval_every, eval_samples and straggle; ps also compress).
const std::vector<std::string>& GossipOnlyKeys() {
  static const auto* keys = new std::vector<std::string>{"epochs",           "consensus_target",
                                                         "consensus_slack",  "gamma",
                                                         "clip_fraction",    "topology",
                                                         "random_peers",     "local_steps",
                                                         "post_local_epoch", "post_local_steps",
                                                         "max_lead",         "max_wait_ms",
                                                         "max_wait_steps",   "straggler_hold_s",
                                                         "staleness_scale",  "target_accuracy",
                                                         "finish_wait_s",    "init"};
  return *keys;
}
// The keys of the parameter server alone, and of the gradient code alone.
const std::vector<std::string>& PsKeys() {
  static const auto* keys =
      new std::vector<std::string>{"servers", "ps_sync", "backup", "staleness_lr", "ps_momentum"};
  return *keys;
}
const std::vector<std::string>& CodeKeys() {
  static const auto* keys = new std::vector<std::string>{"s", "code_seed"};
  return *keys;
}

// Whether `flag` ("--flag=value", as ConfigParser::GivenFlags gives it) sets one of `keys`.
bool SetsOneOf(std::string_view flag, const std::vector<std::string>& keys) {
  for (const std::string& key : keys) {
    std::string name = "--" + key + "=";
    std::replace(name.begin(), name.end(), '_', '-');
    if (flag.starts_with(name)) return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> OtherModeKeys(gossip::Mode mode) {
  if (mode == gossip::Mode::kGossip) return CodedKeyNames();
  if (!gossip::IsSyncMode(mode)) return {};
  std::vector<std::string> out = GossipOnlyKeys();
  if (mode == gossip::Mode::kPs) {
    out.insert(out.end(), CodeKeys().begin(), CodeKeys().end());
  } else {
    out.push_back("compress");
    out.insert(out.end(), PsKeys().begin(), PsKeys().end());
  }
  return out;
}

Status RefuseOtherModeKeys(gossip::Mode mode, const std::vector<std::string>& set_flags) {
  if (set_flags.empty()) return OkStatus();
  const std::string& flag = set_flags.front();
  if (mode == gossip::Mode::kGossip) {
    return InvalidArgumentError(fmt::format(
        "{}: a key of the synchronous modes (--mode coded-tree|tree|gc|ring|ps); gossip does not "
        "use it (its budget is epochs, target_accuracy or time_limit_s)",
        flag));
  }
  if (SetsOneOf(flag, PsKeys())) {
    return InvalidArgumentError(
        fmt::format("{}: a key of --mode ps (the parameter server); --mode {} does not use it",
                    flag, gossip::ModeName(mode)));
  }
  if (SetsOneOf(flag, CodeKeys())) {
    return InvalidArgumentError(
        fmt::format("{}: a key of the gradient code (coded-tree, gc); --mode ps codes nothing (see "
                    "--backup for its straggler tolerance)",
                    flag));
  }
  return InvalidArgumentError(fmt::format(
      "{}: a gossip key; --mode {} does not use it (its budget is iterations, its model the "
      "{})",
      flag, gossip::ModeName(mode), mode == gossip::Mode::kPs ? "servers'" : "root's"));
}


Status CheckCodedStraggle(gossip::Mode mode, const StragglerOptions& options) {
  if (options.pause_from >= 0) {
    return InvalidArgumentError("straggle: pause=A..B is for gossip mode (it waits for the "
                                "cluster's step clock); use delay, slowdown or exp here");
  }
  // Messages of a synchronous mode are never resent: only the coded modes survive a lost answer.
  if (options.drop > 0 && mode != gossip::Mode::kCodedTree && mode != gossip::Mode::kGc) {
    return InvalidArgumentError("straggle: drop in " + std::string(gossip::ModeName(mode)) +
                                " mode would stall the run (nothing there tolerates a lost message)");
  }
  return OkStatus();
}

StatusOr<StragglerOptions> ParseCodedStraggle(gossip::Mode mode, const std::string& spec) {
  auto straggle = ParseStraggle(spec);
  if (!straggle.ok()) return straggle.status();
  MURMUR_RETURN_IF_ERROR(CheckCodedStraggle(mode, *straggle));
  return straggle;
}

StatusOr<CodedTrainerOptions> CodedOptionsFrom(gossip::Mode mode, const CodedConfig& coded,
                                               const GossipConfig& gossip) {
  CodedTrainerOptions o;
  o.mode = mode;
  o.n = coded.n;
  o.layers = coded.L;
  o.s = coded.s;
  o.code_seed = static_cast<uint64_t>(coded.code_seed);
  o.node.iterations = coded.iterations;
  o.global_batch = coded.global_batch;
  o.node.report_after = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(coded.report_after_s));
  o.node.join_timeout = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(coded.join_timeout_s));
  o.node.stall_timeout =
      std::chrono::duration_cast<Duration>(std::chrono::duration<double>(coded.stall_timeout_s));
  MURMUR_RETURN_IF_ERROR(ValidateMomentum(gossip.train));
  o.node.lr = gossip.train.lr;
  o.schedule = TrainOptionsFrom(gossip.train);
  o.node.momentum = gossip.train.momentum;
  o.node.nesterov = gossip.train.nesterov;
  o.node.weight_decay = gossip.train.weight_decay;
  o.seed = gossip.train.seed;
  o.node.time_limit = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(gossip.time_limit_s));
  // -1 (gossip::kEvalPerRun): about as many evaluations over the run's iterations as a gossip
  // node makes over its budget (every 10 iterations without an iteration budget).
  o.node.eval_every =
      gossip.eval_every >= 0 ? gossip.eval_every
      : coded.iterations > 0 ? std::max<int64_t>(1, coded.iterations / gossip::kEvaluationsPerRun)
                             : 10;
  auto straggle = ParseCodedStraggle(mode, gossip.straggle);
  if (!straggle.ok()) return straggle.status();
  o.straggle = *straggle;
  o.ps = PsOptionsFrom(coded);
  // ps: the workers' pushes compressed (with error feedback) when --compress is given.
  if (mode == gossip::Mode::kPs) o.node.push_compress = gossip.compress;
  MURMUR_RETURN_IF_ERROR(SyncPlanFrom(mode, coded).status());
  return o;
}

Status NodesAsOneLayer(gossip::Mode mode, int64_t nodes, bool shaped, CodedConfig& coded) {
  if (shaped) {
    auto plan = SyncPlanFrom(mode, coded);
    if (plan.ok() && plan->workers != nodes) {
      return InvalidArgumentError(fmt::format(
          "nodes: {} workers, but n {} and L {} make {}; give nodes alone (one layer of N) or n "
          "and L alone",
          nodes, coded.n, coded.L, plan->workers));
    }
    return OkStatus();
  }
  if (nodes > coding::kMaxCodeWorkers && mode != gossip::Mode::kRing && mode != gossip::Mode::kPs) {
    return InvalidArgumentError(fmt::format(
        "nodes: {} workers in one layer of a {} exceed its code's {} children; give n and L "
        "instead",
        nodes, gossip::ModeName(mode), coding::kMaxCodeWorkers));
  }
  coded.n = static_cast<int>(nodes);
  coded.L = 1;
  return OkStatus();
}

gossip::PsOptions PsOptionsFrom(const CodedConfig& coded) {
  return {.servers = coded.servers,
          .sync = coded.ps_sync.sync,
          .ssp_bound = coded.ps_sync.ssp_bound,
          .backup = coded.backup,
          .staleness_lr = coded.staleness_lr,
          .momentum = coded.ps_momentum.value_or(coded.ps_sync.sync == gossip::PsSync::kFull
                                                     ? gossip::PsMomentum::kServer
                                                     : gossip::PsMomentum::kDana)};
}

StatusOr<gossip::SyncPlan> SyncPlanFrom(gossip::Mode mode, const CodedConfig& coded) {
  return gossip::MakeSyncPlan(mode, coded.n, coded.L, coded.s,
                              static_cast<uint64_t>(coded.code_seed), PsOptionsFrom(coded));
}

}  // namespace murmur::node
