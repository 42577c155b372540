#pragma once
// One table of configuration keys per command, and their resolution with the precedence
//   flag (--batch-size 32)  >  environment (MURMUR_BATCH_SIZE=32)  >  TOML file (batch_size = 32)
//   >  default.
// A key is declared once (name, default, allowed values, help); its flag, environment variable
// and file key are derived from the name, and every source goes through the same parser, so a
// bad value gets the same message wherever it came from: the key, the value, what is allowed.

#include <cstdint>
#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/check.h"
#include "base/status.h"
#include "gossip/mode.h"

namespace murmur::node {

// Parsers shared by every schema. Each returns kInvalidArgument saying what is allowed.
StatusOr<int64_t> ParseInteger(std::string_view text, int64_t lo, int64_t hi);
StatusOr<double> ParseReal(std::string_view text, double lo, double hi);
StatusOr<bool> ParseBool(std::string_view text);
StatusOr<std::vector<int64_t>> ParseIntegerList(std::string_view text, int64_t lo, int64_t hi);

// Converts a TOML file's top-level keys to text, in the form the flag parser accepts
// (arrays become "a,b,c"). kInvalidArgument on a parse error (with line and column) and for
// nested tables; kNotFound when the file is missing.
StatusOr<std::map<std::string, std::string>> ReadTomlFile(const std::string& path);
// The same from text; `path` names it in errors.
StatusOr<std::map<std::string, std::string>> ParseToml(std::string_view text, const std::string& path);

std::string FlagName(std::string_view key);  // "batch_size" -> "--batch-size"
std::string EnvName(std::string_view key);   // "batch_size" -> "MURMUR_BATCH_SIZE"
// `key = value\n`: `text` bare when `bare` and it reads as a TOML number or boolean, else a
// quoted TOML string.
std::string TomlLine(std::string_view key, std::string_view text, bool bare);

template <typename C>
class ConfigSchema {
 public:
  using Setter = std::function<Status(std::string_view text, C& config)>;
  struct Key {
    std::string name;  // snake_case; flag --kebab-case, env MURMUR_UPPER_CASE
    std::string default_text;
    std::string allowed;  // "an integer in [1, 100000]"
    std::string help;
    bool is_bool = false;
    Setter set;
    std::string type = "TEXT";  // --help's value label: INT, NUMBER, CHOICE, LIST, TEXT
    // Records in the config that a file, the environment or a flag gave this key (the given-sets
    // of the structs it is embedded in, innermost first); empty when no struct keeps one.
    std::function<void(C& config)> mark = nullptr;
  };

  // Keeps in `member` the names of the keys a file, the environment or a flag gave (never those
  // left at their defaults): a rule that depends on whether a key was given reads this set,
  // never a comparison with the default. Call before the keys are added.
  ConfigSchema& Given(std::set<std::string> C::*member) {
    given_ = member;
    return *this;
  }

