#include "cli/local_cluster.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>
#include <utility>

#include "cli/exec_program.h"
#include "gossip/transport/curve_keys.h"
#include "node/config/config_schema.h"
#include "node/config/node_config.h"
#include "node/config/secrets.h"

namespace murmur::node {
namespace {

// Ports of every node in a namespace of its own (each namespace has its own port space).
constexpr int kNetnsPeerPort = 7070;
constexpr int kNetnsAdminPort = 9100;

// The kernel's ephemeral range (ip_local_port_range), from which it draws the source ports of
// outgoing connections and the ports of bind(0); {0, 0} when unreadable.
std::pair<int, int> EphemeralRange() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0, high = 0;
  if (!(in >> low >> high) || low <= 0 || high < low) return {0, 0};
  return {low, high};
}

// A socket bound to loopback `port` (0: one the kernel picks), -1 when it is taken.
int BindLoopback(int port, int& bound) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    return -1;
  }
  bound = ntohs(addr.sin_port);
  return fd;
}

// Free loopback ports, all held open while choosing so they differ. They are released before
// the nodes bind them, so they are drawn below the ephemeral range where the system allows:
// a port from that range may meanwhile become the source port of any process's outgoing
// connection (a node's own links among them), which then makes the node's bind fail. Random
// in [10000, low), so that two runs at once rarely meet; bind(0) when there is no such room.
std::vector<int> FreePorts(int n) {
  const int low = EphemeralRange().first;
  std::vector<int> fds, ports;
  std::mt19937 draw(static_cast<uint32_t>(::getpid()) ^
                    static_cast<uint32_t>(std::random_device{}()));
  const bool below = low > 10000 + 4 * n;
  for (int tries = 0; static_cast<int>(ports.size()) < n && tries < 64 * n + 64; ++tries) {
    const int want = below ? std::uniform_int_distribution<int>(10000, low - 1)(draw) : 0;
    int bound = 0;
    const int fd = BindLoopback(want, bound);
    if (fd < 0) continue;
    fds.push_back(fd);
    ports.push_back(bound);
  }
  for (int fd : fds) ::close(fd);
  return ports;
}

// Where each node listens and where its admin port is.
struct Addresses {
  std::vector<std::string> endpoints;
  std::vector<std::string> admins;  // empty without admin ports
};

StatusOr<Addresses> AddressesFor(const LocalClusterOptions& config,
                                 const std::filesystem::path& dir) {
  const int n = config.nodes;
  Addresses a;
  if (config.network != nullptr) {  // a namespace's ports are its own
    for (int i = 0; i < n; ++i) {
      a.endpoints.push_back(fmt::format("tcp://{}:{}", config.network->address(i), kNetnsPeerPort));
      if (config.admin) {
        a.admins.push_back(fmt::format("{}:{}", config.network->address(i), kNetnsAdminPort));
      }
    }
    return a;
  }
  // Transport and admin ports drawn together so they all differ.
  const int need = (config.transport == LocalTransport::kTcp ? n : 0) + (config.admin ? n : 0);
  const std::vector<int> ports = FreePorts(need);
  if (static_cast<int>(ports.size()) != need) return UnavailableError("could not find free ports");
  size_t next_port = 0;
  if (config.admin) {
    for (int i = 0; i < n; ++i)
      a.admins.push_back("127.0.0.1:" + std::to_string(ports[next_port++]));
  }
  for (int i = 0; i < n; ++i) {
    a.endpoints.push_back(config.transport == LocalTransport::kTcp
                              ? "tcp://127.0.0.1:" + std::to_string(ports[next_port++])
                              : "ipc://" +
                                    (dir / ("node-" + std::to_string(i) + ".sock")).string());
  }
  return a;
}

// The nodes' peer-link keys and admin token, written into `dir`, as their keys.
struct Secrets {
  NodeKeys keys;                       // every node's
  std::vector<std::string> node_keys;  // --secure: each node's own key, bound to its id
  std::string token_file;              // the admin token ("" without admin ports)
};

