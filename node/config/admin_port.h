#pragma once
// The admin HTTP port a node's keys describe (`admin`, `admin_token_file`): started for the
// library's peers (api/) and `murmur node`'s other modes (cli/) alike.

#include <memory>
#include <string>

#include "base/status.h"
#include "node/observe/admin_server.h"
#include "node/observe/telemetry.h"

namespace murmur::node {

// nullptr when `address` is empty; else the started port, logged with what it takes. Changes
// (PUT/DELETE /straggler) need the token in `token_file`, and are refused without one.
// kInvalidArgument for an unreadable or bad token file, kUnavailable for an address it cannot
// bind.
StatusOr<std::unique_ptr<AdminServer>> StartAdminPort(const std::string& address,
                                                      const std::string& token_file,
                                                      NodeTelemetry& telemetry,
                                                      AdminServer::Validator validate);

}  // namespace murmur::node
