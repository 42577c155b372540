#pragma once
// How murmur's command line talks back: --help's option names, and a suggestion for a mistyped
// flag.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

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

// Edits (insert, delete, substitute, swap two neighbours) from a to b: the optimal string
// alignment distance, for suggestions.
inline size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

// The long option of `app` closest to `unknown` ("--epoch=3" → "--epochs"), or "" when none is
// within max(2, a third of its length) edits.
inline std::string DidYouMean(const CLI::App& app, std::string unknown) {
  if (!unknown.starts_with("--")) return "";
  unknown = unknown.substr(
      2, unknown.find('=') == std::string::npos ? std::string::npos : unknown.find('=') - 2);
  std::string best;
  size_t best_distance = std::max<size_t>(2, unknown.size() / 3) + 1;
  for (const CLI::Option* opt : app.get_options()) {
    for (const std::string& name : opt->get_lnames()) {
      const size_t d = EditDistance(unknown, name);
      if (d < best_distance) {
        best_distance = d;
        best = "--" + name;
      }
    }
  }
  return best;
}

}  // namespace murmur::node
