// `murmur sim`'s setup from its resolved keys: the simulator's options and the workload (shared by
// the command and the fault swarm).
#include "cli/sim_setup.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>

#include "cli/injection_lists.h"
#include "cli/local_cluster.h"
#include "kernels/device.h"
#include "node/sim/trainer_workload.h"
#include "node/train/sharding.h"

namespace murmur::node {
namespace {

using sim::SimKind;

// The synchronous plan or the gossip machine's options; returns how many ranks are roots.
StatusOr<int> AddModeOptions(const SimConfig& c, sim::SimOptions& o, TrainOptions& train) {
  if (o.kind == SimKind::kSync) {
    const gossip::Mode mode = c.mode.mode;
    MURMUR_ASSIGN_OR_RETURN(gossip::SyncPlan plan, SyncPlanFrom(mode, c.coded));
    MURMUR_ASSIGN_OR_RETURN(CodedTrainerOptions coded, CodedOptionsFrom(mode, c.coded, c.gossip));
    o.nodes = static_cast<size_t>(plan.processes);
    const auto roots = static_cast<int>(plan.processes - plan.workers);
    o.sync = coded.node;
    o.plan = std::move(plan);
    if (!c.crash.empty() || !c.join.empty()) {
      return InvalidArgumentError(
          "crash and join apply to gossip and membership (a synchronous "
          "run needs every rank from start to end)");
    }
    return roots;
  }
  if (o.kind == SimKind::kGossip) {
    MURMUR_ASSIGN_OR_RETURN(GossipPeerOptions g, GossipOptionsFrom(c.gossip));
    o.gossip = g.node;
    o.per_node_init = g.per_node_init;
    train = g.train;  // its learning-rate schedule resolved ("auto": cosine with a budget)
    if (o.gossip.expect_members <= 0) o.gossip.expect_members = c.nodes;
  }
  return 0;
}

// Stragglers, crashes and late joins, by node.
Status AddInjections(const SimConfig& c, int roots, sim::SimOptions& o) {
  const bool sync = o.kind == SimKind::kSync;
  if (!c.straggle.empty()) {
    if (o.kind == SimKind::kMembership) {
      return InvalidArgumentError(
          "straggle applies to the training modes (membership computes nothing)");
    }
    MURMUR_ASSIGN_OR_RETURN(auto specs,
                            ParseStraggleList(c.straggle, static_cast<int>(o.nodes), sync, roots));
    for (const auto& [index, spec] : specs) {
      StatusOr<StragglerOptions> s =
          sync ? ParseCodedStraggle(o.plan->mode, spec) : ParseStraggle(spec);
      if (!s.ok()) return s.status();
      o.straggle[static_cast<size_t>(index)] = *s;
    }
  }
  auto duration = [](double seconds) {
    return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds));
  };
  MURMUR_ASSIGN_OR_RETURN(auto crashes, ParseCrashList(c.crash, static_cast<int>(o.nodes)));
  for (const CrashPlan& p : crashes) {
    o.crashes.push_back({static_cast<size_t>(p.index), duration(p.at), duration(p.down)});
  }
  MURMUR_ASSIGN_OR_RETURN(auto joins, ParseJoinList(c.join, static_cast<int>(o.nodes)));
  for (const JoinPlan& j : joins) o.joins.push_back({static_cast<size_t>(j.index), duration(j.at)});
  MURMUR_ASSIGN_OR_RETURN(auto partitions,
                          ParsePartitionList(c.partition, static_cast<int>(o.nodes)));
  for (const PartitionPlan& p : partitions) {
    sim::SimPartition cut{std::vector<int>(o.nodes, 0), duration(p.at), duration(p.length)};
    for (int k : p.side) cut.groups[static_cast<size_t>(k)] = 1;
    o.partitions.push_back(std::move(cut));
  }
  MURMUR_ASSIGN_OR_RETURN(auto attacks, ParseAttackList(c.attack, static_cast<int>(o.nodes)));
  for (const AttackPlan& a : attacks) {
    o.attacks.push_back(
        {static_cast<size_t>(a.index), duration(a.at),
         a.kind == "clock" ? sim::SimAttackKind::kClock : sim::SimAttackKind::kNonFinite});
  }
  MURMUR_ASSIGN_OR_RETURN(auto jumps, ParseClockJumpList(c.clock_jump, static_cast<int>(o.nodes)));
  for (const ClockJumpPlan& j : jumps) {
    o.clock_jumps.push_back({static_cast<size_t>(j.index), duration(j.at), duration(j.by)});
  }
  return OkStatus();
}

