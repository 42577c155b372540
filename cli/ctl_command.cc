// `murmur ctl`: talks to running nodes' admin ports (see node/admin_server.h).
//   murmur ctl status   --targets h:p,h:p [--json]   id, mode, step, peers, injection per node
//   murmur ctl health   --targets ...                 exit 1 unless every node is ready
//   murmur ctl straggle --target h:p --slowdown 4 [--delay 20ms ...] [--for 60s]
//   murmur ctl clear    --targets ...                 stop injecting
//   murmur ctl metrics  --target h:p [--match murmur_step]
// --target and --targets are the same option: one HOST:PORT or a comma-separated list.
// Exit status: 0 when every target answered 2xx, 1 when one did not (its error is printed),
// 2 for a usage error.

#include <fmt/format.h>
#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/file.h"
#include "cli/command.h"
#include "node/config/secrets.h"
#include "node/observe/admin_server.h"

namespace murmur::node {
namespace {

struct Reply {
  bool ok = false;
  int status = 0;
  std::string body;
  std::string error;  // connection failure or the node's {"error": ...}
};

// "host:port" or "http://host:port" (a trailing slash allowed).
StatusOr<std::pair<std::string, int>> ParseTarget(std::string target) {
  if (target.rfind("http://", 0) == 0) target = target.substr(7);
  while (!target.empty() && target.back() == '/') target.pop_back();
  auto hp = ParseHostPort(target);
  if (!hp.ok() || hp->second == 0) {
    return InvalidArgumentError(
        fmt::format("target '{}' must be HOST:PORT of an admin port", target));
  }
  return hp;
}

Reply Call(const std::string& target, const std::string& method, const std::string& path,
           const std::string& body = "", const std::string& token = "") {
  Reply r;
  auto hp = ParseTarget(target);
  if (!hp.ok()) {
    r.error = std::string(hp.status().message());
    return r;
  }
  // A connection that fails before any answer (refused, reset, a write to a closed socket) is
  // tried once more after 200 ms: every request here is idempotent (GET, or PUT/DELETE of the
  // whole injection), and a node's admin port can drop a connection while it is busy (a reset
  // while writing the request failed one CI run's straggler_runtime).
  auto attempt = [&] {
    httplib::Client client(hp->first, hp->second);
    client.set_connection_timeout(3, 0);
    client.set_read_timeout(10, 0);
    if (!token.empty()) client.set_bearer_token_auth(token);
    return method == "GET"   ? client.Get(path)
           : method == "PUT" ? client.Put(path, body, "application/json")
                             : client.Delete(path);
  };
  httplib::Result res = attempt();
  if (!res) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    res = attempt();
  }
  if (!res) {
    r.error = fmt::format("cannot reach {}: {}", target, httplib::to_string(res.error()));
    return r;
  }
  r.status = res->status;
  r.body = res->body;
  r.ok = res->status >= 200 && res->status < 300;
  if (!r.ok) {
    auto j = nlohmann::json::parse(res->body, nullptr, false);
    r.error = fmt::format(
        "{} answered {}: {}", target, res->status,
        j.is_object() && j.contains("error") ? j["error"].get<std::string>() : res->body);
  }
  return r;
}

std::vector<std::string> SplitTargets(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const auto& item : items) {
    std::stringstream ss(item);
    std::string t;
    while (std::getline(ss, t, ',')) {
      if (!t.empty()) out.push_back(t);
    }
  }
  return out;
}

}  // namespace

