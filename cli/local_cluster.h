#pragma once
// The processes of `murmur local`: N `murmur node` children on loopback (TCP on free ports or
// Unix sockets) or each in its namespace of a shaped network (net/netns_network.h), their report
// lines read as they come, and a clean stop (SIGTERM: each node leaves gracefully; SIGKILL after a
// grace period).

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "cli/local_transport.h"
#include "cli/run_dir.h"
#include "gossip/mode.h"
#include "node/driver/node_report.h"
#include "node/net/netns_network.h"

namespace murmur::node {

// A node's configuration keys (the node schema's names: node/config/node_config.h) with their
// resolved text. `murmur local` writes each node's keys as one document, which the node reads
// with --config, or the library (api/peer_options.h) from MURMUR_PEER_CONFIG.
using NodeKeys = std::map<std::string, std::string>;

struct LocalClusterOptions {
  int nodes = 1;
  gossip::Mode mode = gossip::Mode::kGossip;  // the Prometheus targets' label
  std::string cluster = "local";
  LocalTransport transport = LocalTransport::kTcp;
  int probe_interval_ms = 200;
  int probe_timeout_ms = 80;
  std::string node_log_level = "info";
  bool admin = true;
  std::string admin_token_file;    // "" : a fresh token in the run's directory
  bool secure = false;             // CURVE with a fresh cluster key; else plaintext
  std::string prometheus_targets;  // file_sd file to write ("" none)
  std::string run_dir;             // "": none; else the nodes' logs and series go there (run_dir.h)
  // Non-empty: each node runs this command (bash -c, in a process group of its own, which
  // signals reach) instead of `murmur node`: a program on the library (api/peer.h), with its
  // node's keys in the document MURMUR_PEER_CONFIG names, its rank in MURMUR_RANK and
  // MURMUR_WORLD_SIZE, and its report lines on file descriptor 3 (MURMUR_REPORT_FD).
  std::string exec;
  // NAME=VALUE added to every exec program's environment (the thread count, the launcher's
  // defaults: local_run.cc).
  std::vector<std::string> exec_env;
  // Not null: each node runs in its namespace of this network (its address, fixed ports) instead
  // of on loopback; it outlives the cluster.
  const net::NetnsNetwork* network = nullptr;
};

// One `murmur node` process of the local cluster, with what its report lines said.
struct Child : ChildReport {
  pid_t pid = -1;
  int out_fd = -1;
  // A pidfd of the process (Linux 5.3+): readable once it has exited, so Poll wakes for an exit
  // as for output; -1 where the kernel has none (Poll then notices exits at its next return).
  int exit_fd = -1;
  std::string endpoint;
  std::string buffer;
  std::string straggle;           // injected into this node
  std::string admin;              // HOST:PORT of its admin port ("" without)
  std::string netns;              // the file of the network namespace it runs in ("": this one's)
  std::vector<std::string> argv;  // how it was started (a restart uses the same)
  std::vector<std::string> env;   // NAME=VALUE added to its environment (exec nodes)
  std::vector<std::string> unset_env;  // names removed from it (murmur node: its document alone)
  bool exec = false;              // a user's program: report lines on fd 3, stdout relayed
  // exec: the program's stdout (a pipe), its partial last line, and the complete lines not yet
  // taken by TakeProgramLines (each is also appended to the log).
  int program_fd = -1;
  std::string program_buffer;
  std::vector<std::string> program_lines;
  std::string log;
  // exec with a run directory: its report lines into series/node-K.jsonl (run_dir.h), as
  // `murmur node --run-dir` writes its own (a program on the library has no run_dir key).
  std::shared_ptr<SeriesWriter> series;
  bool exited = false;
  int status = 0;
  // When it last wrote a report line (or started), and its longest silence between two so far.
  std::chrono::steady_clock::time_point heard{};
  std::chrono::steady_clock::duration longest_silence{};
  bool heard_once = false;  // a report line since it (re)started
  int crashes = 0;    // injected crashes (--crash)
  bool down = false;  // crashed on purpose and not (yet) restarted
};

class LocalCluster {
 public:
  // `extra_keys` gives node i's keys beyond the common ones (none: a membership node).
  LocalCluster(LocalClusterOptions config, std::filesystem::path dir,
               std::function<NodeKeys(int)> extra_args = nullptr)
      : config_(std::move(config)), dir_(std::move(dir)), extra_args_(std::move(extra_args)) {}

  Status Spawn();

  // Prometheus file_sd: one target group per node, labelled with its index and the mode.
  Status WriteTargets(const std::vector<std::string>& admins) const;

  // Reads whatever the children printed and reaps those that exited, waiting up to `wait` for
  // either.
  void Poll(std::chrono::milliseconds wait);

  // node i's view of node j: 'A', 'S', 'D', 'L', '.' (unknown) or '=' (itself).
  char View(size_t i, size_t j) const;
  bool AllSeeAllAlive() const;

  std::string Table(double t) const;

  // An injected crash: SIGKILL node index `i` (it cannot leave; its peers must detect it).
  void Crash(size_t i);
  // Starts a crashed node again with its arguments (its log is appended to).
  Status Restart(size_t i);

  // SIGTERM (each node leaves gracefully), then SIGKILL after `grace`, or as soon as `waiting`
  // (called between polls: relay output there) returns false. Returns nodes that had to be
  // killed.
  int Stop(std::chrono::milliseconds grace, const std::function<bool()>& waiting = {});
  // SIGTERM to node index `i` alone: it ends its run, reports and leaves.
  void Terminate(size_t i);
  // SIGKILL to node index `i` (a stopped process holds SIGTERM until it runs again); Poll reaps it.
  void Kill(size_t i);

  // The complete stdout lines of the --exec programs since the last call: (node index, line).
  std::vector<std::pair<size_t, std::string>> TakeProgramLines();

  const std::vector<Child>& children() const { return children_; }
  std::vector<Child>& children() { return children_; }

 private:
  Status Start(Child& c);
  // Reads what an exec program printed: complete lines into program_lines (and its log).
  void ReadProgram(Child& c);
  // Reaps `c` (which must have exited or been killed): its status, and its pidfd closed.
  void Reaped(Child& c, bool wait);

  const LocalClusterOptions config_;
  std::filesystem::path dir_;
  std::function<NodeKeys(int)> extra_args_;
  std::vector<Child> children_;
};

// The last `n` non-empty lines of the file at `path` (its last 64 KB), oldest first.
std::vector<std::string> LastLines(const std::string& path, size_t n);

// What became of a child that is no longer running, from its wait status: "exited with code 2",
// "killed by signal 9 (Killed)".
std::string ExitText(int status);

// A node that ended with a failure during a run (murmur local shows it when it happens).
struct NodeFailure {
  size_t index = 0;
  int status = 0;  // its wait status
  std::vector<std::string> last_lines;
};

// 2 when every node that failed refused what it was given (exit 2: a bad flag, missing data, a
// port in use) or its --exec command could not run (126, 127): the user's to fix, as for
// `murmur node`; 1 otherwise (and for a run that failed with no node failing).
int FailureExitCode(const std::vector<NodeFailure>& failures);

}  // namespace murmur::node