StatusOr<Secrets> SecretsFor(const LocalClusterOptions& config, const std::filesystem::path& dir) {
  Secrets s;
  if (config.secure) {
    MURMUR_ASSIGN_OR_RETURN(transport::CurveKeyPair key, transport::GenerateCurveKeyPair());
    const std::string path = (dir / "cluster.key").string();
    MURMUR_RETURN_IF_ERROR(WriteSecretFile(path, transport::FormatKeyFile(key), true));
    std::string allowlist;
    for (int i = 0; i < config.nodes; ++i) {
      MURMUR_ASSIGN_OR_RETURN(transport::CurveKeyPair node_key, transport::GenerateCurveKeyPair());
      s.node_keys.push_back((dir / ("node-" + std::to_string(i + 1) + ".key")).string());
      MURMUR_RETURN_IF_ERROR(
          WriteSecretFile(s.node_keys.back(), transport::FormatKeyFile(node_key), true));
      allowlist += std::to_string(i + 1) + " " + node_key.public_key + "\n";
    }
    const std::string allowed = (dir / "allowed.keys").string();
    MURMUR_RETURN_IF_ERROR(WriteSecretFile(allowed, allowlist, true));
    s.keys = {{"cluster_key_file", path}, {"allowed_keys_file", allowed}};
  } else {
    s.keys = {{"plaintext", "true"}};
  }
  if (!config.admin) return s;
  s.token_file = config.admin_token_file;
  if (s.token_file.empty()) {
    MURMUR_ASSIGN_OR_RETURN(std::string token, NewAdminToken());
    s.token_file = (dir / "admin.token").string();
    MURMUR_RETURN_IF_ERROR(WriteSecretFile(s.token_file, token + "\n", true));
  } else if (!std::filesystem::exists(s.token_file)) {
    // A path that does not exist yet: a fresh token there, which murmur ctl --token-file reads.
    MURMUR_ASSIGN_OR_RETURN(std::string token, NewAdminToken());
    MURMUR_RETURN_IF_ERROR(WriteSecretFile(s.token_file, token + "\n", true));
    std::fprintf(stderr, "murmur local: wrote a fresh admin token to %s\n", s.token_file.c_str());
  }
  s.keys["admin_token_file"] = s.token_file;
  return s;
}

// An --exec program runs in place of `murmur node`: its node's document, rank, report pipe and
// placement go into its environment, and bash runs it.
void AsProgram(Child& c, const std::string& document, const NodeKeys& keys, int i, int n,
               const std::string& exe, const std::string& program,
               const std::vector<std::string>& extra_env) {
  c.exec = true;
  c.env = {"MURMUR_PEER_CONFIG=" + document, "MURMUR_RANK=" + std::to_string(i),
           "MURMUR_WORLD_SIZE=" + std::to_string(n), "MURMUR_NODE_ID=" + std::to_string(i + 1),
           "MURMUR_REPORT_FD=3"};
  c.env.insert(c.env.end(), extra_env.begin(), extra_env.end());
  // Where the launcher placed it: the program puts its model there (api/peer.h checks).
  if (auto d = keys.find("device"); d != keys.end() && d->second != "auto") {
    c.env.push_back("MURMUR_DEVICE=" + d->second);
  }
  // This build's Python module (build/python next to build/murmur), when there is one.
  const std::filesystem::path python = std::filesystem::path(exe).parent_path() / "python";
  if (std::filesystem::exists(python / "murmur")) {
    const char* old = std::getenv("PYTHONPATH");
    c.env.push_back("PYTHONPATH=" + python.string() +
                    (old != nullptr && *old ? ":" + std::string(old) : ""));
  }
  // bash runs a single command by exec, so the program itself is the child murmur local
  // waits for and signals; a compound command's processes share its process group.
  c.argv = {"/bin/bash", "-c", program};
}

// `murmur node`'s keys for node i, before its mode's own.
NodeKeys CommonKeys(const LocalClusterOptions& config, int i, const std::string& endpoint,
                    const std::string& seeds, const std::vector<std::string>& admins,
                    const Secrets& secrets) {
  NodeKeys keys = secrets.keys;
  keys.insert({{"id", std::to_string(i + 1)},
               {"listen", endpoint},
               {"seeds", seeds},
               {"cluster", config.cluster},
               {"probe_interval_ms", std::to_string(config.probe_interval_ms)},
               {"probe_timeout_ms", std::to_string(config.probe_timeout_ms)},
               {"report", "json"},
               {"report_interval_ms", "100"},
               {"log_level", config.node_log_level}});
  if (config.admin) keys["admin"] = admins[static_cast<size_t>(i)];
  // A node writes its own series; an exec program's are the launcher's to write (above).
  if (!config.run_dir.empty() && config.exec.empty()) keys["run_dir"] = config.run_dir;
  if (!secrets.node_keys.empty()) keys["node_key_file"] = secrets.node_keys[static_cast<size_t>(i)];
  return keys;
}