// The targets of a file_sd file (a JSON array of {"targets": [...], "labels": {"node": K}}),
// all or only node K's. kInvalidArgument says what is wrong with the file.
StatusOr<std::vector<std::string>> TargetsFromFile(const std::string& path, int node) {
  auto text = ReadWholeFile(path, 1 << 20);
  if (!text.ok())
    return InvalidArgumentError("--targets-file: " + std::string(text.status().message()));
  const auto groups = nlohmann::json::parse(*text, nullptr, false);
  if (!groups.is_array())
    return InvalidArgumentError("--targets-file '" + path + "': not a JSON array of target groups");
  std::vector<std::string> out;
  for (const auto& g : groups) {
    if (!g.is_object() || !g.contains("targets") || !g["targets"].is_array()) {
      return InvalidArgumentError("--targets-file '" + path + "': a group without a targets list");
    }
    const auto labels = g.value("labels", nlohmann::json::object());
    if (node != 0 && (!labels.is_object() || labels.value("node", "") != std::to_string(node)))
      continue;
    for (const auto& t : g["targets"]) {
      if (t.is_string()) out.push_back(t.get<std::string>());
    }
  }
  if (out.empty()) {
    return InvalidArgumentError(
        "--targets-file '" + path + "': no target" +
        (node != 0 ? " labelled node " + std::to_string(node) : std::string()));
  }
  return out;
}

class CtlCommand : public Command {
 public:
  explicit CtlCommand(CLI::App& app);
  int Run() override;

 private:
  CLI::App* status = nullptr;
  CLI::App* health = nullptr;
  CLI::App* straggle = nullptr;
  CLI::App* clear = nullptr;
  CLI::App* metrics = nullptr;
  std::vector<std::string> targets;
  std::string targets_file;  // Prometheus file_sd JSON (murmur local --prometheus-targets)
  int node = 0;              // with targets_file: only the group labelled node=K (0: all)
  bool json = false;
  std::string match;
  // straggle settings (empty: not given)
  std::string slowdown, delay, exp, exp_slowdown, pause, send_delay, drop, seed, for_duration;
  std::string token_file;  // the admin token, for changes
  // The token from --token-file or MURMUR_ADMIN_TOKEN_FILE; false (with the reason) on failure.
  bool LoadToken(std::string& token);

  int Status();
  int Health();
  int Straggle();
  int Clear();
  int Metrics();
};

CtlCommand::CtlCommand(CLI::App& app)
    : Command(app, "ctl", "Query and steer running nodes through their admin ports") {
  subcommand()->require_subcommand(1);
  CtlCommand& i = *this;
  auto targets = [&](CLI::App* sub) {
    sub->add_option("--targets,--target", i.targets,
                    "admin ports: HOST:PORT, comma-separated or repeated");
    sub->add_option("--targets-file", i.targets_file,
                    "the admin ports from a Prometheus file_sd file, as murmur local "
                    "--prometheus-targets writes it")
        ->type_name("FILE");
    sub->add_option("--node", i.node, "with --targets-file: only node K (its `node` label)")
        ->type_name("INT");
  };
  i.status = subcommand()->add_subcommand("status",
                                          "Show each node's id, mode, step, peers and injection");
  targets(i.status);
  i.status->add_flag("--json", i.json, "print the nodes' /status documents as one JSON array");
  i.health = subcommand()->add_subcommand("health", "Check /healthz; exit 1 unless all are ready");
  targets(i.health);
  i.straggle = subcommand()->add_subcommand(
      "straggle", "Inject a straggler at run time (replaces the node's current injection)");
  targets(i.straggle);
  auto token = [&](CLI::App* sub) {
    sub->add_option("--token-file", i.token_file,
                    "file with the nodes' admin bearer token (their --admin-token-file)")
        ->envname("MURMUR_ADMIN_TOKEN_FILE");
  };
  token(i.straggle);
  i.straggle->add_option("--slowdown", i.slowdown,
                         "sleep (F-1) x compute after each step (F >= 1)");
  i.straggle->add_option("--delay", i.delay, "sleep this long after each step (20ms, 1s)");
  i.straggle->add_option("--exp", i.exp,
                         "sleep an exponential draw with this mean after each step");
  i.straggle->add_option("--exp-slowdown", i.exp_slowdown,
                         "sleep an exponential draw with mean F x compute after each step");
  i.straggle->add_option("--pause", i.pause,
                         "gossip: from step A stop until a peer reaches B (A..B)");
  i.straggle->add_option("--send-delay", i.send_delay, "hold every outgoing message this long");
  i.straggle->add_option("--drop", i.drop, "lose each outgoing message with this probability");
  i.straggle->add_option("--seed", i.seed, "seed of the random draws");
  i.straggle->add_option("--for", i.for_duration,
                         "end the injection by itself after this long (60s)");
  i.clear = subcommand()->add_subcommand("clear", "Stop injecting on the nodes");
  targets(i.clear);
  token(i.clear);
  i.metrics =
      subcommand()->add_subcommand("metrics", "Print /metrics (optionally only matching lines)");
  targets(i.metrics);
  i.metrics->add_option("--match", i.match, "print only lines containing this text");
}

