#pragma once
// A command line of a ConfigSchema's command, resolved with a fake environment: what the config
// tests parse flags and environment variables with.

#include <CLI/CLI.hpp>

#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "node/config/config_parser.h"

namespace murmur::testing {

// Parses `args` as a command line of `schema`'s command with `env` as its whole environment.
template <typename C>
StatusOr<C> ParseArgs(const node::ConfigSchema<C>& schema, const std::vector<std::string>& args,
                      const std::map<std::string, std::string>& env = {}) {
  CLI::App app("test");
  node::ConfigParser<C> parser(schema);
  parser.AddOptions(app);
  std::vector<const char*> argv = {"murmur"};
  for (const auto& a : args) argv.push_back(a.c_str());
  app.parse(static_cast<int>(argv.size()), const_cast<char**>(argv.data()));
  return parser.Resolve([&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

}  // namespace murmur::testing
