#include "node/net/netns_network.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

namespace murmur::node::net {
namespace {

constexpr const char* kNetnsDir = "/run/netns";

// Runs argv[0] (looked up on the PATH) with `argv`; kInternal with its stderr when it fails.
Status Run(const std::vector<std::string>& argv) {
  int err[2];
  if (::pipe2(err, O_CLOEXEC) != 0) return InternalError("pipe failed");
  std::vector<char*> args;  // made before fork: the child allocates nothing
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return InternalError("fork failed");
  if (pid == 0) {
    ::dup2(err[1], STDERR_FILENO);
    ::dup2(err[1], STDOUT_FILENO);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(err[1]);
  std::string out;
  char buf[4096];
  ssize_t got;
  while ((got = ::read(err[0], buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(got));
  ::close(err[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return OkStatus();
  std::string cmd;
  for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return InternalError(fmt::format("`{}` failed: {}", cmd, out.empty() ? "no output" : out));
}

bool OnPath(const std::string& tool) {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/sbin:/usr/bin:/sbin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string file = dirs.substr(start, end - start) + "/" + tool;
    if (::access(file.c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

// Whether `pid` is a running murmur (a pid reused by another program is not).
bool MurmurAlive(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  std::ifstream comm(fmt::format("/proc/{}/comm", pid));
  std::string name;
  std::getline(comm, name);
  return name == "murmur";
}

// The third octets of 10.213.X.Y addresses this machine's namespace already has.
std::set<int> SubnetsInUse() {
  std::set<int> used;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return used;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    const uint32_t ip = ntohl(reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr);
    if ((ip >> 16) == ((10u << 8) | 213u)) used.insert(static_cast<int>((ip >> 8) & 0xff));
  }
  ::freeifaddrs(list);
  return used;
}

}  // namespace

Status CheckCanBuild() {
  if (::geteuid() != 0) {
    return FailedPreconditionError(
        "a network of namespaces needs root (it creates namespaces, veths, a bridge and tc "
        "qdiscs); run as root, or leave --network out for loopback");
  }
  for (const char* tool : {"ip", "tc"}) {
    if (!OnPath(tool)) {
      return FailedPreconditionError(fmt::format(
          "a network of namespaces needs `{}` (Debian's iproute2; ops/install-deps.sh installs it)",
          tool));
    }
  }
  return OkStatus();
}

std::vector<std::string> ListNamespaces(const std::string& prefix) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(kNetnsDir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(prefix)) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> RemoveLeftovers() {
  static const std::regex kOurs("murmur-([0-9]+)-.*");
  std::vector<std::string> removed;
  for (const std::string& name : ListNamespaces("murmur-")) {
    std::smatch m;
    if (!std::regex_match(name, m, kOurs)) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(m[1]));
    if (pid == ::getpid() || MurmurAlive(pid)) continue;
    // The host's end first, at once (a namespace's devices go later, asynchronously); it may
    // already be gone with an earlier leftover of the same run.
    if (name.ends_with("-br")) (void)Run({"ip", "link", "del", fmt::format("mm{}h", pid)});
    if (Run({"ip", "netns", "del", name}).ok()) removed.push_back(name);
  }
  return removed;
}

NetnsNetwork::NetnsNetwork(NetworkSpec spec, int nodes)
    : spec_(std::move(spec)), nodes_(nodes), tag_(fmt::format("murmur-{}", ::getpid())) {}

NetnsNetwork::~NetnsNetwork() { Remove(); }

StatusOr<std::unique_ptr<NetnsNetwork>> NetnsNetwork::Create(const NetworkSpec& spec, int nodes) {
  MURMUR_RETURN_IF_ERROR(CheckCanBuild());
  if (nodes < 1 || nodes > 250) {
    return InvalidArgumentError(
        fmt::format("a network of namespaces holds 1 to 250 nodes, not {}", nodes));
  }
  std::unique_ptr<NetnsNetwork> net(new NetnsNetwork(spec, nodes));
  if (Status s = net->Build(); !s.ok()) {
    net->Remove();
    return s;
  }
  return net;
}

std::string NetnsNetwork::NamespacePath(int i) const {
  return fmt::format("{}/{}-n{}", kNetnsDir, tag_, i + 1);
}

Status NetnsNetwork::Shape(const std::string& ns, const std::string& dev, uint64_t bps) const {
  const uint64_t burst = spec_.burst_bytes > 0 ? spec_.burst_bytes : BurstFor(bps);
  return Run({"tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "tbf", "rate",
              fmt::format("{}bit", bps), "burst", std::to_string(burst), "latency", "200ms"});
}

Status NetnsNetwork::Build() {
  const std::set<int> used = SubnetsInUse();
  for (int k = 0; k < 254 && subnet_ == 0; ++k) {
    const int candidate = 1 + (::getpid() + k) % 254;
    if (used.count(candidate) == 0) subnet_ = candidate;
  }
  if (subnet_ == 0) return UnavailableError("every 10.213.X.0/24 subnet is in use on this machine");
  bridge_ns_ = tag_ + "-br";
  MURMUR_RETURN_IF_ERROR(Run({"ip", "netns", "add", bridge_ns_}));
  namespaces_.push_back(bridge_ns_);
  const std::vector<std::string> bridges = spec_.topology == Topology::kTwoRacks
                                               ? std::vector<std::string>{"bra", "brb"}
                                               : std::vector<std::string>{"bra"};
  for (const auto& br : bridges) {
    MURMUR_RETURN_IF_ERROR(Run({"ip", "-n", bridge_ns_, "link", "add", br, "type", "bridge"}));
    MURMUR_RETURN_IF_ERROR(Run({"ip", "-n", bridge_ns_, "link", "set", br, "up"}));
  }
  if (spec_.topology == Topology::kTwoRacks) {  // the uplink, shaped both ways
    const uint64_t uplink = spec_.uplink_bps > 0 ? spec_.uplink_bps : spec_.rate_bps;
    MURMUR_RETURN_IF_ERROR(
        Run({"ip", "-n", bridge_ns_, "link", "add", "xa", "type", "veth", "peer", "name", "xb"}));
    MURMUR_RETURN_IF_ERROR(
        Run({"ip", "-n", bridge_ns_, "link", "set", "xa", "master", "bra", "up"}));
    MURMUR_RETURN_IF_ERROR(
        Run({"ip", "-n", bridge_ns_, "link", "set", "xb", "master", "brb", "up"}));
    MURMUR_RETURN_IF_ERROR(Shape(bridge_ns_, "xa", uplink));
    MURMUR_RETURN_IF_ERROR(Shape(bridge_ns_, "xb", uplink));
  }
  // The host's link (unshaped on its side): admin ports and Prometheus reach the nodes.
  const std::string host_dev = fmt::format("mm{}h", ::getpid());
  host_address_ = fmt::format("10.213.{}.254", subnet_);
  MURMUR_RETURN_IF_ERROR(Run(
      {"ip", "link", "add", host_dev, "type", "veth", "peer", "name", "hp", "netns", bridge_ns_}));
  host_dev_ = host_dev;
  MURMUR_RETURN_IF_ERROR(Run({"ip", "addr", "add", host_address_ + "/24", "dev", host_dev}));
  MURMUR_RETURN_IF_ERROR(Run({"ip", "link", "set", host_dev, "up"}));
  MURMUR_RETURN_IF_ERROR(Run({"ip", "-n", bridge_ns_, "link", "set", "hp", "master", "bra", "up"}));
  const int first_rack = (nodes_ + 1) / 2;
  for (int i = 0; i < nodes_; ++i) {
    const std::string ns = fmt::format("{}-n{}", tag_, i + 1);
    const std::string port = fmt::format("p{}", i + 1);
    const std::string address = fmt::format("10.213.{}.{}", subnet_, i + 1);
    const uint64_t bps = spec_.RateOf(i + 1);
    MURMUR_RETURN_IF_ERROR(Run({"ip", "netns", "add", ns}));
    namespaces_.push_back(ns);
    MURMUR_RETURN_IF_ERROR(Run({"ip", "-n", ns, "link", "set", "lo", "up"}));
    MURMUR_RETURN_IF_ERROR(Run({"ip", "-n", ns, "link", "add", "eth0", "type", "veth", "peer",
                                "name", port, "netns", bridge_ns_}));
    MURMUR_RETURN_IF_ERROR(Run({"ip", "-n", ns, "addr", "add", address + "/24", "dev", "eth0"}));
    MURMUR_RETURN_IF_ERROR(Run({"ip", "-n", ns, "link", "set", "eth0", "up"}));
    const std::string& br =
        spec_.topology == Topology::kTwoRacks && i >= first_rack ? bridges[1] : bridges[0];
    MURMUR_RETURN_IF_ERROR(Run({"ip", "-n", bridge_ns_, "link", "set", port, "master", br, "up"}));
    MURMUR_RETURN_IF_ERROR(Shape(ns, "eth0", bps));        // what the node sends
    MURMUR_RETURN_IF_ERROR(Shape(bridge_ns_, port, bps));  // what it receives
    addresses_.push_back(address);
  }
  return OkStatus();
}

void NetnsNetwork::Remove() {
  // A namespace's devices go when the kernel gets to it, after `ip netns del` returns: the host's
  // end is deleted first, at once, so nothing of the run is seen after Remove.
  if (!host_dev_.empty()) {
    if (Status s = Run({"ip", "link", "del", host_dev_}); !s.ok()) {
      std::fprintf(stderr, "murmur: could not remove link %s: %s\n", host_dev_.c_str(),
                   s.ToString().c_str());
    }
    host_dev_.clear();
  }
  for (auto it = namespaces_.rbegin(); it != namespaces_.rend(); ++it) {
    if (Status s = Run({"ip", "netns", "del", *it}); !s.ok()) {
      std::fprintf(stderr, "murmur: could not remove network namespace %s: %s\n", it->c_str(),
                   s.ToString().c_str());
    }
  }
  namespaces_.clear();
}

}  // namespace murmur::node::net