  template <typename M>
  ConfigSchema& Integer(std::string name, M C::*member, M def, M lo, M hi, std::string help) {
    std::string allowed = "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    return Add({std::move(name), std::to_string(def), std::move(allowed), std::move(help), false,
                [member, lo, hi](std::string_view text, C& c) -> Status {
                  MURMUR_ASSIGN_OR_RETURN(int64_t v, ParseInteger(text, lo, hi));
                  c.*member = static_cast<M>(v);
                  return OkStatus();
                },
                "INT"});
  }
  ConfigSchema& Real(std::string name, double C::*member, std::string def, double lo, double hi,
                     std::string help) {
    std::string allowed = "a number in [" + Trim(lo) + ", " + Trim(hi) + "]";
    return Add({std::move(name), std::move(def), std::move(allowed), std::move(help), false,
                [member, lo, hi](std::string_view text, C& c) -> Status {
                  MURMUR_ASSIGN_OR_RETURN(c.*member, ParseReal(text, lo, hi));
                  return OkStatus();
                },
                "NUMBER"});
  }
  ConfigSchema& Bool(std::string name, bool C::*member, bool def, std::string help) {
    return Add({std::move(name), def ? "true" : "false", "true or false", std::move(help), true,
                [member](std::string_view text, C& c) -> Status {
                  MURMUR_ASSIGN_OR_RETURN(c.*member, ParseBool(text));
                  return OkStatus();
                },
                ""});
  }
  ConfigSchema& Choice(std::string name, std::string C::*member, std::string def,
                       std::vector<std::string> choices, std::string help) {
    std::string allowed = "one of ";
    for (size_t i = 0; i < choices.size(); ++i) allowed += (i ? ", " : "") + choices[i];
    return Add({std::move(name), std::move(def), std::move(allowed), std::move(help), false,
                [member, choices](std::string_view text, C& c) -> Status {
                  for (const auto& choice : choices) {
                    if (text == choice) {
                      c.*member = choice;
                      return OkStatus();
                    }
                  }
                  return InvalidArgumentError("not a known choice");
                },
                "CHOICE"});
  }
  // One of `choices` by name, stored as its enum value.
  template <typename E>
  ConfigSchema& Enum(std::string name, E C::*member, std::string def,
                     std::vector<std::pair<std::string, E>> choices, std::string help) {
    std::string allowed = "one of ";
    for (size_t i = 0; i < choices.size(); ++i) allowed += (i ? ", " : "") + choices[i].first;
    return Add({std::move(name), std::move(def), std::move(allowed), std::move(help), false,
                [member, choices](std::string_view text, C& c) -> Status {
                  for (const auto& [choice, value] : choices) {
                    if (text == choice) {
                      c.*member = value;
                      return OkStatus();
                    }
                  }
                  return InvalidArgumentError("not a known choice");
                },
                "CHOICE"});
  }
  ConfigSchema& Text(std::string name, std::string C::*member, std::string def,
                     std::string help) {
    return Add({std::move(name), std::move(def), "any text", std::move(help), false,
                [member](std::string_view text, C& c) -> Status {
                  c.*member = std::string(text);
                  return OkStatus();
                }});
  }
  // A value with a parser of its own, parsed once into its type (`allowed` says what it takes).
  template <typename T>
  ConfigSchema& Parsed(std::string name, T C::*member, std::string def, std::string allowed,
                       std::string help, StatusOr<T> (*parse)(std::string_view)) {
    return Add({std::move(name), std::move(def), std::move(allowed), std::move(help), false,
                [member, parse](std::string_view text, C& c) -> Status {
                  MURMUR_ASSIGN_OR_RETURN(c.*member, parse(text));
                  return OkStatus();
                },
                "SPEC"});
  }
  // Keys several commands share, declared here once (name, range, choices); each command gives
  // its default and its own words for them.
  // A log level (base/log.h SetLogLevel's names).
  ConfigSchema& LogLevel(std::string name, std::string C::*member, std::string def,
                         std::string help) {
    return Choice(std::move(name), member, std::move(def),
                  {"trace", "debug", "info", "warn", "error", "off"}, std::move(help));
  }
  // Live progress on stderr: auto (tty on a terminal, else plain), tty, plain, none.
  ConfigSchema& Progress(std::string C::*member, std::string help) {
    return Choice("progress", member, "auto", {"auto", "tty", "plain", "none"}, std::move(help));
  }
  // --json: the run's summary as one JSON object on stdout, instead of the text report.
  ConfigSchema& SummaryJson(bool C::*member) {
    return Bool("json", member, false,
                "print the summary as one JSON object on stdout instead of the text report");
  }
  // A node's shard of the training set: shard_index (0-based) of shard_count.
  ConfigSchema& Shards(int C::*index, int C::*count, std::string index_help,
                       std::string count_help) {
    Integer("shard_index", index, 0, 0, 1 << 20, std::move(index_help));
    return Integer("shard_count", count, 1, 1, 1 << 20, std::move(count_help));
  }
  // A cluster's injections by node (murmur local, murmur sim): `straggle` and `crash` lists, their
  // syntax said once, then what the command adds.
  ConfigSchema& StraggleList(std::string C::*member, std::string more) {
    return Text("straggle", member, "",
                "straggler injection per node: node=K,<injection> (K the node's id, 1..N, as the "
                "table and the logs name it), worker=W (the W-th process that computes "
                "gradients, the same worker in every mode), or in the synchronous modes rank=R "
                "(0 the root); injection as in `murmur node --straggle`), several separated by "
                "';', e.g. node=3,slowdown=4" +
                    std::move(more));
  }
  ConfigSchema& CrashList(std::string C::*member, std::string more) {
    return Text("crash", member, "",
                "injected crashes (gossip, membership): node=K,at=S[,down=D] kills node K S into "
                "the run (5s, 1500ms) and, with down, starts it again D later with a new "
                "incarnation (it rejoins with a peer's model); several separated by ';'" +
                    std::move(more));
  }
  // The SWIM period and the direct-ack wait (gossip/membership.h), in milliseconds.
  ConfigSchema& Probes(int C::*interval, int interval_default, std::string interval_help,
                       int C::*timeout, int timeout_default, std::string timeout_help) {
    Integer("probe_interval_ms", interval, interval_default, 10, 600000, std::move(interval_help));
    return Integer("probe_timeout_ms", timeout, timeout_default, 1, 600000,
                   std::move(timeout_help));
  }
  ConfigSchema& IntegerList(std::string name, std::vector<int64_t> C::*member, std::string def,
                            int64_t lo, int64_t hi, std::string help) {
    std::string allowed = "a comma-separated list of integers in [" + std::to_string(lo) + ", " +
                          std::to_string(hi) + "]";
    return Add({std::move(name), std::move(def), std::move(allowed), std::move(help), false,
                [member, lo, hi](std::string_view text, C& c) -> Status {
                  MURMUR_ASSIGN_OR_RETURN(c.*member, ParseIntegerList(text, lo, hi));
                  return OkStatus();
                },
                "LIST"});
  }

  // Adds the keys of `sub` (a schema of a member struct), except those named in `skip`, with the
  // defaults in `defaults` replacing sub's: one command can take another's keys without
  // repeating their table.
  template <typename S>
  ConfigSchema& Embed(const ConfigSchema<S>& sub, S C::*member, const std::vector<std::string>& skip,
                      const std::map<std::string, std::string>& defaults = {},
                      const std::map<std::string, std::string>& helps = {}) {
    for (const auto& key : sub.keys()) {
      if (std::find(skip.begin(), skip.end(), key.name) != skip.end()) continue;
      auto d = defaults.find(key.name);
      auto h = helps.find(key.name);
      Key added{key.name,
                d == defaults.end() ? key.default_text : d->second,
                key.allowed,
                h == helps.end() ? key.help : h->second,
                key.is_bool,
                [member, set = key.set](std::string_view text, C& c) { return set(text, c.*member); },
                key.type};
      if (key.mark) added.mark = [member, mark = key.mark](C& c) { mark(c.*member); };
      Add(std::move(added));
    }
    return *this;
  }

  const std::vector<Key>& keys() const { return keys_; }
  // `texts` (key → text) as one TOML document that --config, or the library, reads back through
  // this schema: in the schema's order, booleans and numbers bare, the rest quoted. What a
  // parent hands a child process: its resolved keys, parsed once there. A key the schema lacks
  // is a broken invariant (the writer is murmur itself).
  std::string Document(const std::map<std::string, std::string>& texts) const {
    size_t written = 0;
    std::string out;
    for (const auto& key : keys_) {
      const auto t = texts.find(key.name);
      if (t == texts.end()) continue;
      out += TomlLine(key.name, t->second, key.is_bool || key.type == "INT" || key.type == "NUMBER");
      ++written;
    }
    MURMUR_CHECK_EQ(written, texts.size()) << "a key this schema does not hold";
    return out;
  }

 private:
  ConfigSchema& Add(Key key) {
    if (given_ != nullptr) {
      key.mark = [given = given_, name = key.name, inner = std::move(key.mark)](C& c) {
        if (inner) inner(c);
        (c.*given).insert(name);
      };
    }
    keys_.push_back(std::move(key));
    return *this;
  }
  static std::string Trim(double v) {
    std::string s = std::to_string(v);
    while (s.size() > 1 && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  }
  std::vector<Key> keys_;
  std::set<std::string> C::*given_ = nullptr;
};

// Every mode by name, for an Enum key.
inline std::vector<std::pair<std::string, gossip::Mode>> ModeChoices() {
  std::vector<std::pair<std::string, gossip::Mode>> out;
  for (std::string_view name : gossip::ModeNames()) out.emplace_back(name, *gossip::ParseMode(name));
  return out;
}


// Every boolean key's flag ("--nesterov") of every command, as ConfigParser::AddOptions adds them.
std::set<std::string>& BoolFlagNames();

// `--flag false` (a boolean flag of BoolFlagNames followed by a word ParseBool reads) becomes
// `--flag=false`: CLI11 takes a flag's value only after '=', and a flag that took the next word
// whatever it is would swallow a positional argument (murmur sim --json SCENARIO).
std::vector<std::string> JoinBoolValues(const std::vector<std::string>& args);

}  // namespace murmur::node
