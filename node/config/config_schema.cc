#include "node/config/config_schema.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <cctype>
#include <cmath>
#include <optional>
#include <sstream>

#include "base/file.h"
#include "base/spec.h"

namespace murmur::node {

std::string FlagName(std::string_view key) {
  std::string out = "--";
  for (char c : key) out += c == '_' ? '-' : c;
  return out;
}

std::string EnvName(std::string_view key) {
  std::string out = "MURMUR_";
  for (char c : key) out += c == '-' ? '_' : static_cast<char>(std::toupper(c));
  return out;
}

std::string TomlLine(std::string_view key, std::string_view text, bool bare) {
  if (bare) {
    // Bare only when TOML itself reads it as a number or a boolean (not "1e", "inf" or "").
    try {
      const toml::table parsed = toml::parse("v = " + std::string(text));
      if (parsed["v"].is_number() || parsed["v"].is_boolean()) return fmt::format("{} = {}\n", key, text);
    } catch (const toml::parse_error&) {
    }
  }
  std::ostringstream quoted;
  quoted << toml::value<std::string>(std::string(text));
  return fmt::format("{} = {}\n", key, quoted.str());
}

StatusOr<int64_t> ParseInteger(std::string_view text, int64_t lo, int64_t hi) {
  const StatusOr<int64_t> v = ParseNumber<int64_t>(text, "integer");
  if (!v.ok()) return InvalidArgumentError("not an integer");
  if (*v < lo || *v > hi) return InvalidArgumentError("out of range");
  return *v;
}

StatusOr<double> ParseReal(std::string_view text, double lo, double hi) {
  const StatusOr<double> v = ParseNumber<double>(text, "number");
  if (!v.ok()) return InvalidArgumentError("not a number");
  if (*v < lo || *v > hi) return InvalidArgumentError("out of range");
  return *v;
}

StatusOr<bool> ParseBool(std::string_view text) {
  if (text == "true" || text == "1" || text == "yes" || text == "on") return true;
  if (text == "false" || text == "0" || text == "no" || text == "off") return false;
  return InvalidArgumentError("not a boolean");
}

std::set<std::string>& BoolFlagNames() {
  static std::set<std::string> names;
  return names;
}

std::vector<std::string> JoinBoolValues(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (i + 1 < args.size() && BoolFlagNames().count(args[i]) > 0 && ParseBool(args[i + 1]).ok()) {
      out.push_back(args[i] + "=" + args[i + 1]);
      ++i;
    } else {
      out.push_back(args[i]);
    }
  }
  return out;
}

StatusOr<std::vector<int64_t>> ParseIntegerList(std::string_view text, int64_t lo, int64_t hi) {
  std::vector<int64_t> out;
  if (text.empty()) return out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string_view item =
        text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    MURMUR_ASSIGN_OR_RETURN(int64_t v, ParseInteger(item, lo, hi));
    out.push_back(v);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

StatusOr<std::map<std::string, std::string>> ReadTomlFile(const std::string& path) {
  auto text = ReadWholeFile(path, size_t{1} << 20);
  if (text.status().code() == StatusCode::kNotFound) {
    return NotFoundError("config file " + path + " not found");
  }
  if (!text.ok()) return InvalidArgumentError("config file: " + std::string(text.status().message()));
  return ParseToml(*text, path);
}

StatusOr<std::map<std::string, std::string>> ParseToml(std::string_view text, const std::string& path) {
  toml::table table;
  try {
    table = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    return InvalidArgumentError(path + ":" + std::to_string(where.line) + ":" +
                                std::to_string(where.column) + ": " + std::string(e.description()));
  }
  std::map<std::string, std::string> out;
  for (const auto& [k, node] : table) {
    const std::string key(k.str());
    std::string text;
    if (auto s = node.value<std::string>(); s && node.is_string()) {
      text = *s;
    } else if (node.is_integer()) {
      text = std::to_string(*node.value<int64_t>());
    } else if (node.is_floating_point()) {
      text = fmt::format("{}", *node.value<double>());
    } else if (node.is_boolean()) {
      text = *node.value<bool>() ? "true" : "false";
    } else if (const toml::array* array = node.as_array()) {
      for (size_t i = 0; i < array->size(); ++i) {
        // Only integer elements: toml++ converts a float element by casting it to int64_t,
        // which is undefined for 2e56 (found by fuzz_config).
        const auto item = (*array)[i].is_integer() ? (*array)[i].value<int64_t>() : std::nullopt;
        if (!item) {
          return InvalidArgumentError(path + ": '" + key + "' must be an array of integers");
        }
        text += (i ? "," : "") + std::to_string(*item);
      }
    } else {
      return InvalidArgumentError(path + ": '" + key +
                                  "' must be a string, number, boolean or array of integers");
    }
    out[key] = text;
  }
  return out;
}

}  // namespace murmur::node