// The environment variables of the node schema's keys: a node reads its document alone, so the
// launcher's own environment (MURMUR_BATCH_SIZE=..., already resolved into the document) does not
// reach it a second time.
std::vector<std::string> NodeKeyEnvironment() {
  std::vector<std::string> names;
  for (const auto& key : NodeSchema().keys()) {
    const std::string name = EnvName(key.name);
    if (std::getenv(name.c_str()) != nullptr) names.push_back(name);
  }
  if (std::getenv("MURMUR_CONFIG") != nullptr) names.push_back("MURMUR_CONFIG");
  return names;
}

}  // namespace

Status LocalCluster::Spawn() {
  const int n = config_.nodes;
  MURMUR_ASSIGN_OR_RETURN(const Addresses addresses, AddressesFor(config_, dir_));
  const std::vector<std::string>& endpoints = addresses.endpoints;
  const std::vector<std::string>& admins = addresses.admins;
  // Two seeds: any node can join while one of them is down.
  const std::string seeds = endpoints[0] + (n > 1 ? "," + endpoints[1] : "");
  char exe[4096];
  const ssize_t len = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (len <= 0) return InternalError("cannot find the murmur executable (/proc/self/exe)");
  exe[len] = '\0';
  MURMUR_ASSIGN_OR_RETURN(const Secrets secrets, SecretsFor(config_, dir_));
  std::fprintf(stderr, "murmur local: peer links %s\n",
               config_.secure ? "CURVE (a fresh cluster key, and a key per node bound to its id)"
               : config_.network != nullptr
                   ? "plaintext on the run's own network (--secure for CURVE)"
                   : "plaintext on loopback (--secure for CURVE)");
  std::string program = config_.exec;
  if (!program.empty()) {
    std::string interpreter;
    program = WithInterpreter(config_.exec, exe, &interpreter);
    if (!interpreter.empty()) {
      std::fprintf(stderr, "murmur local: the program's python is %s\n", interpreter.c_str());
    }
  }
  const std::filesystem::path logs =
      config_.run_dir.empty() ? dir_ : std::filesystem::path(config_.run_dir) / "logs";
  const std::vector<std::string> unset = NodeKeyEnvironment();
  for (int i = 0; i < n; ++i) {
    NodeKeys keys = CommonKeys(config_, i, endpoints[i], seeds, admins, secrets);
    if (extra_args_) {
      for (auto& [name, text] : extra_args_(i)) keys[name] = std::move(text);
    } else {
      keys["mode"] = "membership";
    }
    // The node's resolved keys, as one document it reads once.
    const std::string document = (dir_ / ("node-" + std::to_string(i + 1) + ".toml")).string();
    MURMUR_RETURN_IF_ERROR(WriteSecretFile(document, NodeSchema().Document(keys), false));
    Child c;
    if (!config_.exec.empty()) {
      AsProgram(c, document, keys, i, n, exe, program, config_.exec_env);
    } else {
      c.argv = {exe, "node", "--config", document};
      c.unset_env = unset;
    }
    c.log = (logs / ("node-" + std::to_string(i + 1) + ".log")).string();
    c.endpoint = endpoints[i];
    if (config_.network != nullptr) c.netns = config_.network->NamespacePath(i);
    if (config_.admin) c.admin = admins[i];
    MURMUR_RETURN_IF_ERROR(Start(c));
    children_.push_back(std::move(c));
  }
  if (config_.admin) {
    std::string list;
    for (int i = 0; i < n; ++i) list += (i ? ", " : "") + admins[i];
    std::fprintf(stderr,
                 "murmur local: admin ports (node 1..%d): %s; changes need the token in %s "
                 "(murmur ctl --token-file)\n",
                 n, list.c_str(), secrets.token_file.c_str());
  }
  if (!config_.prometheus_targets.empty()) return WriteTargets(admins);
  return OkStatus();
}

// Where an exec node's report lines arrive (its MURMUR_REPORT_FD).
constexpr int kExecReportFd = 3;

