// `murmur swarm`: the fault swarm. Every seed draws a cluster and a fault schedule
// (swarm_draw.h), runs it in virtual time on the real node machines (node/sim/) with the
// invariant checks on (node/sim/invariants.h), and a seed that breaks one prints the one
// `murmur sim` command that replays it. Regression scenarios (failures found once, kept as
// their replay lines) run first, from --regressions. Exit 1 when any scenario broke an
// invariant or could not run.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/log.h"
#include "cli/command.h"
#include "cli/sim_config.h"
#include "cli/sim_setup.h"
#include "cli/swarm_draw.h"
#include "node/sim/invariants.h"
#include "node/sim/simulator.h"

namespace murmur::node {
namespace {

struct Outcome {
  std::vector<std::string> broken;  // the invariants broken, or why it could not run
  double virtual_s = 0;
  bool succeeded = false;  // every node's run ended well (a fault may rightly fail a run)
};

// One scenario, from its `murmur sim` flags, exactly as `murmur sim` would run it (no
// environment: a replay on another machine runs the same).
Outcome RunScenario(const std::vector<std::string>& args) {
  CLI::App app;
  ConfigParser<SimConfig> parser(SimSchema());
  parser.AddOptions(app);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return {{fmt::format("the flags do not parse: {}", e.what())}};
  }
  auto config = ResolveSimConfig(parser, [](const char*) -> const char* { return nullptr; });
  if (!config.ok()) return {{"refused: " + std::string(config.status().message())}};
  config->invariants = true;
  auto setup = MakeSimSetup(*config);
  if (!setup.ok()) return {{"refused: " + std::string(setup.status().message())}};
  auto simulator = sim::Simulator::Create(setup->options, setup->workload.get());
  if (!simulator.ok()) return {{"refused: " + std::string(simulator.status().message())}};
  const sim::SimResult r = (*simulator)->Run();
  Outcome out{sim::CheckRunInvariants(setup->options, r, setup->batch), r.virtual_s, true};
  for (const sim::SimNodeResult& n : r.nodes) out.succeeded &= !n.up || n.ok;
  out.succeeded &= r.all_over || setup->options.kind == sim::SimKind::kMembership;
  return out;
}

class SwarmCommand : public Command {
 public:
  explicit SwarmCommand(CLI::App& app)
      : Command(app, "swarm",
                "the fault swarm: every seed draws a simulated cluster (mode, size, topology, "
                "compressor) and a fault schedule (crashes and restarts, joins, partitions, "
                "loss, duplication, reordering, corrupted bytes, stragglers), runs the real "
                "node machines in virtual time and checks their invariants; a failing seed "
                "prints the `murmur sim` command that replays it") {
    subcommand()
        ->add_option("--seeds", seeds_, "how many seeds to draw")
        ->check(CLI::Range(uint64_t{0}, uint64_t{100000000}))
        ->capture_default_str();
    subcommand()
        ->add_option("--first-seed", first_, "the first seed (then first + 1, ...)")
        ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 60))
        ->capture_default_str();
    subcommand()
        ->add_option("--regressions", regressions_,
                     "a file of scenarios that once failed, one `murmur sim` replay line each "
                     "('#' starts a comment); run before the seeds")
        ->check(CLI::ExistingFile);
    subcommand()->add_flag("--list", list_,
                           "print each seed's replay command and faults instead of running it");
    subcommand()->add_flag("--json", json_, "print the summary as one JSON object on stdout");
  }

  int Run() override {
    MURMUR_CHECK_OK(SetLogLevel("off"));
    std::vector<SwarmScenario> scenarios;
    if (!regressions_.empty() && !ReadRegressions(scenarios)) return 2;
    for (uint64_t k = 0; k < seeds_; ++k) scenarios.push_back(DrawScenario(first_ + k));
    if (list_) {
      for (const SwarmScenario& s : scenarios) {
        std::printf("%s  # seed %llu: %s [%s]\n", ReplayCommand(s.args).c_str(),
                    static_cast<unsigned long long>(s.seed), s.mode.c_str(),
                    fmt::format("{}", fmt::join(s.faults, ",")).c_str());
      }
      return 0;
    }
    return RunAll(scenarios);
  }

 private:
  bool ReadRegressions(std::vector<SwarmScenario>& out) {
    std::ifstream in(regressions_);
    int line_number = 0;
    for (std::string line; std::getline(in, line);) {
      ++line_number;
      SwarmScenario s;
      s.args = ParseReplayLine(line);
      if (s.args.empty()) continue;
      s.mode = "regression";
      s.faults = {fmt::format("{}:{}", regressions_, line_number)};
      out.push_back(std::move(s));
    }
    return true;
  }

  int RunAll(const std::vector<SwarmScenario>& scenarios) {
    const auto t0 = std::chrono::steady_clock::now();
    auto elapsed = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    std::map<std::string, std::map<std::string, int>> table;  // mode -> fault -> seeds
    std::map<std::string, int> runs, ended_well;
    nlohmann::json failures = nlohmann::json::array();
    double last_print = 0;
    for (size_t k = 0; k < scenarios.size(); ++k) {
      const SwarmScenario& s = scenarios[k];
      const Outcome o = RunScenario(s.args);
      ++runs[s.mode];
      ended_well[s.mode] += o.succeeded;
      ++table[s.mode][s.faults.empty() ? "none" : "any"];
      for (const std::string& f : s.faults) ++table[s.mode][f];
      if (!o.broken.empty()) {
        std::fprintf(stderr, "murmur swarm: %s %s broke %zu invariant(s):\n",
                     s.mode == "regression" ? s.faults.front().c_str()
                                            : fmt::format("seed {}", s.seed).c_str(),
                     s.mode.c_str(), o.broken.size());
        for (const std::string& b : o.broken) std::fprintf(stderr, "    %s\n", b.c_str());
        std::fprintf(stderr, "  replay: %s\n", ReplayCommand(s.args).c_str());
        failures.push_back({{"seed", s.seed},
                            {"mode", s.mode},
                            {"faults", s.faults},
                            {"broken", o.broken},
                            {"replay", ReplayCommand(s.args)}});
      }
      if (elapsed() - last_print >= 2 || k + 1 == scenarios.size()) {
        last_print = elapsed();
        std::fprintf(stderr, "murmur swarm: %zu/%zu scenarios, %zu broke invariants, %.0f s\n",
                     k + 1, scenarios.size(), failures.size(), elapsed());
      }
    }
    if (json_) {
      nlohmann::json j;
      j["scenarios"] = scenarios.size();
      j["failures"] = failures;
      j["seeds_by_mode_and_fault"] = table;
      j["runs_by_mode"] = runs;
      j["ended_well_by_mode"] = ended_well;
      j["wall_s"] = elapsed();
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      PrintTable(table, runs, ended_well);
      std::printf("%zu scenarios in %.0f s; %zu broke an invariant\n", scenarios.size(), elapsed(),
                  failures.size());
    }
    return failures.empty() ? 0 : 1;
  }

  // Seeds per mode and fault kind (a seed holds several kinds), and how many runs ended well.
  static void PrintTable(const std::map<std::string, std::map<std::string, int>>& table,
                         const std::map<std::string, int>& runs,
                         const std::map<std::string, int>& ended_well) {
    std::vector<std::string> modes = SwarmModes();
    modes.push_back("regression");
    std::vector<std::string> kinds = SwarmFaultKinds();
    kinds.insert(kinds.begin(), "none");
    std::string header = fmt::format("{:<13}{:>6}{:>6}", "mode", "seeds", "ok");
    for (const std::string& k : kinds)
      header += fmt::format(" {:>{}}", k, std::max<size_t>(4, k.size()));
    std::printf("%s\n", header.c_str());
    for (const std::string& m : modes) {
      if (!runs.contains(m)) continue;
      std::string row = fmt::format("{:<13}{:>6}{:>6}", m, runs.at(m), ended_well.at(m));
      const auto& by = table.at(m);
      for (const std::string& k : kinds) {
        row += fmt::format(" {:>{}}", by.contains(k) ? by.at(k) : 0, std::max<size_t>(4, k.size()));
      }
      std::printf("%s\n", row.c_str());
    }
    std::printf(
        "(ok: every node's run ended well; a fault such as a partition for good rightly "
        "fails a synchronous run, with its reason)\n");
  }

  uint64_t seeds_ = 500;
  uint64_t first_ = 1;
  std::string regressions_;
  bool list_ = false;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> MakeSwarmCommand(CLI::App& app) {
  return std::make_unique<SwarmCommand>(app);
}

}  // namespace murmur::node
