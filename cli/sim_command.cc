// `murmur sim`: the real node machines of every mode in virtual time (node/sim/), from
// flags or a TOML scenario, with progress on stderr and a summary (text or JSON) on stdout, plus
// the time series as CSV.
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/log.h"
#include "cli/command.h"
#include "cli/injection_lists.h"
#include "cli/local_cluster.h"
#include "cli/progress.h"
#include "cli/sim_config.h"
#include "cli/sim_consensus.h"
#include "cli/sim_report.h"
#include "cli/summary_json.h"
#include "gossip/sync_node.h"
#include "kernels/device.h"
#include "node/sim/simulator.h"
#include "node/sim/trainer_workload.h"
#include "node/sim/workload.h"
#include "node/train/sharding.h"

namespace murmur::node {
namespace {

using sim::SimKind;

int Refuse(const Status& s) {
  std::fprintf(stderr, "murmur sim: %s\n", std::string(s.message()).c_str());
  return 2;
}

class SimCommand : public ConfiguredCommand<SimConfig> {
 public:
  explicit SimCommand(CLI::App& app)
      : ConfiguredCommand(app, "sim",
                          "simulate a cluster in virtual time: the real membership, gossip and "
                          "synchronous machines, their real wire bytes, a modeled network and "
                          "modeled compute (1000s of nodes on one core)",
                          SimSchema()) {
    subcommand()
        ->add_option("scenario", scenario_, "TOML scenario file (any key below; as --config)")
        ->type_name("FILE");
  }

  int Run() override {
    if (!scenario_.empty()) {
      if (Status s = parser_.SetConfigPath(scenario_); !s.ok()) return Refuse(s);
    }
    std::map<std::string, std::string> texts;
    std::set<std::string> given;
    StatusOr<SimConfig> resolved = parser_.Resolve(std::getenv, &texts, &given);
    if (!resolved.ok()) return Refuse(resolved.status());
    if (const SimMode m = resolved->mode;
        !m.consensus && gossip::IsSyncMode(m.mode) && given.count("nodes") > 0) {
      const bool shaped = given.count("n") > 0 || given.count("L") > 0;
      if (Status s = NodesAsOneLayer(m.mode, resolved->nodes, shaped, resolved->coded); !s.ok()) {
        return Refuse(s);
      }
    }
    const SimConfig& c = *resolved;
    if (!c.mode.consensus) {
      const gossip::Mode mode = c.mode.mode;
      Status s = RefuseOtherModeKeys(mode, parser_.GivenFlags(texts, given, OtherModeKeys(mode)));
      if (!s.ok()) return Refuse(s);
    }
    for (const UnreadKeys& unread : SimUnreadKeys(c)) {
      const std::vector<std::string> set = parser_.GivenFlags(texts, given, unread.keys);
      if (!set.empty()) return Refuse(InvalidArgumentError(set.front() + ": " + unread.why));
    }
    MURMUR_CHECK_OK(SetLogLevel(c.log_level));
    if (c.mode.consensus) return RunConsensusSim(c);
    auto options = Options(c);
    if (!options.ok()) return Refuse(options.status());
    auto workload = MakeWorkload(c, *options);
    if (!workload.ok()) return Refuse(workload.status());
    auto simulator = sim::Simulator::Create(*options, workload->get());
    if (!simulator.ok()) return Refuse(simulator.status());

    const ProgressMode mode = ResolveProgressMode(c.progress, stderr);
    SimProgressPrinter printer(mode, stderr);
    std::fprintf(stderr, "%s\n", Describe(c, *options).c_str());
    const sim::SimResult result =
        (*simulator)->Run([&](const sim::SimProgress& p) { printer.Update(p); });
    printer.Finish();
    if (!c.csv.empty()) {
      if (Status s = WriteSeriesCsv(c.csv, result); !s.ok()) {
        std::fprintf(stderr, "murmur sim: %s\n", std::string(s.message()).c_str());
        return 1;
      }
    }
    const SimSummaryInput input{std::string(c.mode.Name()), Describe(c, *options), *options};
    const nlohmann::json summary = SummaryJson(input, result);
    if (!WriteSummary(summary, {"murmur sim", c.json, {}})) {
      std::printf("%s", SummaryText(input, result).c_str());
    }
    return RunSucceeded(*options, result) ? 0 : 1;
  }

 private:
  StatusOr<sim::SimOptions> Options(const SimConfig& c) {
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
    MURMUR_ASSIGN_OR_RETURN(const int roots, AddModeOptions(c, o));
    if (c.cores > 0 && o.kind == SimKind::kMembership) {
      return InvalidArgumentError(
          "cores applies to the training modes (membership computes nothing)");
    }
    MURMUR_RETURN_IF_ERROR(AddInjections(c, roots, o));
    return o;
  }

  // The synchronous plan or the gossip machine's options; returns how many ranks are roots.
  StatusOr<int> AddModeOptions(const SimConfig& c, sim::SimOptions& o) {
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
      train_ = g.train;  // its learning-rate schedule resolved ("auto": cosine with a budget)
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
      MURMUR_ASSIGN_OR_RETURN(
          auto specs, ParseStraggleList(c.straggle, static_cast<int>(o.nodes), sync, roots));
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
    for (const JoinPlan& j : joins)
      o.joins.push_back({static_cast<size_t>(j.index), duration(j.at)});
    return OkStatus();
  }

  // The workload, and the schedule, budget and batch that depend on its data set.
  StatusOr<std::unique_ptr<sim::Workload>> MakeWorkload(const SimConfig& c, sim::SimOptions& o) {
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
    const TrainOptions train = o.kind == SimKind::kGossip ? train_ : TrainOptionsFrom(t);
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
      MURMUR_ASSIGN_OR_RETURN(auto schedule,
                              ScheduleFor(lr, o.sync.iterations * batch, rows, batch));
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

  static std::string Describe(const SimConfig& c, const sim::SimOptions& o) {
    const auto us = [](Duration d) {
      const double v = std::chrono::duration<double, std::micro>(d).count();
      return v >= 1e6   ? fmt::format("{:g}s", v / 1e6)
             : v >= 1e3 ? fmt::format("{:g}ms", v / 1e3)
                        : fmt::format("{:g}us", v);
    };
    std::string out = fmt::format("murmur sim: {} nodes, mode {}, network {}", o.nodes,
                                  c.mode.Name(), o.link.ToString());
    if (o.kind != SimKind::kMembership && c.fidelity == SimFidelity::kProtocol) {
      out += fmt::format(
          ", protocol fidelity ({} values computed, {:.0f} on the wire), {} per sample",
          c.dimension, static_cast<double>(c.dimension) * o.wire_scale, us(o.cost_per_sample));
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

  std::string scenario_;
  TrainOptions train_;  // gossip: the trainer options GossipOptionsFrom resolved
};

}  // namespace

std::unique_ptr<Command> MakeSimCommand(CLI::App& app) { return std::make_unique<SimCommand>(app); }

}  // namespace murmur::node