int CtlCommand::Run() {
  CtlCommand& i = *this;
  if (!i.targets_file.empty()) {
    auto from_file = TargetsFromFile(i.targets_file, i.node);
    if (!from_file.ok()) {
      std::fprintf(stderr, "murmur ctl: %s\n", std::string(from_file.status().message()).c_str());
      return 2;
    }
    i.targets.insert(i.targets.end(), from_file->begin(), from_file->end());
  } else if (i.node != 0) {
    std::fprintf(stderr, "murmur ctl: --node picks a node of --targets-file; give the file\n");
    return 2;
  }
  if (i.targets.empty()) {
    std::fprintf(stderr,
                 "murmur ctl: no admin port: give --targets HOST:PORT or --targets-file FILE\n");
    return 2;
  }
  i.targets = SplitTargets(i.targets);
  for (const auto& t : i.targets) {
    if (auto hp = ParseTarget(t); !hp.ok()) {
      std::fprintf(stderr, "murmur ctl: %s\n", std::string(hp.status().message()).c_str());
      return 2;
    }
  }
  if (i.status->parsed()) return i.Status();
  if (i.health->parsed()) return i.Health();
  if (i.straggle->parsed()) return i.Straggle();
  if (i.clear->parsed()) return i.Clear();
  if (i.metrics->parsed()) return i.Metrics();
  return 2;
}

int CtlCommand::Status() {
  int rc = 0;
  nlohmann::json all = nlohmann::json::array();
  if (!json) {
    std::printf("%-22s %-20s %-10s %8s %-6s %-22s %-10s %s\n", "target", "id", "mode", "step",
                "ready", "peers a/s/d/l", "stragglers", "injection");
  }
  for (const auto& t : targets) {
    Reply r = Call(t, "GET", "/status");
    if (!r.ok) {
      std::fprintf(stderr, "murmur ctl: %s\n", r.error.c_str());
      rc = 1;
      if (json) all.push_back({{"target", t}, {"error", r.error}});
      continue;
    }
    nlohmann::json s = nlohmann::json::parse(r.body, nullptr, false);
    if (!s.is_object()) {
      std::fprintf(stderr, "murmur ctl: %s: /status is not a JSON object\n", t.c_str());
      rc = 1;
      continue;
    }
    if (json) {
      s["target"] = t;
      all.push_back(s);
      continue;
    }
    int alive = 0, suspect = 0, dead = 0, left = 0, flagged = 0;
    for (const auto& p : s.value("peers", nlohmann::json::array())) {
      const std::string state = p.value("state", "");
      alive += state == "alive";
      suspect += state == "suspect";
      dead += state == "dead";
      left += state == "left";
      flagged += p.value("straggler", false);
    }
    const auto& inj = s["injection"];
    std::string injection = inj.value("active", false) ? inj.value("spec", "") : "-";
    if (inj.contains("remaining_s") && inj["remaining_s"].is_number()) {
      injection += fmt::format(" ({:.0f} s left)", inj["remaining_s"].get<double>());
    }
    std::printf("%-22s %-20s %-10s %8lld %-6s %-22s %-10d %s\n", t.c_str(),
                s["id"].is_null() ? "-" : s["id"].dump().c_str(), s.value("mode", "").c_str(),
                static_cast<long long>(s.value("step", int64_t{0})),
                s.value("joined", false) ? "yes" : "no",
                fmt::format("{}/{}/{}/{}", alive, suspect, dead, left).c_str(), flagged,
                injection.c_str());
  }
  if (json) std::printf("%s\n", all.dump().c_str());
  return rc;
}

