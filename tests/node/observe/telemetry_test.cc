// NodeTelemetry's exposition, StragglerControl, the PUT /straggler body parser, and the admin
// server over real loopback HTTP (cpp-httplib client).
#include "node/observe/telemetry.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <prometheus/registry.h>

#include <cmath>
#include <regex>
#include <thread>

#include "base/config.h"
#include "node/observe/admin_server.h"

namespace murmur::node {
namespace {

using std::chrono::milliseconds;

// The value of `name{labels}` in an exposition, or NaN when absent.
double Sample(const std::string& text, const std::string& series) {
  const std::regex re("^" + std::regex_replace(series, std::regex(R"([{}\[\]().*+?^$|\\])"), R"(\$&)") +
                      R"( (\S+)$)", std::regex::multiline);
  std::smatch m;
  if (!std::regex_search(text, m, re)) return std::nan("");
  return std::stod(m[1]);
}

TEST(TelemetryTest, ExpositionFollowsTheNamingRulesAndCountsWhatIsPushed) {
  prometheus::Registry registry;
  NodeTelemetry t(registry, "gossip", {});
  std::string text = t.Exposition();
  // Loss and accuracy appear only once there is one; everything else is there from the start.
  EXPECT_TRUE(std::isnan(Sample(text, "murmur_loss")));
  EXPECT_TRUE(std::isnan(Sample(text, "murmur_test_accuracy_ratio")));
  t.SetLoss(std::nan(""));  // "not measured yet"
  EXPECT_TRUE(std::isnan(Sample(t.Exposition(), "murmur_loss")));
  EXPECT_EQ(Sample(text, "murmur_steps_total"), 0);
  EXPECT_EQ(Sample(text, R"(murmur_rejected_messages_total{reason="non_finite"})"), 0);
  EXPECT_EQ(Sample(text, R"(murmur_build_info{cuda=")" + std::string(MURMUR_WITH_CUDA ? "true" : "false") +
                             R"(",mode="gossip",version=")" MURMUR_VERSION R"("})"), 1);
  EXPECT_GT(Sample(text, "process_resident_memory_bytes"), 1e6);
  EXPECT_GT(Sample(text, "process_open_fds"), 2);
  EXPECT_GT(Sample(text, "process_start_time_seconds"), 1.7e9);
  // Where the node trains: on the CPU no GPU memory and no host<->device traffic.
  EXPECT_EQ(Sample(text, "murmur_device_memory_bytes"), 0);
  EXPECT_EQ(Sample(text, "murmur_host_device_bytes_total"), 0);
  // The memory table, live, by buffer: a series per buffer once it is reported, set (not added).
  MemoryUse memory;
  memory.Add("model", 4000), memory.Add("choco_copies", 8000);
  t.SetMemory(memory);
  t.SetMemory(memory);
  text = t.Exposition();
  EXPECT_EQ(Sample(text, R"(murmur_memory_bytes{buffer="model"})"), 4000);
  EXPECT_EQ(Sample(text, R"(murmur_memory_bytes{buffer="choco_copies"})"), 8000);
  EXPECT_NE(t.StatusJson().find(R"("device":"cpu")"), std::string::npos);
  t.SetDevice("cuda:1");
  EXPECT_NE(t.StatusJson().find(R"("device":"cuda:1")"), std::string::npos);

