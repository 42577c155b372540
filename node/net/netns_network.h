#pragma once
// A network of the run's own for `murmur local --network netns:...` (network_spec.h): a
// namespace per node behind a veth, joined by a bridge (or two, as racks, joined by a shaped
// link) in a namespace of its own, every node link shaped by tc tbf each way, and a veth from
// the host's namespace onto the bridge so this machine reaches the nodes' admin ports.
//
// Every name carries the creating process's pid (namespaces murmur-PID-…, the host link mmPIDh),
// so a leftover of a run that was killed is recognised (RemoveLeftovers) and two runs never
// share a name. Needs root and iproute2's ip and tc.

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "node/net/network_spec.h"

namespace murmur::node::net {

// OK when this process can build a network: root, and ip and tc on the PATH;
// kFailedPrecondition saying what is missing otherwise.
Status CheckCanBuild();

// Removes the namespaces of runs whose process is gone (a killed run); returns their names.
std::vector<std::string> RemoveLeftovers();

// The names of the namespaces under /run/netns that start with `prefix` ("murmur-": every
// run's; "murmur-PID-": one run's), sorted.
std::vector<std::string> ListNamespaces(const std::string& prefix);

class NetnsNetwork {
 public:
  // Builds the network for `nodes` nodes; on failure nothing is left behind.
  static StatusOr<std::unique_ptr<NetnsNetwork>> Create(const NetworkSpec& spec, int nodes);
  ~NetnsNetwork();  // Remove()
  NetnsNetwork(const NetnsNetwork&) = delete;
  NetnsNetwork& operator=(const NetnsNetwork&) = delete;

  // Node i's (0-based) IPv4 address and the file of its namespace (setns(2) takes it).
  const std::string& address(int i) const { return addresses_[static_cast<size_t>(i)]; }
  std::string NamespacePath(int i) const;
  // This machine's address on the nodes' network.
  const std::string& host_address() const { return host_address_; }
  const std::string& tag() const { return tag_; }
  // Deletes every namespace (their links go with them). Idempotent.
  void Remove();

 private:
  NetnsNetwork(NetworkSpec spec, int nodes);
  Status Build();
  Status Shape(const std::string& ns, const std::string& dev, uint64_t bps) const;

  const NetworkSpec spec_;
  const int nodes_;
  std::string tag_;  // murmur-PID
  std::string bridge_ns_;
  std::vector<std::string> namespaces_;  // made so far, removed by Remove
  std::vector<std::string> addresses_;
  std::string host_address_;
  std::string host_dev_;  // the host's end of its link, once made
  int subnet_ = 0;        // 10.213.SUBNET.0/24
};

}  // namespace murmur::node::net