StatusOr<sim::SimOptions> OptionsFrom(const SimConfig& c, TrainOptions& train) {
  sim::SimOptions o;
  o.kind = c.mode.mode == gossip::Mode::kMembership ? SimKind::kMembership
           : c.mode.mode == gossip::Mode::kGossip   ? SimKind::kGossip
                                                    : SimKind::kSync;
  o.nodes = static_cast<size_t>(c.nodes);
  o.duration = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(c.duration));
  MURMUR_ASSIGN_OR_RETURN(o.link, sim::ParseLink(c.network));
  o.cost_per_sample = c.sample_cost;
  o.cost_per_step = c.step_cost;
  o.cost_per_eval_row = c.eval_cost.value_or(c.sample_cost / 3);
  o.start_cost = c.start_cost;
  o.cores = c.cores;
  o.membership.probe_interval = std::chrono::milliseconds(c.probe_interval_ms);
  o.membership.probe_timeout = std::chrono::milliseconds(c.probe_timeout_ms);
  if (o.membership.probe_timeout >= o.membership.probe_interval) {
    return InvalidArgumentError("probe_timeout_ms must be below probe_interval_ms");
  }
  o.tick = std::chrono::milliseconds(c.tick_ms);
  o.view_interval = std::chrono::milliseconds(c.view_interval_ms);
  o.sample_every = std::chrono::milliseconds(c.sample_ms);
  o.seed = c.gossip.train.seed;
  o.check_invariants = c.invariants;
  MURMUR_ASSIGN_OR_RETURN(const int roots, AddModeOptions(c, o, train));
  if (c.cores > 0 && o.kind == SimKind::kMembership) {
    return InvalidArgumentError(
        "cores applies to the training modes (membership computes nothing)");
  }
  MURMUR_RETURN_IF_ERROR(AddInjections(c, roots, o));
  return o;
}

// The workload, and the schedule, budget and batch that depend on its data set.
StatusOr<std::unique_ptr<sim::Workload>> MakeWorkload(const SimConfig& c, sim::SimOptions& o,
                                                      const TrainOptions& train_options) {
  if (o.kind == SimKind::kMembership) return std::unique_ptr<sim::Workload>();
  const TrainConfig& t = c.gossip.train;
  MURMUR_RETURN_IF_ERROR(kernels::CheckTf32(t.tf32, kernels::Device::Cpu()));  // all on the CPU
  std::optional<TrainTest> data;
  if (c.fidelity == SimFidelity::kTraining) {
    if (t.device.wants_gpu()) {
      return InvalidArgumentError("device " + t.device.ToString() +
                                  ": the simulator computes on the CPU "
                                  "(training fidelity runs the real Trainer there)");
    }
    std::fprintf(stderr, "murmur sim: loading the %s data set for training fidelity\n",
                 t.task.c_str());
    MURMUR_ASSIGN_OR_RETURN(data, LoadTrainData(t));
  }
  const int64_t rows = data ? data->train.rows : t.task == "fashion-mnist" ? 60000 : t.samples;
  const int64_t model = WireDimension(c);
  o.wire_scale = static_cast<double>(model) / static_cast<double>(c.dimension);
  const TrainOptions train = o.kind == SimKind::kGossip ? train_options : TrainOptionsFrom(t);
  int64_t batch = t.batch_size;
  if (o.kind == SimKind::kGossip) {
    const int64_t budget =
        static_cast<int64_t>(std::ceil(c.gossip.epochs * static_cast<double>(rows)));
    o.gossip.budget_samples = c.gossip.epochs > 0 ? budget : 0;
    MURMUR_ASSIGN_OR_RETURN(auto schedule,
                            ScheduleFor(train, o.gossip.budget_samples, rows,
                                        t.batch_size * std::max(1, o.gossip.expect_members)));
    o.gossip.lr_schedule = schedule;
  } else {
    batch = c.coded.global_batch > 0 ? c.coded.global_batch : rows;
    o.sync.batch = batch;
    TrainOptions lr = train;
    lr.sgd.learning_rate = o.sync.lr;
    MURMUR_ASSIGN_OR_RETURN(auto schedule, ScheduleFor(lr, o.sync.iterations * batch, rows, batch));
    o.sync.lr_schedule = schedule;
  }
  if (!data) {
    return std::unique_ptr<sim::Workload>(std::make_unique<sim::SyntheticWorkload>(
        o.nodes, static_cast<size_t>(c.dimension), rows, batch, t.lr, t.seed));
  }
  sim::TrainerWorkloadOptions w;
  w.nodes = o.nodes;
  w.sync = o.kind == SimKind::kSync;
  w.spec = TrainModelSpec(t, data->train);
  w.train = train;
  MURMUR_ASSIGN_OR_RETURN(w.shards, ParseShardStrategy(t.shard_strategy));
  w.global_batch = c.coded.global_batch;
  w.eval_samples = c.gossip.eval_samples;
  w.init_seed = t.seed;
  MURMUR_ASSIGN_OR_RETURN(auto workload, sim::TrainerWorkload::Create(*std::move(data), w));
  o.wire_scale = 1;
  return std::unique_ptr<sim::Workload>(std::move(workload));
}

}  // namespace

