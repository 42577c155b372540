#pragma once
// A configuration schema (config_schema.h) bound to one CLI11 (sub)command: its flags, and the
// resolution of default, file, environment and flags into one config. Only the program (cli/)
// and tests parse flags; the library (api/) reads a resolved document (config_schema.h
// ReadTomlFile) and needs no flag parser.

#include <CLI/CLI.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/status.h"
#include "node/config/config_schema.h"

namespace murmur::node {

// Binds a schema to one CLI11 (sub)command and resolves the final config after parsing.
template <typename C>
class ConfigParser {
 public:
  explicit ConfigParser(const ConfigSchema<C>& schema) : schema_(schema) {}

  // Adds --config FILE and one option per key (a flag for booleans: --nesterov, --nesterov=false,
  // or --nesterov false through JoinBoolValues). Help text shows the default, the allowed values and the env variable.
  void AddOptions(CLI::App& app) {
    app.add_option("--config", config_path_, "TOML file with any of the keys below (snake_case)")
        ->type_name("FILE")
        ->envname("MURMUR_CONFIG");
    flag_values_.resize(schema_.keys().size());
    options_.resize(schema_.keys().size());
    for (size_t i = 0; i < schema_.keys().size(); ++i) {
      const auto& key = schema_.keys()[i];
      const std::string desc = key.help + " [" + key.default_text + "; " + key.allowed + "; env " +
                               EnvName(key.name) + "]";
      if (key.is_bool) {
        // "{true}": a bare --flag means true (--flag=false also parses; `--flag false` is made
        // --flag=false before parsing, JoinBoolValues); HelpFormatter shows [true|false].
        options_[i] = app.add_flag(FlagName(key.name) + "{true}", flag_values_[i], desc);
        BoolFlagNames().insert(FlagName(key.name));
      } else {
        options_[i] = app.add_option(FlagName(key.name), flag_values_[i], desc)->type_name(key.type);
      }
    }
  }

  // Applies default, file, environment and flags in that order. `getenv` is injected so tests
  // control the environment. Errors are kInvalidArgument (or kNotFound for a missing file) with a
  // message naming the key, the value, where it came from and what is allowed.
  // `texts`, when given, receives every key's resolved text (what config.toml of a run
  // directory records).
  // `given`, when given, receives the keys a file, the environment or a flag set (not defaults).
  StatusOr<C> Resolve(const std::function<const char*(const char*)>& getenv,
                      std::map<std::string, std::string>* texts = nullptr,
                      std::set<std::string>* given = nullptr) const {
    C config{};
    for (const auto& key : schema_.keys()) {
      Status s = key.set(key.default_text, config);
      if (!s.ok()) return InternalError("default of " + key.name + " is invalid: " + s.ToString());
      if (texts != nullptr) (*texts)[key.name] = key.default_text;
    }
    std::string path = config_path_;
    if (path.empty()) {
      if (const char* p = getenv("MURMUR_CONFIG")) path = p;
    }
    if (!path.empty()) {
      MURMUR_ASSIGN_OR_RETURN(auto file, ReadTomlFile(path));
      for (const auto& [name, text] : file) {
        const Key* key = Find(name);
        if (key == nullptr) {
          return InvalidArgumentError("unknown key '" + name + "' in " + path + " (known: " +
                                      KnownKeys() + ")");
        }
        MURMUR_RETURN_IF_ERROR(Apply(*key, text, "'" + key->name + "' in " + path, config));
        if (texts != nullptr) (*texts)[key->name] = text;
        MarkGiven(*key, config, given);
      }
    }
    for (const auto& key : schema_.keys()) {
      const std::string env = EnvName(key.name);
      if (const char* value = getenv(env.c_str())) {
        MURMUR_RETURN_IF_ERROR(Apply(key, value, "environment variable " + env, config));
        if (texts != nullptr) (*texts)[key.name] = value;
        MarkGiven(key, config, given);
      }
    }
    for (size_t i = 0; i < schema_.keys().size(); ++i) {
      if (options_[i] != nullptr && options_[i]->count() > 0) {
        const auto& key = schema_.keys()[i];
        MURMUR_RETURN_IF_ERROR(Apply(key, flag_values_[i], "flag " + FlagName(key.name), config));
        if (texts != nullptr) (*texts)[key.name] = flag_values_[i];
        MarkGiven(key, config, given);
      }
    }
    return config;
  }

