// murmur: the composition root. Subcommands are made here and nowhere else.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <vector>

#include "base/config.h"
#include "cli/cli_help.h"
#include "cli/command.h"
#include "node/config/config_parser.h"

int main(int argc, char** argv) {
  CLI::App app("murmur: decentralized, straggler-tolerant data-parallel training", "murmur");
  app.set_version_flag("--version", std::string("murmur ") + MURMUR_VERSION +
                                        (MURMUR_WITH_CUDA ? " (cuda)" : " (cpu only)"));
  app.require_subcommand(1);
  app.formatter(std::make_shared<murmur::node::HelpFormatter>());  // subcommands inherit it
  std::vector<std::unique_ptr<murmur::node::Command>> commands;
  commands.push_back(murmur::node::MakeTrainCommand(app));
  commands.push_back(murmur::node::MakeNodeCommand(app));
  commands.push_back(murmur::node::MakeLocalCommand(app));
  commands.push_back(murmur::node::MakePlanCommand(app));
  commands.push_back(murmur::node::MakeCtlCommand(app));
  commands.push_back(murmur::node::MakeKeygenCommand(app));
  commands.push_back(murmur::node::MakeExperimentCommand(app));
  commands.push_back(murmur::node::MakeReportCommand(app));
  commands.push_back(murmur::node::MakeSimCommand(app));
  commands.push_back(murmur::node::MakeSwarmCommand(app));
  // `--nesterov false` as `--nesterov=false` (config_schema.h JoinBoolValues).
  std::vector<std::string> joined =
      murmur::node::JoinBoolValues(std::vector<std::string>(argv, argv + argc));
  std::vector<char*> args;
  for (std::string& a : joined) args.push_back(a.data());
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
      // The command the flag was given to is the last one parsed.
      const std::vector<CLI::App*> parsed = app.get_subcommands();
      const CLI::App& where = parsed.empty() ? app : *parsed.back();
      for (const std::string& extra : where.remaining()) {
        const std::string suggestion = murmur::node::DidYouMean(where, extra);
        if (!suggestion.empty())
          std::fprintf(stderr, "%s: did you mean %s?\n", extra.c_str(), suggestion.c_str());
      }
    }
    // Help and version exit 0; every usage error exits 2, as the README promises.
    return code == 0 ? 0 : 2;
  }
  for (const auto& command : commands) {
    if (command->subcommand()->parsed()) return command->Run();
  }
  return 2;
}
