#pragma once
// `murmur node`: one peer (what a container or a pod runs; its keys: node/config/node_config.h),
// and the stop flag that `murmur node` and `murmur local` poll. The command itself is made by
// MakeNodeCommand (command.h).

#include <memory>
#include <string>

#include "base/status.h"
#include "node/config/node_config.h"
#include "node/driver/node_report.h"

namespace murmur::node {

// SIGINT/SIGTERM set a flag that long-running commands poll; installed once.
void InstallStopSignals();
bool StopRequested();
int StopSignals();  // SIGINT and SIGTERM received so far

// A bad flag or configuration of `murmur node`: what and why on stderr; returns exit status 2.
int RefuseNode(const Status& status);

}  // namespace murmur::node