  // The keys of `only` that a file, the environment or a flag gave (`given`, from Resolve), as
  // "--flag=value" in the schema's order: what a refusal names.
  std::vector<std::string> GivenFlags(const std::map<std::string, std::string>& texts,
                                      const std::set<std::string>& given,
                                      const std::vector<std::string>& only) const {
    std::vector<std::string> out;
    for (const auto& [name, text] : GivenTexts(texts, given, only)) {
      out.push_back(FlagName(name) + "=" + text);
    }
    return out;
  }
  // The same as key → resolved text: what a parent hands on to a child process whose schema is
  // another (a --config file of the parent's may hold keys the child does not know). Ordered
  // by the schema.
  std::vector<std::pair<std::string, std::string>> GivenTexts(
      const std::map<std::string, std::string>& texts, const std::set<std::string>& given,
      const std::vector<std::string>& only) const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& key : schema_.keys()) {
      if (!given.contains(key.name)) continue;
      if (std::find(only.begin(), only.end(), key.name) == only.end()) continue;
      const auto t = texts.find(key.name);
      if (t != texts.end()) out.emplace_back(key.name, t->second);
    }
    return out;
  }

  // The given keys (GivenTexts of every key) as one document (ConfigSchema::Document): what a
  // launcher hands a process that reads its keys from a file.
  std::string GivenDocument(const std::map<std::string, std::string>& texts,
                            const std::set<std::string>& given) const {
    std::vector<std::string> all;
    for (const auto& key : schema_.keys()) all.push_back(key.name);
    const auto keys = GivenTexts(texts, given, all);
    return schema_.Document(std::map<std::string, std::string>(keys.begin(), keys.end()));
  }

  // `texts` (from Resolve) as a TOML file --config loads: booleans and numbers bare, the rest
  // quoted strings, in the schema's order. The keys in `unread` (ones the run does not read: the
  // other kind of mode's, the plain CHOCO round keys under an outer optimizer) are recorded as
  // comments, so that loading the file gives no key the run would refuse as given in vain.
  std::string ResolvedToml(const std::map<std::string, std::string>& texts,
                           const std::set<std::string>& unread = {}) const {
    std::string out;
    for (const auto& key : schema_.keys()) {
      const auto t = texts.find(key.name);
      if (t == texts.end()) continue;
      const std::string line =
          TomlLine(key.name, t->second, key.is_bool || key.type == "INT" || key.type == "NUMBER");
      out += unread.contains(key.name) ? "# " + line.substr(0, line.size() - 1) +
                                             "  # not read by this run\n"
                                       : line;
    }
    return out;
  }

  // The file a command names another way (`murmur sim SCENARIO`); --config, when given too, must
  // name the same file (kInvalidArgument otherwise).
  Status SetConfigPath(const std::string& path) {
    if (!config_path_.empty() && config_path_ != path) {
      return InvalidArgumentError("two configuration files: '" + path + "' and --config '" +
                                  config_path_ + "'");
    }
    config_path_ = path;
    return OkStatus();
  }

 private:
  using Key = typename ConfigSchema<C>::Key;
  const Key* Find(const std::string& name) const {
    for (const auto& key : schema_.keys()) {
      if (key.name == name || FlagName(key.name) == "--" + name) return &key;
    }
    return nullptr;
  }
  std::string KnownKeys() const {
    std::string out;
    for (const auto& key : schema_.keys()) out += (out.empty() ? "" : ", ") + key.name;
    return out;
  }
  static void MarkGiven(const Key& key, C& config, std::set<std::string>* given) {
    if (key.mark) key.mark(config);
    if (given != nullptr) given->insert(key.name);
  }
  static Status Apply(const Key& key, std::string_view text, const std::string& source,
                      C& config) {
    Status s = key.set(text, config);
    if (s.ok()) return s;
    // A spec's own parser says which part is wrong.
    const std::string why = key.type == "SPEC" ? " (" + std::string(s.message()) + ")" : "";
    return InvalidArgumentError("invalid value '" + std::string(text) + "' for " + key.name +
                                " (from " + source + "): expected " + key.allowed + why);
  }

  const ConfigSchema<C>& schema_;
  std::string config_path_;
  std::vector<std::string> flag_values_;
  std::vector<CLI::Option*> options_;
};

}  // namespace murmur::node
