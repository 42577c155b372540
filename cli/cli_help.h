#pragma once
// How murmur's command line talks back: --help's option names, and a suggestion for a mistyped
// flag.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "base/suggest.h"
#include "node/config/config_parser.h"

namespace murmur::node {

// --help as murmur prints it: a boolean key (an option whose value may be left out: a bare
// --flag is true) shows as `--flag [true|false]`, its default in its description.
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* opt, bool is_positional) const override {
    std::string name = CLI::Formatter::make_option_name(opt, is_positional);
    for (size_t at; (at = name.find("{true}")) != std::string::npos;) name.erase(at, 6);
    return name;
  }
  std::string make_option_opts(const CLI::Option* opt) const override {
    const auto& names = opt->get_lnames();
    if (!names.empty() && BoolFlagNames().count("--" + names.front()) > 0) return " [true|false]";
    return CLI::Formatter::make_option_opts(opt);
  }
};

// The long option of `app` closest to `unknown` ("--epoch=3" → "--epochs"), or "" when none is
// within max(2, a third of its length) edits.
inline std::string DidYouMean(const CLI::App& app, std::string unknown) {
  if (!unknown.starts_with("--")) return "";
  unknown = unknown.substr(
      2, unknown.find('=') == std::string::npos ? std::string::npos : unknown.find('=') - 2);
  std::vector<std::string> names;
  for (const CLI::Option* opt : app.get_options()) {
    for (const std::string& name : opt->get_lnames()) names.push_back(name);
  }
  const std::string best = Closest(unknown, names);
  return best.empty() ? "" : "--" + best;
}

}  // namespace murmur::node
