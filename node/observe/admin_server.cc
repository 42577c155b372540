#include "node/observe/admin_server.h"

#include <fmt/format.h>
#include <httplib.h>

#include <cmath>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "base/log.h"
#include "base/spec.h"

namespace murmur::node {
namespace {

constexpr size_t kMaxBody = 64 * 1024;
// More workers than the idle connections the tests hold open (200): a connection keeps its
// worker until the read timeout, or the keep-alive wait and then the read timeout (about 3 s),
// so with 64 workers 200 idle connections would delay /healthz by seconds. They are started as
// connections need them (WorkerPool): 256 threads up front would cost every node CPU at start.
constexpr size_t kWorkers = 256;
constexpr std::string_view kPaths = "/metrics, /healthz, /status, /straggler";

// httplib's task queue with workers started on demand, up to `max`, and kept: a connection is
// taken by an idle worker when there is one, else by a new one while fewer than `max` run, else it
// waits for the first worker free.
class WorkerPool final : public httplib::TaskQueue {
 public:
  explicit WorkerPool(size_t max) : max_(max) {}
  ~WorkerPool() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    jobs_.push_back(std::move(fn));
    // Idle workers that are already woken are still counted idle until they take a job, so a
    // job beyond them needs a worker of its own.
    if (jobs_.size() > idle_ && threads_.size() < max_) {
      threads_.emplace_back([this] { Work(); });
    } else {
      ready_.notify_one();
    }
  }

  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_ && threads_.empty()) return;
      stopping_ = true;
    }
    ready_.notify_all();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

 private:
  void Work() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      ++idle_;
      ready_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      --idle_;
      if (jobs_.empty()) return;  // stopping, nothing left
      std::function<void()> fn = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      fn();
      lock.lock();
    }
  }

  const size_t max_;
  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  bool stopping_ = false;
};

// A duration setting: "20ms" / "1.5s" / "40us", or a number of seconds.
StatusOr<std::string> DurationSetting(const std::string& key, const nlohmann::json& v) {
  if (v.is_string()) {
    auto d = ParseDuration(v.get<std::string>());
    if (!d.ok()) return InvalidArgumentError(fmt::format("{}: {}", key, d.status().message()));
    return v.get<std::string>();
  }
  if (v.is_number()) {
    const double s = v.get<double>();
    if (!std::isfinite(s) || s < 0 || s > 86400) {
      return InvalidArgumentError(fmt::format("{}: {} seconds is outside [0, 86400]", key, s));
    }
    return fmt::format("{}us", std::llround(s * 1e6));
  }
  return InvalidArgumentError(fmt::format(
      "{}: expected a duration such as \"20ms\" or a number of seconds, got {}", key, v.dump()));
}

StatusOr<std::string> NumberSetting(const std::string& key, const nlohmann::json& v) {
  if (!v.is_number()) {
    return InvalidArgumentError(fmt::format("{}: expected a number, got {}", key, v.dump()));
  }
  return fmt::format("{}", v.get<double>());
}

std::string ErrorJson(std::string_view message) {
  return nlohmann::json{{"error", std::string(message)}}.dump() + "\n";
}

}  // namespace

StatusOr<StraggleRequest> ParseStraggleRequest(std::string_view body) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return InvalidArgumentError("the body is not valid JSON; send an object such as "
                                "{\"slowdown\": 4, \"for\": \"60s\"}");
  }
  if (!j.is_object()) {
    return InvalidArgumentError("the body must be a JSON object such as {\"slowdown\": 4}");
  }
  StraggleRequest request;
  std::string spec;
  auto add = [&](const std::string& key, const std::string& value) {
    spec += (spec.empty() ? "" : ",") + key + "=" + value;
  };
  bool has_spec = false, has_keys = false;
  for (const auto& [key, value] : j.items()) {
    if (key == "for") {
      MURMUR_ASSIGN_OR_RETURN(std::string text, DurationSetting("for", value));
      MURMUR_ASSIGN_OR_RETURN(request.for_duration, ParseDuration(text));
      if (request.for_duration.count() <= 0) {
        return InvalidArgumentError("for: must be above 0 (leave it out to keep the injection "
                                    "until changed)");
      }
    } else if (key == "spec") {
      if (!value.is_string()) return InvalidArgumentError("spec: expected a string like \"slowdown=4\"");
      has_spec = true;
      spec = value.get<std::string>() + (spec.empty() ? "" : "," + spec);
    } else if (key == "delay" || key == "exp" || key == "send_delay") {
      MURMUR_ASSIGN_OR_RETURN(std::string text, DurationSetting(key, value));
      add(key, text);
      has_keys = true;
    } else if (key == "slowdown" || key == "exp_slowdown" || key == "drop" || key == "seed") {
      MURMUR_ASSIGN_OR_RETURN(std::string text, NumberSetting(key, value));
      add(key, text);
      has_keys = true;
    } else if (key == "pause") {
      if (!value.is_string()) return InvalidArgumentError("pause: expected \"FROM..TO\" steps");
      add(key, value.get<std::string>());
      has_keys = true;
    } else {
      return InvalidArgumentError(fmt::format(
          "unknown setting '{}' (slowdown, delay, exp, exp_slowdown, pause, send_delay, drop, "
          "seed, spec, for)", key));
    }
  }
  if (has_spec && has_keys) {
    return InvalidArgumentError("give either \"spec\" or the settings as keys, not both");
  }
  auto options = ParseStraggle(spec);
  if (!options.ok()) return options.status();
  if (!options->active()) {
    return InvalidArgumentError("nothing to inject: give at least one setting (DELETE "
                                "/straggler stops an injection)");
  }
  request.options = *options;
  return request;
}

