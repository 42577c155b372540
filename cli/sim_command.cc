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
#include "cli/sim_setup.h"
#include "cli/summary_json.h"
#include "gossip/sync_node.h"
#include "kernels/device.h"
#include "node/sim/invariants.h"
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
    StatusOr<SimConfig> resolved = ResolveSimConfig(parser_, std::getenv);
    if (!resolved.ok()) return Refuse(resolved.status());
    const SimConfig& c = *resolved;
    MURMUR_CHECK_OK(SetLogLevel(c.log_level));
    if (c.mode.consensus) return RunConsensusSim(c);
    auto setup = MakeSimSetup(c);
    if (!setup.ok()) return Refuse(setup.status());
    const sim::SimOptions& options = setup->options;
    auto simulator = sim::Simulator::Create(options, setup->workload.get());
    if (!simulator.ok()) return Refuse(simulator.status());

    const ProgressMode mode = ResolveProgressMode(c.progress, stderr);
    SimProgressPrinter printer(mode, stderr);
    const std::string description = DescribeSim(c, options);
    std::fprintf(stderr, "%s\n", description.c_str());
    const sim::SimResult result =
        (*simulator)->Run([&](const sim::SimProgress& p) { printer.Update(p); });
    printer.Finish();
    if (!c.csv.empty()) {
      if (Status s = WriteSeriesCsv(c.csv, result); !s.ok()) {
        std::fprintf(stderr, "murmur sim: %s\n", std::string(s.message()).c_str());
        return 1;
      }
    }
    const SimSummaryInput input{std::string(c.mode.Name()), description, options};
    nlohmann::json summary = SummaryJson(input, result);
    std::vector<std::string> broken;
    if (c.invariants) {
      broken = sim::CheckRunInvariants(options, result, setup->batch);
      summary["invariants_broken"] = broken;
    }
    if (!WriteSummary(summary, {"murmur sim", c.json, {}})) {
      std::printf("%s", SummaryText(input, result).c_str());
    }
    if (c.invariants) {
      std::fprintf(stderr, "murmur sim: invariants: %s\n",
                   broken.empty() ? "all kept" : fmt::format("{} broken", broken.size()).c_str());
      for (const std::string& b : broken) std::fprintf(stderr, "  %s\n", b.c_str());
    }
    return RunSucceeded(options, result) && broken.empty() ? 0 : 1;
  }

 private:
  std::string scenario_;
};

}  // namespace

std::unique_ptr<Command> MakeSimCommand(CLI::App& app) { return std::make_unique<SimCommand>(app); }

}  // namespace murmur::node
