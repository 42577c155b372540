#pragma once
// The admin HTTP port of a node (cpp-httplib, its own thread):
//   GET    /metrics    Prometheus text exposition
//   GET    /healthz    200 once the node has joined its cluster, 503 with the reason before
//   GET    /status     JSON: id, mode, step, peers and their states, the injection in force
//   GET    /straggler  the injection in force (JSON)
//   PUT    /straggler  a new injection, as JSON (see ParseStraggleRequest); 200 with the result
//   DELETE /straggler  stop injecting
// PUT and DELETE need "Authorization: Bearer TOKEN" with the node's token (401 without it, 403
// with another; both counted as murmur_rejected_messages_total{reason="admin_unauthorized"});
// a node started without a token refuses them all (403). GETs stay open for Prometheus.
// Connections are bounded in time (read and keep-alive timeouts of a second or two), so idle
// or trickling clients cannot hold the workers.
// Bad input gets a 4xx whose JSON body says what was wrong ({"error": ...}) and changes nothing:
// an unknown path (404), a method a path does not take (405), a body that is not JSON, an unknown
// setting or a value out of range (400), a body over 64 KiB (413).
// Thread safety: Start/Stop from one thread; handlers run on the server's thread.

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/status.h"
#include "node/peer/straggler.h"
#include "node/observe/telemetry.h"

namespace murmur::node {

struct StraggleRequest {
  StragglerOptions options;
  Duration for_duration{0};  // 0: until changed
};

// A PUT /straggler body: a JSON object with either "spec" (the --straggle syntax, e.g.
// "slowdown=4,send_delay=20ms") or the settings as keys — "slowdown" (number >= 1), "delay",
// "exp", "send_delay" (durations: "20ms" or a number of seconds), "exp_slowdown" (number),
// "pause" ("A..B"), "drop" (0 <= p < 1), "seed" (integer) — plus an optional "for" (a duration
// after which the injection ends by itself). kInvalidArgument naming the key and the problem.
StatusOr<StraggleRequest> ParseStraggleRequest(std::string_view body);

// "HOST:PORT" (port 0: any free one) -> host and port; kInvalidArgument otherwise.
StatusOr<std::pair<std::string, int>> ParseHostPort(std::string_view address);

class AdminServer {
 public:
  // Mode rules for a run-time injection beyond ParseStraggle's ranges (e.g. no pause in the
  // synchronous modes); OkStatus to accept.
  using Validator = std::function<Status(const StragglerOptions&)>;

  // Binds `address` ("127.0.0.1:9100", "0.0.0.0:0") and starts serving. kInvalidArgument for a
  // malformed address, kUnavailable when it cannot be bound.
  static StatusOr<std::unique_ptr<AdminServer>> Start(const std::string& address,
                                                      NodeTelemetry& telemetry,
                                                      Validator validate = nullptr,
                                                      std::string token = "");
  ~AdminServer();  // stops

  int port() const { return port_; }
  const std::string& host() const { return host_; }

 private:
  struct Impl;
  AdminServer() = default;
  std::unique_ptr<Impl> impl_;
  std::string host_;
  int port_ = 0;
};

}  // namespace murmur::node
