#include "node/peer/seeds.h"

#include <netdb.h>
#include <sys/socket.h>
#include <arpa/inet.h>

#include <algorithm>
#include <set>

#include "gossip/transport/transport.h"

namespace murmur::node {

StatusOr<std::string> SeedEndpoint(std::string_view seed) {
  while (!seed.empty() && seed.front() == ' ') seed.remove_prefix(1);
  while (!seed.empty() && seed.back() == ' ') seed.remove_suffix(1);
  std::string endpoint = seed.starts_with("ipc://") || seed.starts_with("tcp://")
                             ? std::string(seed)
                             : "tcp://" + std::string(seed);
  const Status valid = transport::ValidateEndpoint(endpoint);
  if (!valid.ok() || endpoint.ends_with(":0") || endpoint.ends_with(":*")) {
    return InvalidArgumentError("seed '" + std::string(seed) +
                                "' needs HOST:PORT with a port in 1-65535 (or tcp://HOST:PORT, "
                                "ipc://PATH)");
  }
  return endpoint;
}

StatusOr<std::vector<std::string>> ParseSeedList(std::string_view list) {
  std::vector<std::string> out;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    if (item.find_first_not_of(' ') == std::string_view::npos) continue;
    auto endpoint = SeedEndpoint(item);
    if (!endpoint.ok()) return endpoint.status();
    out.push_back(*endpoint);
  }
  return out;
}

std::vector<std::string> ResolveSeeds(const std::vector<std::string>& endpoints,
                                      std::vector<std::string>* unresolved) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto add = [&](std::string e) {
    if (seen.insert(e).second) out.push_back(std::move(e));
  };
  for (const std::string& endpoint : endpoints) {
    if (!endpoint.starts_with("tcp://")) {
      add(endpoint);
      continue;
    }
    const std::string hostport = endpoint.substr(6);
    const size_t colon = hostport.rfind(':');
    std::string host = hostport.substr(0, colon);
    const std::string port = hostport.substr(colon + 1);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* result = nullptr;
    if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &result) != 0 || result == nullptr) {
      if (unresolved != nullptr) unresolved->push_back(endpoint);
      continue;
    }
    std::vector<std::string> found;
    for (addrinfo* a = result; a != nullptr; a = a->ai_next) {
      char text[INET6_ADDRSTRLEN] = {};
      if (a->ai_family == AF_INET) {
        ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr, text, sizeof(text));
        found.push_back("tcp://" + std::string(text) + ":" + port);
      } else if (a->ai_family == AF_INET6) {
        ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr, text, sizeof(text));
        found.push_back("tcp://[" + std::string(text) + "]:" + port);
      }
    }
    ::freeaddrinfo(result);
    std::sort(found.begin(), found.end());
    for (auto& f : found) add(std::move(f));
  }
  return out;
}

}  // namespace murmur::node
