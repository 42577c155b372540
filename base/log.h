#pragma once
// Logging through spdlog. One process-wide logger named "murmur" writing to stderr, so stdout
// stays free for results (`murmur train --json`). Use the MURMUR_LOG_* macros or the
// spdlog-style functions below; format strings are fmt's.

#include <spdlog/spdlog.h>

#include <string_view>

#include "base/status.h"

namespace murmur {

// Sets the level from a name: trace, debug, info, warn, error, off.
Status SetLogLevel(std::string_view level);
// The logger; created on first use.
spdlog::logger& Logger();

}  // namespace murmur

#define MURMUR_LOG_DEBUG(...) ::murmur::Logger().debug(__VA_ARGS__)
#define MURMUR_LOG_INFO(...) ::murmur::Logger().info(__VA_ARGS__)
#define MURMUR_LOG_WARN(...) ::murmur::Logger().warn(__VA_ARGS__)
#define MURMUR_LOG_ERROR(...) ::murmur::Logger().error(__VA_ARGS__)