StatusOr<SimConfig> ResolveSimConfig(const ConfigParser<SimConfig>& parser,
                                     const std::function<const char*(const char*)>& getenv) {
  std::map<std::string, std::string> texts;
  std::set<std::string> given;
  MURMUR_ASSIGN_OR_RETURN(SimConfig c, parser.Resolve(getenv, &texts, &given));
  if (!c.mode.consensus && gossip::IsSyncMode(c.mode.mode) && given.count("nodes") > 0) {
    const bool shaped = given.count("n") > 0 || given.count("L") > 0;
    MURMUR_RETURN_IF_ERROR(NodesAsOneLayer(c.mode.mode, c.nodes, shaped, c.coded));
  }
  if (!c.mode.consensus) {
    const gossip::Mode mode = c.mode.mode;
    MURMUR_RETURN_IF_ERROR(
        RefuseOtherModeKeys(mode, parser.GivenFlags(texts, given, OtherModeKeys(mode))));
  }
  for (const UnreadKeys& unread : SimUnreadKeys(c)) {
    const std::vector<std::string> set = parser.GivenFlags(texts, given, unread.keys);
    if (!set.empty()) return InvalidArgumentError(set.front() + ": " + unread.why);
  }
  return c;
}

StatusOr<SimSetup> MakeSimSetup(const SimConfig& c) {
  TrainOptions train;  // gossip: the trainer options GossipOptionsFrom resolves
  SimSetup setup;
  MURMUR_ASSIGN_OR_RETURN(setup.options, OptionsFrom(c, train));
  MURMUR_ASSIGN_OR_RETURN(setup.workload, MakeWorkload(c, setup.options, train));
  setup.batch = c.gossip.train.batch_size;
  return setup;
}

std::string DescribeSim(const SimConfig& c, const sim::SimOptions& o) {
  const auto us = [](Duration d) {
    const double v = std::chrono::duration<double, std::micro>(d).count();
    return v >= 1e6   ? fmt::format("{:g}s", v / 1e6)
           : v >= 1e3 ? fmt::format("{:g}ms", v / 1e3)
                      : fmt::format("{:g}us", v);
  };
  std::string out = fmt::format("murmur sim: {} nodes, mode {}, network {}", o.nodes, c.mode.Name(),
                                o.link.ToString());
  if (o.kind != SimKind::kMembership && c.fidelity == SimFidelity::kProtocol) {
    out += fmt::format(
        ", protocol fidelity ({} values computed, {:.0f} on the wire), {} per sample", c.dimension,
        static_cast<double>(c.dimension) * o.wire_scale, us(o.cost_per_sample));
  } else if (o.kind != SimKind::kMembership) {
    out += fmt::format(", training fidelity ({} on {}), {} per sample", c.gossip.train.task,
                       "the CPU", us(o.cost_per_sample));
  }
  if (o.kind != SimKind::kMembership) {
    if (o.cost_per_step.count() > 0) out += fmt::format(", {} per step", us(o.cost_per_step));
    out += fmt::format(", {} per evaluated row", us(o.cost_per_eval_row));
  }
  if (o.start_cost.count() > 0) out += fmt::format(", {} to start", us(o.start_cost));
  if (o.cores > 0) out += fmt::format(", {} shared cores", o.cores);
  out += fmt::format(", seed {}", o.seed);
  return out;
}

}  // namespace murmur::node
