#pragma once
// `murmur ctl`: talks to running nodes' admin ports (see node/admin_server.h).
//   murmur ctl status   --targets h:p,h:p [--json]   id, mode, step, peers, injection per node
//   murmur ctl health   --targets ...                 exit 1 unless every node is ready
//   murmur ctl straggle --target h:p --slowdown 4 [--delay 20ms ...] [--for 60s]
//   murmur ctl clear    --targets ...                 stop injecting
//   murmur ctl metrics  --target h:p [--match murmur_step]
// --target and --targets are the same option: one HOST:PORT or a comma-separated list.
// Exit status: 0 when every target answered 2xx, 1 when one did not (its error is printed),
// 2 for a usage error.

#include <CLI/CLI.hpp>

#include <memory>

namespace murmur::node {

class CtlCommand {
 public:
  explicit CtlCommand(CLI::App& app);
  ~CtlCommand();
  CLI::App* subcommand() const { return subcommand_; }
  int Run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  CLI::App* subcommand_;
};

}  // namespace murmur::node