int CtlCommand::Health() {
  int rc = 0;
  for (const auto& t : targets) {
    Reply r = Call(t, "GET", "/healthz");
    if (r.status == 0) {
      std::printf("%s: unreachable (%s)\n", t.c_str(), r.error.c_str());
      rc = 1;
      continue;
    }
    std::string body = r.body;
    while (!body.empty() && body.back() == '\n') body.pop_back();
    std::printf("%s: %s\n", t.c_str(), body.c_str());
    if (!r.ok) rc = 1;
  }
  return rc;
}

int CtlCommand::Straggle() {
  nlohmann::json body = nlohmann::json::object();
  auto number = [&](const char* key, const std::string& text) -> bool {
    if (text.empty()) return true;
    try {
      size_t used = 0;
      const double v = std::stod(text, &used);
      if (used != text.size()) throw std::invalid_argument(text);
      body[key] = v;
      return true;
    } catch (const std::exception&) {
      std::fprintf(stderr, "murmur ctl: --%s '%s' is not a number\n", key, text.c_str());
      return false;
    }
  };
  if (!number("slowdown", slowdown) || !number("exp_slowdown", exp_slowdown) ||
      !number("drop", drop) || !number("seed", seed)) {
    return 2;
  }
  if (!delay.empty()) body["delay"] = delay;
  if (!exp.empty()) body["exp"] = exp;
  if (!send_delay.empty()) body["send_delay"] = send_delay;
  if (!pause.empty()) body["pause"] = pause;
  if (!for_duration.empty()) body["for"] = for_duration;
  // The node validates; checking here too gives the same message before any node is touched.
  if (auto parsed = ParseStraggleRequest(body.dump()); !parsed.ok()) {
    std::fprintf(stderr, "murmur ctl: %s\n", std::string(parsed.status().message()).c_str());
    return 2;
  }
  std::string token;
  if (!LoadToken(token)) return 2;
  int rc = 0;
  for (const auto& t : targets) {
    Reply r = Call(t, "PUT", "/straggler", body.dump(), token);
    if (!r.ok) {
      std::fprintf(stderr, "murmur ctl: %s\n", r.error.c_str());
      rc = 1;
      continue;
    }
    auto s = nlohmann::json::parse(r.body, nullptr, false);
    std::printf("%s: injecting %s%s\n", t.c_str(), s.value("spec", "?").c_str(),
                s.contains("remaining_s") && s["remaining_s"].is_number()
                    ? fmt::format(" for {:.0f} s", s["remaining_s"].get<double>()).c_str()
                    : "");
  }
  return rc;
}

bool CtlCommand::LoadToken(std::string& token) {
  if (token_file.empty()) return true;  // the node will say that it needs one
  auto loaded = LoadAdminToken(token_file);
  if (!loaded.ok()) {
    std::fprintf(stderr, "murmur ctl: %s\n", std::string(loaded.status().message()).c_str());
    return false;
  }
  token = *loaded;
  return true;
}

int CtlCommand::Clear() {
  std::string token;
  if (!LoadToken(token)) return 2;
  int rc = 0;
  for (const auto& t : targets) {
    Reply r = Call(t, "DELETE", "/straggler", "", token);
    if (!r.ok) {
      std::fprintf(stderr, "murmur ctl: %s\n", r.error.c_str());
      rc = 1;
      continue;
    }
    std::printf("%s: injection stopped\n", t.c_str());
  }
  return rc;
}

int CtlCommand::Metrics() {
  int rc = 0;
  for (const auto& t : targets) {
    Reply r = Call(t, "GET", "/metrics");
    if (!r.ok) {
      std::fprintf(stderr, "murmur ctl: %s\n", r.error.c_str());
      rc = 1;
      continue;
    }
    std::istringstream lines(r.body);
    std::string line;
    while (std::getline(lines, line)) {
      if (!match.empty() && (line.starts_with('#') || line.find(match) == std::string::npos))
        continue;
      if (targets.size() > 1) {
        std::printf("%s %s\n", t.c_str(), line.c_str());
      } else {
        std::printf("%s\n", line.c_str());
      }
    }
  }
  return rc;
}

std::unique_ptr<Command> MakeCtlCommand(CLI::App& app) { return std::make_unique<CtlCommand>(app); }

}  // namespace murmur::node
