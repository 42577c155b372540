#pragma once
// How `murmur local`'s node processes reach each other on this machine.

#include <cstdint>

namespace murmur::node {

enum class LocalTransport : uint8_t {
  kTcp,  // loopback TCP on free ports (also what a network of namespaces carries)
  kIpc,  // Unix-domain sockets in the run's temporary directory
};

}  // namespace murmur::node
