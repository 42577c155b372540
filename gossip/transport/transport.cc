#include "gossip/transport/transport.h"

namespace murmur::transport {

size_t Message::bytes() const {
  size_t total = header.size();
  for (const Frame& f : frames) total += f.size();
  return total;
}

Frame Frame::FromString(std::string s) {
  auto owner = std::make_shared<const std::string>(std::move(s));
  return Frame(owner, std::as_bytes(std::span<const char>(owner->data(), owner->size())));
}

Frame Frame::FromBytes(std::vector<std::byte> v) {
  auto owner = std::make_shared<const std::vector<std::byte>>(std::move(v));
  return Frame(owner, std::span<const std::byte>(owner->data(), owner->size()));
}

Frame Frame::Copy(std::span<const std::byte> bytes) {
  return FromBytes(std::vector<std::byte>(bytes.begin(), bytes.end()));
}

Status ValidateEndpoint(std::string_view endpoint) {
  if (endpoint.starts_with("ipc://")) {
    if (endpoint.size() == 6) return InvalidArgumentError("endpoint 'ipc://' has no path");
    return OkStatus();
  }
  if (endpoint.starts_with("tcp://")) {
    const std::string_view rest = endpoint.substr(6);
    const size_t colon = rest.rfind(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 == rest.size()) {
      return InvalidArgumentError("endpoint '" + std::string(endpoint) +
                                  "' needs a host and a port (tcp://HOST:PORT)");
    }
    const std::string_view port = rest.substr(colon + 1);
    if (port != "*") {
      int value = 0;
      for (char c : port) {
        if (c < '0' || c > '9' || value > 65535) {
          return InvalidArgumentError("endpoint '" + std::string(endpoint) + "' has port '" +
                                      std::string(port) + "' (allowed: 0-65535 or *)");
        }
        value = value * 10 + (c - '0');
      }
      if (value > 65535) {
        return InvalidArgumentError("endpoint '" + std::string(endpoint) +
                                    "' has a port above 65535");
      }
    }
    return OkStatus();
  }
  return InvalidArgumentError("endpoint '" + std::string(endpoint) +
                              "' is neither tcp://HOST:PORT nor ipc://PATH");
}

}  // namespace murmur::transport