// A program of --exec leads its own process group, which gets the signal.
void Signal(const Child& c, int signal) { ::kill(c.exec ? -c.pid : c.pid, signal); }

Status LocalCluster::Start(Child& c) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return InternalError("pipe failed");
  int program_fds[2] = {-1, -1};
  if (c.exec && ::pipe2(program_fds, O_CLOEXEC) != 0) {
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    return InternalError("pipe failed");
  }
  const pid_t pid = ::fork();
  if (pid < 0) return InternalError("fork failed");
  if (pid == 0) {
    const int log_fd = ::open(c.log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (log_fd >= 0) ::dup2(log_fd, STDERR_FILENO);
    if (c.exec) {
      ::setpgid(0, 0);  // stopped and crashed as a group: nothing of it outlives the run
      // A program's stdout comes to murmur local, which relays it by node and appends it to
      // the log; its stderr goes to the log; murmur's report lines come on fd 3.
      ::dup2(program_fds[1], STDOUT_FILENO);
      if (pipe_fds[1] == kExecReportFd) {
        ::fcntl(kExecReportFd, F_SETFD, 0);  // dup2 onto itself would keep close-on-exec
      } else {
        ::dup2(pipe_fds[1], kExecReportFd);
      }
      for (const std::string& e : c.env) ::putenv(const_cast<char*>(e.c_str()));
    } else {
      ::dup2(pipe_fds[1], STDOUT_FILENO);
      for (const std::string& name : c.unset_env) ::unsetenv(name.c_str());
    }
    // Ctrl-C reaches the whole foreground group; the parent decides when children stop. If
    // the parent dies without stopping them (SIGKILL), they leave on their own.
    ::signal(SIGINT, SIG_IGN);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (!c.netns.empty()) {
      const int ns = ::open(c.netns.c_str(), O_RDONLY | O_CLOEXEC);
      if (ns < 0 || ::setns(ns, CLONE_NEWNET) != 0) {
        // No allocation after fork: the parts are written as they are.
        const char* parts[] = {"murmur local: cannot enter network namespace ", c.netns.c_str(),
                               ": ", std::strerror(errno), "\n"};
        for (const char* p : parts) (void)!::write(STDERR_FILENO, p, std::strlen(p));
        ::_exit(1);
      }
    }
    std::vector<char*> argv;
    for (auto& a : c.argv) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  if (c.exec) ::setpgid(pid, pid);  // also here: signals sent before the child ran it reach it
  if (c.exec) {
    ::close(program_fds[1]);
    ::fcntl(program_fds[0], F_SETFL, O_NONBLOCK);
    c.program_fd = program_fds[0];
    c.program_buffer.clear();
  }
  ::close(pipe_fds[1]);
  ::fcntl(pipe_fds[0], F_SETFL, O_NONBLOCK);
  c.pid = pid;
  c.out_fd = pipe_fds[0];
#ifdef SYS_pidfd_open
  c.exit_fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));  // close-on-exec by design
#endif
  c.exited = false;
  c.status = 0;
  c.heard = std::chrono::steady_clock::now();
  c.longest_silence = {};
  c.heard_once = false;
  return OkStatus();
}

void LocalCluster::ReadProgram(Child& c) {
  if (c.program_fd < 0) return;
  char buf[65536];
  ssize_t got;
  while ((got = ::read(c.program_fd, buf, sizeof(buf))) > 0) {
    c.program_buffer.append(buf, static_cast<size_t>(got));
  }
  const bool ended = got == 0;
  if (ended) {
    ::close(c.program_fd);
    c.program_fd = -1;
  }
  const size_t before = c.program_lines.size();
  size_t nl;
  while ((nl = c.program_buffer.find('\n')) != std::string::npos) {
    c.program_lines.push_back(c.program_buffer.substr(0, nl));
    c.program_buffer.erase(0, nl + 1);
  }
  if (ended && !c.program_buffer.empty()) {  // a last line without its newline
    c.program_lines.push_back(std::move(c.program_buffer));
    c.program_buffer.clear();
  }
  if (c.program_lines.size() == before) return;  // the log is opened only for new lines
  std::ofstream log(c.log, std::ios::app);
  for (size_t k = before; k < c.program_lines.size(); ++k) log << c.program_lines[k] << '\n';
}

