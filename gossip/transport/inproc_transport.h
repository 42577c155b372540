#pragma once
// The in-process transport (transport.h) for tests: endpoints are names in an InProcNetwork
// shared by the transports of one test. Same contract as ZeroMQ's, including the bounded send
// queue for a peer that is not (yet, or any more) bound; queued messages are delivered when a
// transport binds that endpoint again.

#include <memory>
#include <string>

#include "base/status.h"
#include "gossip/transport/transport.h"

namespace murmur::transport {

class InProcNetwork;

// A fresh network; keep it alive as long as its transports.
std::shared_ptr<InProcNetwork> MakeInProcNetwork();

// Binds options.listen in `network` ("inproc://name"; "...:0" or a trailing "*" picks a unique
// name). kUnavailable when the name is taken (as ZeroMQ for an address in use).
StatusOr<std::unique_ptr<Transport>> CreateInProcTransport(std::shared_ptr<InProcNetwork> network,
                                                           const TransportOptions& options);

}  // namespace murmur::transport
