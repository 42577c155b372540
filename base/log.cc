#include "base/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <string>

namespace murmur {

spdlog::logger& Logger() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::stderr_color_mt("murmur");
    l->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
    return l;
  }();
  return *logger;
}

Status SetLogLevel(std::string_view level) {
  const std::string name(level);
  auto parsed = spdlog::level::from_str(name);
  // from_str maps unknown names to "off"; only accept "off" when it was asked for.
  if (parsed == spdlog::level::off && name != "off") {
    return InvalidArgumentError("unknown log level '" + name +
                                "' (allowed: trace, debug, info, warn, error, off)");
  }
  Logger().set_level(parsed);
  return OkStatus();
}

}  // namespace murmur
