#include "node/config/admin_port.h"

#include "base/log.h"
#include "node/config/secrets.h"

namespace murmur::node {

StatusOr<std::unique_ptr<AdminServer>> StartAdminPort(const std::string& address,
                                                      const std::string& token_file,
                                                      NodeTelemetry& telemetry,
                                                      AdminServer::Validator validate) {
  if (address.empty()) return std::unique_ptr<AdminServer>();
  std::string token;
  if (!token_file.empty()) {
    MURMUR_ASSIGN_OR_RETURN(token, LoadAdminToken(token_file));
  }
  MURMUR_ASSIGN_OR_RETURN(auto admin,
                          AdminServer::Start(address, telemetry, std::move(validate), token));
  MURMUR_LOG_INFO("admin port: http://{}:{}/ (metrics, healthz, status, straggler); changes {}",
                  admin->host(), admin->port(),
                  token.empty() ? "refused (no admin_token_file)" : "need the bearer token");
  return admin;
}

}  // namespace murmur::node