std::vector<std::pair<size_t, std::string>> LocalCluster::TakeProgramLines() {
  std::vector<std::pair<size_t, std::string>> out;
  for (size_t i = 0; i < children_.size(); ++i) {
    for (std::string& line : children_[i].program_lines) out.emplace_back(i, std::move(line));
    children_[i].program_lines.clear();
  }
  return out;
}

std::vector<std::string> LastLines(const std::string& path, size_t n) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff from = std::max<std::streamoff>(0, size - 65536);
  in.seekg(from);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  if (from > 0 && !lines.empty()) lines.erase(lines.begin());  // a torn first line
  if (lines.size() > n) lines.erase(lines.begin(), lines.end() - static_cast<std::ptrdiff_t>(n));
  return lines;
}

std::string ExitText(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with code {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return fmt::format("killed by signal {} ({})", WTERMSIG(status), ::strsignal(WTERMSIG(status)));
  }
  return fmt::format("ended (wait status {})", status);
}

int FailureExitCode(const std::vector<NodeFailure>& failures) {
  if (failures.empty()) return 1;
  for (const NodeFailure& f : failures) {
    if (!WIFEXITED(f.status)) return 1;
    const int code = WEXITSTATUS(f.status);
    if (code != 2 && code != 126 && code != 127) return 1;
  }
  return 2;
}

void LocalCluster::Crash(size_t i) {
  Child& c = children_[i];
  if (c.exited) return;
  Signal(c, SIGKILL);
  Reaped(c, /*wait=*/true);
  if (c.out_fd >= 0) ::close(c.out_fd);
  c.out_fd = -1;
  c.buffer.clear();
  if (c.program_fd >= 0) ::close(c.program_fd);
  c.program_fd = -1;
  c.down = true;
  ++c.crashes;
}

Status LocalCluster::Restart(size_t i) {
  Child& c = children_[i];
  static_cast<ChildReport&>(c) = ChildReport{};  // what the crashed process said is void
  c.down = false;
  return Start(c);
}

Status LocalCluster::WriteTargets(const std::vector<std::string>& admins) const {
  if (admins.empty()) return InvalidArgumentError("--prometheus-targets needs --admin");
  nlohmann::json groups = nlohmann::json::array();
  for (size_t i = 0; i < admins.size(); ++i) {
    groups.push_back({{"targets", {admins[i]}},
                      {"labels",
                       {{"node", std::to_string(i + 1)},
                        {"mode", std::string(gossip::ModeName(config_.mode))}}}});
  }
  std::error_code ignored;  // a missing directory is made; a failure shows when writing
  std::filesystem::create_directories(
      std::filesystem::path(config_.prometheus_targets).parent_path(), ignored);
  const std::string tmp = config_.prometheus_targets + ".tmp";
  {
    std::ofstream out(tmp);
    out << groups.dump(2) << "\n";
    if (!out) return UnavailableError("cannot write '" + tmp + "'");
  }
  // Renamed into place: Prometheus never reads a half-written file.
  if (std::rename(tmp.c_str(), config_.prometheus_targets.c_str()) != 0) {
    return UnavailableError("cannot write '" + config_.prometheus_targets + "'");
  }
  return OkStatus();
}

void LocalCluster::Reaped(Child& c, bool wait) {
  if (wait) ::waitpid(c.pid, &c.status, 0);
  if (c.exit_fd >= 0) ::close(c.exit_fd);
  c.exit_fd = -1;
  c.exited = true;
}

