#pragma once
// `murmur train`: single-node training with live progress and a final summary.

#include <CLI/CLI.hpp>

#include <memory>

namespace murmur::node {

// Registers the subcommand on `app`; after app.parse(), RunTrain() runs it.
class TrainCommand {
 public:
  explicit TrainCommand(CLI::App& app);
  ~TrainCommand();
  CLI::App* subcommand() const { return subcommand_; }
  // Exit code: 0 success, 1 a runtime failure (data, training), 2 a bad configuration.
  int Run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  CLI::App* subcommand_;
};

}  // namespace murmur::node