StatusOr<std::pair<std::string, int>> ParseHostPort(std::string_view address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return InvalidArgumentError(fmt::format("admin address '{}' must be HOST:PORT", address));
  }
  const std::string_view port_text = address.substr(colon + 1);
  const StatusOr<int> port = ParseNumber<int>(port_text, "port");
  if (!port.ok() || *port < 0 || *port > 65535) {
    return InvalidArgumentError(fmt::format("admin address '{}': port must be 0 to 65535", address));
  }
  return std::make_pair(std::string(address.substr(0, colon)), *port);
}

struct AdminServer::Impl {
  httplib::Server server;
  std::thread thread;
};

namespace {

void JsonReply(httplib::Response& res, int status, const std::string& body) {
  res.status = status;
  res.set_content(body, "application/json");
}

void ErrorReply(httplib::Response& res, int status, std::string_view message) {
  JsonReply(res, status, ErrorJson(message));
}

// Mutations need the bearer token: false (and the refusal written, and counted) when refused.
struct BearerCheck {
  NodeTelemetry* telemetry;
  std::string token;

  bool operator()(const httplib::Request& req, httplib::Response& res) const {
    if (token.empty()) {
      telemetry->CountRejected("admin_unauthorized");
      ErrorReply(res, 403,
                 "this node has no admin token, so it takes no changes (start it with "
                 "--admin-token-file)");
      return false;
    }
    const std::string header = req.get_header_value("Authorization");
    if (!header.starts_with("Bearer ")) {
      telemetry->CountRejected("admin_unauthorized");
      res.set_header("WWW-Authenticate", "Bearer");
      ErrorReply(res, 401, "changes need 'Authorization: Bearer TOKEN' (murmur ctl --token-file)");
      return false;
    }
    const std::string_view given = std::string_view(header).substr(7);
    // Compared in time independent of where they differ.
    unsigned char diff = given.size() == token.size() ? 0 : 1;
    for (size_t i = 0; i < token.size(); ++i) {
      diff |= static_cast<unsigned char>(token[i] ^ (i < given.size() ? given[i] : 0));
    }
    if (diff != 0) {
      telemetry->CountRejected("admin_unauthorized");
      ErrorReply(res, 403, "the bearer token is not this node's");
      return false;
    }
    return true;
  }
};

// Workers for several slow clients at once; each connection is bounded in time, so idle
// connections (slowloris) free their worker within a couple of seconds.
void SetLimits(httplib::Server& s) {
  s.new_task_queue = [] { return new WorkerPool(kWorkers); };
  s.set_keep_alive_timeout(2);
  s.set_keep_alive_max_count(100);
  s.set_payload_max_length(kMaxBody);
  // SO_REUSEADDR only: the library's default adds SO_REUSEPORT, which would let a second node
  // bind the same admin port and share its traffic instead of failing.
  s.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, reinterpret_cast<void*>(&yes), sizeof(yes));
  });
  s.set_read_timeout(1, 0);
  s.set_write_timeout(5, 0);
}

// GET /metrics, /healthz, /status, /straggler.
void AddReads(httplib::Server& s, NodeTelemetry* t) {
  s.Get("/metrics", [t](const httplib::Request&, httplib::Response& res) {
    res.set_content(t->Exposition(), "text/plain; version=0.0.4; charset=utf-8");
  });
  s.Get("/healthz", [t](const httplib::Request&, httplib::Response& res) {
    const NodeHealth h = t->Health();
    res.status = h.ready ? 200 : 503;
    res.set_content((h.ready ? "ok: " : "not ready: ") + h.detail + "\n", "text/plain");
  });
  s.Get("/status", [t](const httplib::Request&, httplib::Response& res) {
    JsonReply(res, 200, t->StatusJson() + "\n");
  });
  s.Get("/straggler", [t](const httplib::Request&, httplib::Response& res) {
    JsonReply(res, 200, StragglerStateJson(t->straggler().Current()).dump() + "\n");
  });
}

