#pragma once
// `murmur plan`: prints what a synchronous mode would run, without running it: the tree, the
// gradient code (its matrix B and conditioning), who holds which parts of the data with which
// coefficients, and every worker's computation load against uncoded data parallelism.

#include <CLI/CLI.hpp>

#include <memory>

namespace murmur::node {

class PlanCommand {
 public:
  explicit PlanCommand(CLI::App& app);
  ~PlanCommand();
  CLI::App* subcommand() const { return subcommand_; }
  int Run();  // 0 printed, 2 a bad configuration

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  CLI::App* subcommand_;
};

}  // namespace murmur::node
