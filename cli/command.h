#pragma once
// The subcommands of `murmur`. Each registers its flags on the CLI app when made and runs when
// it was the one given; main.cc (the composition root) makes them all and runs that one.

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "node/config/config_parser.h"

namespace murmur::node {

class Command {
 public:
  virtual ~Command() = default;
  // 0 on success, 1 for a failure at run time, 2 for a bad flag or configuration.
  virtual int Run() = 0;
  CLI::App* subcommand() const { return subcommand_; }

 protected:
  Command(CLI::App& app, const std::string& name, const std::string& description)
      : subcommand_(app.add_subcommand(name, description)) {}

 private:
  CLI::App* subcommand_;
};

// A command whose keys are one schema, resolved flag > environment > file > default.
template <typename C>
class ConfiguredCommand : public Command {
 protected:
  ConfiguredCommand(CLI::App& app, const std::string& name, const std::string& description,
                    const ConfigSchema<C>& schema)
      : Command(app, name, description), parser_(schema) {
    parser_.AddOptions(*subcommand());
  }
  ConfigParser<C> parser_;
};

std::unique_ptr<Command> MakeTrainCommand(CLI::App& app);
std::unique_ptr<Command> MakeNodeCommand(CLI::App& app);
std::unique_ptr<Command> MakeLocalCommand(CLI::App& app);
std::unique_ptr<Command> MakePlanCommand(CLI::App& app);
std::unique_ptr<Command> MakeCtlCommand(CLI::App& app);
std::unique_ptr<Command> MakeKeygenCommand(CLI::App& app);
std::unique_ptr<Command> MakeExperimentCommand(CLI::App& app);
std::unique_ptr<Command> MakeReportCommand(CLI::App& app);
std::unique_ptr<Command> MakeSimCommand(CLI::App& app);
std::unique_ptr<Command> MakeSwarmCommand(CLI::App& app);

}  // namespace murmur::node