  StepTimes times{.compute = milliseconds(3),
                  .compress = milliseconds(1),
                  .mix = milliseconds(4),
                  .send = milliseconds(2),
                  .waiting = milliseconds(2),
                  .injected = milliseconds(6)};
  for (int i = 0; i < 5; ++i) t.ObserveStep(times, 64);
  t.SetLoss(0.25);
  t.SetAccuracy(0.8);
  t.ObserveStaleness(3);
  t.ObserveStaleness(-2);  // clamped to 0: an update from ahead is not stale
  t.SetStragglers({7, 9}, 4);
  t.CountRejected("non_finite");
  t.CountRejected("non_finite");
  gossip::CodedStats coded;
  coded.decodes = 10;
  coded.children_waited = 20;
  coded.late_dropped = 3;
  t.SetCodedStats(coded);
  coded.decodes = 12;
  coded.late_dropped = 5;
  t.SetCodedStats(coded);  // totals: counters rise to them, never count twice
  t.AddLateDropped(1);
  text = t.Exposition();
  EXPECT_EQ(Sample(text, "murmur_steps_total"), 5);
  EXPECT_EQ(Sample(text, "murmur_samples_total"), 320);
  EXPECT_EQ(Sample(text, "murmur_loss"), 0.25);
  EXPECT_EQ(Sample(text, "murmur_test_accuracy_ratio"), 0.8);
  EXPECT_EQ(Sample(text, R"(murmur_step_duration_seconds_count{phase="injected"})"), 5);
  EXPECT_NEAR(Sample(text, R"(murmur_step_duration_seconds_sum{phase="compute"})"), 0.015, 1e-12);
  EXPECT_NEAR(Sample(text, R"(murmur_step_duration_seconds_sum{phase="compress"})"), 0.005, 1e-12);
  EXPECT_NEAR(Sample(text, R"(murmur_step_duration_seconds_sum{phase="mix"})"), 0.020, 1e-12);
  EXPECT_NEAR(Sample(text, R"(murmur_step_duration_seconds_sum{phase="waiting"})"), 0.010, 1e-12);
  EXPECT_NEAR(Sample(text, R"(murmur_step_duration_seconds_sum{phase="send"})"), 0.010, 1e-12);
  // Every phase is a series from the first step on, zeros included (a dashboard's stack).
  for (std::string_view phase : kStepPhases) {
    EXPECT_EQ(
        Sample(text, "murmur_step_duration_seconds_count{phase=\"" + std::string(phase) + "\"}"), 5)
        << phase;
  }
  EXPECT_NEAR(Sample(text, R"(murmur_injected_delay_seconds_total{kind="compute"})"), 0.030, 1e-12);
  EXPECT_EQ(Sample(text, R"(murmur_staleness_steps_bucket{le="0"})"), 1);
  EXPECT_EQ(Sample(text, R"(murmur_staleness_steps_bucket{le="4"})"), 2);
  EXPECT_EQ(Sample(text, "murmur_stragglers"), 2);
  EXPECT_EQ(Sample(text, "murmur_stragglers_detected_total"), 4);
  EXPECT_EQ(Sample(text, R"(murmur_rejected_messages_total{reason="non_finite"})"), 2);
  EXPECT_EQ(Sample(text, "murmur_coded_decodes_total"), 12);
  EXPECT_EQ(Sample(text, "murmur_coded_children_waited_total"), 20);
  EXPECT_EQ(Sample(text, "murmur_late_messages_dropped_total"), 6);
  // Names: prefix, _total on counters, no summaries, base units.
  std::smatch m;
  std::string rest = text;
  const std::regex type_line(R"(# TYPE (\S+) (\S+))");
  int families = 0;
  while (std::regex_search(rest, m, type_line)) {
    const std::string name = m[1], type = m[2];
    ++families;
    EXPECT_TRUE(name.starts_with("murmur_") || name.starts_with("process_")) << name;
    EXPECT_NE(type, "summary") << name;
    EXPECT_EQ(type == "counter", name.ends_with("_total")) << name;
    EXPECT_EQ(name.find("_ms"), std::string::npos) << name;
    rest = m.suffix();
  }
  EXPECT_GE(families, 35);
  // A NaN loss after a finite one is reported (the alert rule looks for it).
  t.SetLoss(std::nan(""));
  // prometheus-cpp writes "Nan"; Prometheus parses NaN case-insensitively (Go's ParseFloat).
  EXPECT_TRUE(std::isnan(Sample(t.Exposition(), "murmur_loss")));
  EXPECT_NE(t.Exposition().find("\nmurmur_loss Nan\n"), std::string::npos);
}

TEST(TelemetryTest, HealthAndStatusFollowTheNode) {
  prometheus::Registry registry;
  NodeTelemetry t(registry, "coded-tree", {});
  EXPECT_FALSE(t.Health().ready);
  t.SetJoined(false, "assembling the coded-tree: 2 of 4 nodes alive");
  EXPECT_EQ(t.Health().detail, "assembling the coded-tree: 2 of 4 nodes alive");
  t.SetJoined(true, "assembled");
  t.SetRole(0, "root");
  t.SetStepClock(42);
  EXPECT_TRUE(t.Health().ready);
  const auto status = nlohmann::json::parse(t.StatusJson());
  EXPECT_EQ(status["mode"], "coded-tree");
  EXPECT_EQ(status["step"], 42);
  EXPECT_EQ(status["role"], "root");
  EXPECT_TRUE(status["id"].is_null());  // no peer attached
  EXPECT_FALSE(status["injection"]["active"]);
}

TEST(StragglerControlTest, VersionsChangesAndEndsATimedInjection) {
  StragglerControl c(*ParseStraggle("delay=5ms"));
  auto s = c.Current();
  EXPECT_EQ(s.source, "config");
  EXPECT_EQ(s.version, 0u);
  EXPECT_FALSE(s.remaining_s.has_value());
  StragglerOptions slow;
  slow.slowdown = 4;
  c.Set(slow, milliseconds(80), "admin");
  s = c.Current();
  EXPECT_EQ(s.version, 1u);
  EXPECT_EQ(s.options.slowdown, 4);
  ASSERT_TRUE(s.remaining_s.has_value());
  EXPECT_GT(*s.remaining_s, 0.0);
  std::this_thread::sleep_for(milliseconds(120));
  s = c.Current();
  EXPECT_EQ(s.version, 2u) << "expiry is a change the trainer must see";
  EXPECT_FALSE(s.options.active());
  EXPECT_EQ(s.source, "");
  c.Set(slow, Duration(0), "admin");
  c.Clear();
  EXPECT_EQ(c.version(), 4u);
  EXPECT_FALSE(c.Current().options.active());
}

TEST(StraggleRequestTest, ParsesKeysOrSpecAndRefusesWithAReason) {
  auto r = ParseStraggleRequest(R"({"slowdown": 4, "send_delay": "20ms", "delay": 0.5, "for": "60s"})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->options.slowdown, 4);
  EXPECT_EQ(r->options.send_delay, milliseconds(20));
  EXPECT_EQ(r->options.delay, milliseconds(500));
  EXPECT_EQ(r->for_duration, std::chrono::seconds(60));
  r = ParseStraggleRequest(R"({"spec": "exp=10ms,drop=0.1", "for": 5})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->options.exp_mean, milliseconds(10));
  EXPECT_EQ(r->options.drop, 0.1);
  EXPECT_EQ(r->for_duration, std::chrono::seconds(5));
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "not valid JSON"},
      {"{", "not valid JSON"},
      {"3", "JSON object"},
      {"{}", "nothing to inject"},
      {R"({"slowdown": 1})", "nothing to inject"},
      {R"({"slowdown": 0})", "slowdown must be in [1, 1000]"},
      {R"({"slowdown": 1e9})", "slowdown must be in [1, 1000]"},
      {R"({"slowdown": null})", "expected a number"},
      {R"({"drop": 1})", "drop must be a probability"},
      {R"({"delay": "5"})", "needs a unit"},
      {R"({"delay": 1e6})", "outside [0, 86400]"},
      {R"({"pause": 3})", "FROM..TO"},
      {R"({"pause": "9..3"})", "FROM < TO"},
      {R"({"slowdown": 2, "for": -1})", "outside"},
      {R"({"slowdown": 2, "for": "0s"})", "must be above 0"},
      {R"({"spec": "slowdown=2", "slowdown": 3})", "not both"},
      {R"({"spec": 4})", "expected a string"},
      {R"({"speed": 4})", "unknown setting 'speed'"},
  };
  for (const auto& [body, reason] : bad) {
    auto b = ParseStraggleRequest(body);
    ASSERT_FALSE(b.ok()) << body;
    EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument) << body;
    EXPECT_NE(b.status().message().find(reason), std::string_view::npos)
        << body << " -> " << b.status().message();
  }
}

