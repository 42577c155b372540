#pragma once
// The ZeroMQ transport (transport.h): one ROUTER socket bound at the listen endpoint receives
// from every peer; two DEALERs per peer endpoint send to it, one for membership messages and
// one for the rest (transport.h: lanes), each made on first use. All sockets belong to one I/O
// thread; Send() hands the message over through a queue and an eventfd wake-up, so callers never
// touch a socket. Payload frames are handed to ZeroMQ without copying (the Frame's owner is kept
// alive until the socket is done with it). DEALERs use ZMQ_IMMEDIATE, so nothing piles up inside
// ZeroMQ for a peer that is not connected: the backlog stays in our SendQueue, where the drop
// policy applies. Reconnection uses ZeroMQ's exponential backoff (reconnect_min .. max).

#include <memory>

#include "base/status.h"
#include "gossip/transport/transport.h"

namespace murmur::transport {

// Binds options.listen. kInvalidArgument for a malformed endpoint, kUnavailable when the address
// cannot be bound (in use, not local).
StatusOr<std::unique_ptr<Transport>> CreateZmqTransport(const TransportOptions& options);

}  // namespace murmur::transport