void LocalCluster::Poll(std::chrono::milliseconds wait) {
  std::vector<pollfd> fds;
  for (auto& c : children_) {
    if (c.out_fd >= 0) fds.push_back({c.out_fd, POLLIN, 0});
    if (c.exit_fd >= 0) fds.push_back({c.exit_fd, POLLIN, 0});
    if (c.program_fd >= 0) fds.push_back({c.program_fd, POLLIN, 0});
  }
  ::poll(fds.data(), fds.size(), static_cast<int>(wait.count()));
  for (auto& c : children_) ReadProgram(c);
  for (auto& c : children_) {
    if (c.out_fd < 0) continue;
    char buf[65536];
    ssize_t got;
    while ((got = ::read(c.out_fd, buf, sizeof(buf))) > 0)
      c.buffer.append(buf, static_cast<size_t>(got));
    if (got == 0) {
      ::close(c.out_fd);
      c.out_fd = -1;
    }
    size_t nl;
    while ((nl = c.buffer.find('\n')) != std::string::npos) {
      const auto now = std::chrono::steady_clock::now();
      if (c.heard_once) c.longest_silence = std::max(c.longest_silence, now - c.heard);
      c.heard = now;
      c.heard_once = true;
      auto parsed = nlohmann::json::parse(c.buffer.substr(0, nl), nullptr, false);
      if (!parsed.is_discarded()) Absorb(c, parsed);
      if (c.exec && !config_.run_dir.empty() && parsed.is_object() && parsed.contains("id") &&
          parsed["id"].is_number_unsigned()) {
        if (!c.series) c.series = std::make_shared<SeriesWriter>(config_.run_dir);
        c.series->Write(parsed["id"].get<uint64_t>(), std::string_view(c.buffer).substr(0, nl),
                        c.straggle);
      }
      c.buffer.erase(0, nl + 1);
    }
  }
  for (auto& c : children_) {
    if (!c.exited && ::waitpid(c.pid, &c.status, WNOHANG) == c.pid) Reaped(c, /*wait=*/false);
  }
}

char LocalCluster::View(size_t i, size_t j) const {
  if (i == j) return '=';
  const auto& sees = children_[i].sees;
  auto it = sees.find(j + 1);
  return it == sees.end() ? '.' : it->second;
}

bool LocalCluster::AllSeeAllAlive() const {
  for (size_t i = 0; i < children_.size(); ++i) {
    if (children_[i].down) continue;  // crashed on purpose (--crash): neither seen nor seeing
    if (children_[i].exited) return false;
    for (size_t j = 0; j < children_.size(); ++j) {
      if (children_[j].down) continue;
      const char v = View(i, j);
      if (v != '=' && v != 'A') return false;
    }
  }
  return true;
}

std::string LocalCluster::Table(double t) const {
  std::string out = fmt::format(
      "murmur local: {} nodes, cluster '{}', {:.1f} s   (A alive, S suspect, D dead, L left, "
      ". unknown)\n",
      children_.size(), config_.cluster, t);
  out += fmt::format("{:>4}  {:<28} {:<{}}  {:>5}  {:>9}  {:>8}\n", "node", "endpoint", "sees",
                     std::max<size_t>(4, children_.size() * 2), "alive", "heartbeat", "rejected");
  for (size_t i = 0; i < children_.size(); ++i) {
    const Child& c = children_[i];
    std::string row;
    for (size_t j = 0; j < children_.size(); ++j) {
      row += View(i, j);
      row += ' ';
    }
    out += fmt::format("{:>4}  {:<28} {:<{}}  {:>5}  {:>9}  {:>8}{}\n", i + 1, c.endpoint, row,
                       std::max<size_t>(4, children_.size() * 2), c.alive, c.heartbeat, c.rejected,
                       c.exited ? "  (exited)" : "");
  }
  return out;
}

void LocalCluster::Terminate(size_t i) {
  if (!children_[i].exited) Signal(children_[i], SIGTERM);
}

void LocalCluster::Kill(size_t i) {
  if (!children_[i].exited) Signal(children_[i], SIGKILL);
}

int LocalCluster::Stop(std::chrono::milliseconds grace, const std::function<bool()>& waiting) {
  for (auto& c : children_) {
    if (!c.exited) Signal(c, SIGTERM);
  }
  const auto end = std::chrono::steady_clock::now() + grace;
  auto all_exited = [&] {
    return std::all_of(children_.begin(), children_.end(), [](const Child& c) { return c.exited; });
  };
  while (!all_exited() && std::chrono::steady_clock::now() < end) {
    Poll(std::chrono::milliseconds(20));
    if (waiting && !waiting()) break;
  }
  int killed = 0;
  for (auto& c : children_) {
    if (c.exited) continue;
    Signal(c, SIGKILL);
    Reaped(c, /*wait=*/true);
    ++killed;
  }
  for (auto& c : children_) {
    ReadProgram(c);  // what a program printed before it ended is relayed too
    if (c.out_fd >= 0) ::close(c.out_fd);
    c.out_fd = -1;
    if (c.program_fd >= 0) ::close(c.program_fd);
    c.program_fd = -1;
  }
  return killed;
}

}  // namespace murmur::node