TEST(AdminServerTest, ServesTheNodeAndRefusesBadInputWithoutChangingIt) {
  prometheus::Registry registry;
  NodeTelemetry t(registry, "coded-tree", {});
  auto admin = AdminServer::Start("127.0.0.1:0", t, [](const StragglerOptions& o) {
    return o.pause_from >= 0 ? InvalidArgumentError("pause is for gossip mode") : OkStatus();
  }, "admin-token-0123456789");
  ASSERT_TRUE(admin.ok()) << admin.status().ToString();
  httplib::Client c("127.0.0.1", (*admin)->port());
  c.set_bearer_token_auth("admin-token-0123456789");
  auto res = c.Get("/healthz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  EXPECT_EQ(res->body, "not ready: starting\n");
  t.SetJoined(true, "assembled");
  EXPECT_EQ(c.Get("/healthz")->status, 200);
  res = c.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->body.find("murmur_coded_decodes_total 0"), std::string::npos);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");

  res = c.Put("/straggler", R"({"slowdown": 3, "for": "30s"})", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(t.straggler().Current().options.slowdown, 3);
  const uint64_t version = t.straggler().version();
  EXPECT_NE(c.Get("/metrics")->body.find("murmur_injection{setting=\"slowdown\"} 3"), std::string::npos);

  struct Bad {
    std::string method, path, body;
    int status;
    std::string reason;
  };
  const std::vector<Bad> bad = {
      {"GET", "/nothing", "", 404, "no such path '/nothing'"},
      {"POST", "/status", "{}", 405, "does not take POST"},
      {"DELETE", "/metrics", "", 405, "does not take DELETE"},
      {"PUT", "/straggler", "{oops", 400, "not valid JSON"},
      {"PUT", "/straggler", R"({"pause": "1..5"})", 400, "pause is for gossip mode"},
      {"PUT", "/straggler", R"({"drop": -0.1})", 400, "drop must be a probability"},
      {"PUT", "/straggler", std::string(70000, ' '), 413, "larger than"},
  };
  for (const Bad& b : bad) {
    httplib::Result r = b.method == "GET"    ? c.Get(b.path.c_str())
                        : b.method == "POST" ? c.Post(b.path.c_str(), b.body, "application/json")
                        : b.method == "PUT"  ? c.Put(b.path.c_str(), b.body, "application/json")
                                             : c.Delete(b.path.c_str());
    ASSERT_TRUE(r) << b.method << " " << b.path;
    EXPECT_EQ(r->status, b.status) << b.method << " " << b.path << ": " << r->body;
    const auto j = nlohmann::json::parse(r->body, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r->body;
    EXPECT_NE(j.value("error", "").find(b.reason), std::string::npos) << r->body;
    EXPECT_EQ(t.straggler().version(), version) << b.method << " " << b.path << " changed it";
    EXPECT_EQ(t.straggler().Current().options.slowdown, 3);
  }
  res = c.Delete("/straggler");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_FALSE(t.straggler().Current().options.active());

  // Changes need the token: none is 401, another 403; a node without a token takes none.
  httplib::Client anonymous("127.0.0.1", (*admin)->port());
  EXPECT_EQ(anonymous.Put("/straggler", R"({"slowdown": 2})", "application/json")->status, 401);
  EXPECT_EQ(anonymous.Delete("/straggler")->status, 401);
  httplib::Client wrong("127.0.0.1", (*admin)->port());
  wrong.set_bearer_token_auth("admin-token-0123456780");
  EXPECT_EQ(wrong.Put("/straggler", R"({"slowdown": 2})", "application/json")->status, 403);
  EXPECT_EQ(wrong.Get("/status")->status, 200) << "reading needs no token";
  EXPECT_FALSE(t.straggler().Current().options.active()) << "a refused change changed it";
  EXPECT_NE(c.Get("/metrics")->body.find("murmur_rejected_messages_total{reason=\"admin_unauthorized\"} 3"),
            std::string::npos);
  {
    prometheus::Registry r2;
    NodeTelemetry t2(r2, "gossip", {});
    auto open = AdminServer::Start("127.0.0.1:0", t2);
    ASSERT_TRUE(open.ok());
    httplib::Client any("127.0.0.1", (*open)->port());
    any.set_bearer_token_auth("admin-token-0123456789");
    auto r = any.Put("/straggler", R"({"slowdown": 2})", "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 403);
    EXPECT_NE(r->body.find("no admin token"), std::string::npos) << r->body;
  }

  // A port in use is a clear error, not a crash.
  auto second = AdminServer::Start("127.0.0.1:" + std::to_string((*admin)->port()), t);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(AdminServer::Start("no-port", t).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(AdminServer::Start("127.0.0.1:70000", t).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace murmur::node
