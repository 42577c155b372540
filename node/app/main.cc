// murmur: the composition root. Subcommands are registered here and nowhere else.

#include <CLI/CLI.hpp>

#include <cstdio>

#include "base/config.h"
#include "node/app/ctl_command.h"
#include "node/app/node_command.h"
#include "node/app/plan_command.h"
#include "node/app/train_command.h"

int main(int argc, char** argv) {
  CLI::App app("murmur: decentralized, straggler-tolerant data-parallel training", "murmur");
  app.set_version_flag("--version", std::string("murmur ") + MURMUR_VERSION +
                                        (MURMUR_WITH_CUDA ? " (cuda)" : " (cpu only)"));
  app.require_subcommand(1);
  murmur::node::TrainCommand train(app);
  murmur::node::NodeCommand node(app);
  murmur::node::LocalCommand local(app);
  murmur::node::PlanCommand plan(app);
  murmur::node::CtlCommand ctl(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    // Help and version exit 0; every usage error exits 2, as the README promises.
    return code == 0 ? 0 : 2;
  }
  if (train.subcommand()->parsed()) return train.Run();
  if (node.subcommand()->parsed()) return node.Run();
  if (local.subcommand()->parsed()) return local.Run();
  if (plan.subcommand()->parsed()) return plan.Run();
  if (ctl.subcommand()->parsed()) return ctl.Run();
  return 2;
}