// PUT and DELETE /straggler, each behind the bearer token.
void AddStragglerControl(httplib::Server& s, NodeTelemetry* t, AdminServer::Validator validate,
                         const BearerCheck& authorized) {
  s.Put("/straggler", [t, validate, authorized](const httplib::Request& req,
                                                httplib::Response& res) {
    if (!authorized(req, res)) return;
    auto request = ParseStraggleRequest(req.body);
    if (request.ok() && validate) {
      if (Status v = validate(request->options); !v.ok()) request = v;
    }
    if (!request.ok()) {
      MURMUR_LOG_WARN("admin: PUT /straggler refused: {}", request.status().message());
      return ErrorReply(res, 400, request.status().message());
    }
    t->straggler().Set(request->options, request->for_duration, "admin");
    MURMUR_LOG_INFO("admin: straggler injection set to '{}'{}", StraggleSpec(request->options),
                    request->for_duration.count() > 0
                        ? fmt::format(" for {:.1f} s", ToSeconds(request->for_duration))
                        : std::string());
    JsonReply(res, 200, StragglerStateJson(t->straggler().Current()).dump() + "\n");
  });
  s.Delete("/straggler", [t, authorized](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res)) return;
    t->straggler().Clear();
    MURMUR_LOG_INFO("admin: straggler injection stopped");
    JsonReply(res, 200, StragglerStateJson(t->straggler().Current()).dump() + "\n");
  });
}

// Known paths with another method: 405 and what the path takes; unknown paths, a body over the
// limit and exceptions: a JSON error body.
void AddErrorReplies(httplib::Server& s) {
  auto not_allowed = [](const httplib::Request& req, httplib::Response& res) {
    const bool straggler = req.path == "/straggler";
    const bool known = straggler || req.path == "/metrics" || req.path == "/healthz" ||
                       req.path == "/status";
    if (!known) {
      return ErrorReply(res, 404, fmt::format("no such path '{}' (paths: {})", req.path, kPaths));
    }
    res.set_header("Allow", straggler ? "GET, PUT, DELETE" : "GET");
    ErrorReply(res, 405,
               fmt::format("{} does not take {} (allowed: {})", req.path, req.method,
                           straggler ? "GET, PUT, DELETE" : "GET"));
  };
  s.Post(".*", not_allowed);
  s.Put(".*", not_allowed);
  s.Delete(".*", not_allowed);
  s.Patch(".*", not_allowed);
  s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string message;
    if (res.status == 404) {
      message = fmt::format("no such path '{}' (paths: {})", req.path, kPaths);
    } else if (res.status == 413) {
      message = fmt::format("the body is larger than {} bytes", kMaxBody);
    } else {
      message = fmt::format("HTTP {}", res.status);
    }
    res.set_content(ErrorJson(message), "application/json");
  });
  s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    res.status = 500;
    res.set_content(ErrorJson("internal error: " + what), "application/json");
  });
}

// The bound port (a port of 0 takes a free one).
StatusOr<int> Bind(httplib::Server& s, const std::string& host, int port,
                   const std::string& address) {
  if (port == 0) {
    const int bound = s.bind_to_any_port(host);
    if (bound <= 0) {
      return UnavailableError(
          fmt::format("admin: cannot bind {} (is the host an address of this machine?)", address));
    }
    return bound;
  }
  if (!s.bind_to_port(host, port)) {
    return UnavailableError(fmt::format(
        "admin: cannot bind {} (port in use, or the host is not an address of this machine)",
        address));
  }
  return port;
}

}  // namespace

StatusOr<std::unique_ptr<AdminServer>> AdminServer::Start(const std::string& address,
                                                          NodeTelemetry& telemetry,
                                                          Validator validate, std::string token) {
  MURMUR_ASSIGN_OR_RETURN(auto host_port, ParseHostPort(address));
  std::unique_ptr<AdminServer> admin(new AdminServer());
  admin->impl_ = std::make_unique<Impl>();
  httplib::Server& s = admin->impl_->server;
  SetLimits(s);
  AddReads(s, &telemetry);
  AddStragglerControl(s, &telemetry, std::move(validate),
                      BearerCheck{&telemetry, std::move(token)});
  AddErrorReplies(s);
  const auto& [host, port] = host_port;
  MURMUR_ASSIGN_OR_RETURN(const int bound, Bind(s, host, port, address));
  admin->host_ = host;
  admin->port_ = bound;
  admin->impl_->thread = std::thread([server = &s] { server->listen_after_bind(); });
  // Server::stop() does nothing until the loop runs: wait for it, so a prompt destructor
  // cannot leave the thread accepting forever.
  for (int i = 0; i < 5000 && !s.is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return admin;
}

AdminServer::~AdminServer() {
  if (!impl_) return;
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

}  // namespace murmur::node
