#include "api/peer.h"

#include <prometheus/registry.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <set>
#include <utility>

#include "api/peer_checkpoint.h"
#include "base/check.h"
#include "base/file.h"
#include "base/log.h"
#include "kernels/device.h"
#include "kernels/memory.h"
#include "node/config/config_schema.h"
#include "node/config/gossip_config.h"
#include "node/config/node_config.h"
#include "node/config/node_report.h"
#include "node/config/peer_keys.h"
#include "node/config/secrets.h"
#include "node/driver/gossip_checkpoint.h"
#include "node/driver/gossip_session.h"
#include "node/observe/admin_server.h"
#include "node/observe/telemetry.h"
#include "node/train/checkpoint.h"

namespace murmur::api {
namespace {

using node::NodeConfig;

constexpr const char* kLibraryKeys[] = {"epoch_samples", "shard_samples", "same_init",
                                        "join_timeout_s", "device"};

// `murmur local --exec` hands each process its node's flags in MURMUR_PEER_ARGS, one token per
// line ("--key=value", "--key value" or a bare boolean "--flag"), as it would run `murmur node`.
struct Launcher {
  std::map<std::string, std::string> keys;
  // Where it placed this process (also in MURMUR_DEVICE): the program should put its model
  // there; checked against the buffer's own (BufferDevice), not merged. Empty: no placement.
  std::string device;
};

StatusOr<Launcher> LauncherConfig() {
  Launcher launcher;
  std::map<std::string, std::string>& out = launcher.keys;
  const char* env = std::getenv("MURMUR_PEER_ARGS");
  if (env == nullptr) return launcher;
  std::vector<std::string> tokens;
  std::string token;
  for (const char* p = env;; ++p) {
    if (*p == '\n' || *p == '\0') {
      if (!token.empty()) tokens.push_back(token);
      token.clear();
      if (*p == '\0') break;
    } else {
      token += *p;
    }
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].rfind("--", 0) != 0) {
      return InvalidArgumentError("MURMUR_PEER_ARGS: '" + tokens[i] + "' is not a --flag");
    }
    std::string key = tokens[i].substr(2), value = "true";
    if (auto eq = key.find('='); eq != std::string::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
    } else if (i + 1 < tokens.size() && tokens[i + 1].rfind("--", 0) != 0) {
      value = tokens[++i];
    }
    std::replace(key.begin(), key.end(), '-', '_');
    out[key] = value;
  }
  // What only `murmur node` does with these: the script gets its rank and shard in the
  // environment (MURMUR_RANK, MURMUR_WORLD_SIZE), reports go to MURMUR_REPORT_FD.
  if (auto it = out.find("mode"); it != out.end() && it->second != "gossip") {
    return InvalidArgumentError("MURMUR_PEER_ARGS: mode " + it->second +
                                ": the library runs gossip");
  }
  if (auto it = out.find("device"); it != out.end()) launcher.device = it->second;
  for (const char* key : {"mode", "device", "shard_index", "shard_count", "report"}) out.erase(key);
  return launcher;
}

// Where the caller's buffer is: the `device` key (default cpu), which must agree with the
// launcher's placement when `murmur local --exec --device` gave one.
StatusOr<kernels::Device> BufferDevice(const std::map<std::string, std::string>& library,
                                       const std::string& launcher) {
  const auto it = library.find("device");
  const std::string text = it == library.end() ? "cpu" : it->second;
  if (text == "auto") {
    return InvalidArgumentError(
        "device: auto: the buffer is where the caller put it; give cpu or cuda:N");
  }
  StatusOr<kernels::Device> device = kernels::ResolveDevice(text);
  if (!device.ok()) {
    return Status(device.status().code(), "device: " + std::string(device.status().message()));
  }
  const std::string placed = launcher == "cuda" ? "cuda:0" : launcher;
  if (!placed.empty() && placed != "auto" && placed != device->ToString()) {
    return InvalidArgumentError("device: murmur local placed this process on " + placed +
                                " (MURMUR_DEVICE), but the model buffer is on " +
                                device->ToString() +
                                (it == library.end() ? " (no device key: host memory)" : ""));
  }
  return device;
}

const char* PhaseName(gossip::GossipNode::Phase p) {
  switch (p) {
    case gossip::GossipNode::Phase::kJoining:
      return "joining";
    case gossip::GossipNode::Phase::kAwaitingModel:
      return "awaiting_model";
    case gossip::GossipNode::Phase::kTraining:
      return "training";
    case gossip::GossipNode::Phase::kFinishing:
      return "finishing";
    case gossip::GossipNode::Phase::kLingering:
      return "lingering";
    case gossip::GossipNode::Phase::kOver:
      return "over";
  }
  return "unknown";
}

// A library key's value through the schema's own parsers, named in the error.
template <typename T>
StatusOr<T> KeyValue(const std::string& key, const std::string& text, StatusOr<T> parsed) {
  if (parsed.ok()) return parsed;
  return InvalidArgumentError(key + ": '" + text + "': " + std::string(parsed.status().message()));
}

StatusOr<int64_t> PositiveInteger(const std::string& key, const std::string& text) {
  return KeyValue(key, text, node::ParseInteger(text, 1, std::numeric_limits<int64_t>::max()));
}

class BufferWork : public node::GossipWork {
 public:
  BufferWork(std::span<float> params, const kernels::Device& device, EvaluateFn evaluate,
             const Hooks& hooks)
      : params_(params), evaluate_(std::move(evaluate)), device_(device), hooks_(hooks) {}
  std::span<float> params() override { return params_; }
  const kernels::Device& device() const override { return device_; }
  void ResetOptimizerState() override {
    replaced_ = true;
    if (hooks_.replaced) hooks_.replaced();
  }
  Status Started(gossip::NodeId id) override {
    return hooks_.started ? hooks_.started(id) : OkStatus();
  }
  std::optional<double> Evaluate(bool full) override {
    if (!evaluate_) return std::nullopt;
    std::optional<double> a = evaluate_(full);
    if (a.has_value() && !(*a >= 0 && *a <= 1)) {
      MURMUR_LOG_WARN("the evaluation returned {}, not an accuracy in [0, 1]: ignored", *a);
      return std::nullopt;
    }
    return a;
  }
  bool TakeReplaced() { return std::exchange(replaced_, false); }

 private:
  std::span<float> params_;
  EvaluateFn evaluate_;
  kernels::Device device_;
  const Hooks& hooks_;
  bool replaced_ = false;
};

}  // namespace

struct Peer::Impl {
  Impl(std::span<float> params, const kernels::Device& device, EvaluateFn evaluate, Hooks h)
      : hooks(std::move(h)), work(params, device, std::move(evaluate), hooks) {}
  const Hooks hooks;
  BufferWork work;
  prometheus::Registry registry;
  std::unique_ptr<node::NodeTelemetry> telemetry;
  std::unique_ptr<node::AdminServer> admin;
  std::unique_ptr<node::GossipSession> session;
  std::atomic<bool> stop{false};
  bool asked = false;  // Next returned a step; Done is due
  bool over = false;
  std::chrono::steady_clock::time_point asked_at{};
  std::string endpoint;
  std::string save_model;  // the final buffer is written here ("": not)
  std::string model;       // what the buffer holds, in the saved model and the checkpoints
  node::GossipCheckpointOptions checkpoint;  // dir empty: none
  int report_fd = -1;  // `murmur node --report json` lines go here (murmur local --exec)
  mutable std::mutex mu;
  Progress progress;  // guarded by mu

  void Publish(const node::GossipProgress& p, bool final = false) {
    std::string line;
    if (report_fd >= 0 || hooks.progress) line = node::GossipProgressJson(p, final);
    if (report_fd >= 0) {
      line += '\n';
      // One write per line (a pipe keeps writes up to PIPE_BUF whole); a reader that went
      // away costs the report, not the run.
      (void)!::write(report_fd, line.data(), line.size());
      line.pop_back();
    }
    Progress copy;
    {
      std::lock_guard<std::mutex> lock(mu);
      Fill(p);
      if (!hooks.progress) return;
      copy = progress;
    }
    copy.report = std::move(line);
    hooks.progress(copy, final);
  }

  // progress from the session's state. REQUIRES mu held.
  void Fill(const node::GossipProgress& p) {
    progress.id = p.id;
    progress.endpoint = endpoint;
    progress.phase = PhaseName(session->machine().phase());
    progress.activity = p.activity;
    progress.accuracy = p.accuracy;
    progress.own_accuracy = p.own_accuracy;
    progress.step = p.step;
    progress.local_steps = p.local_steps;
    progress.samples = p.samples;
    progress.budget_samples = p.budget_samples;
    progress.lr = p.lr;
    progress.live_members = static_cast<int>(p.live_members);
    progress.rounds = p.rounds;
    progress.bytes_sent = p.bytes_sent;
    progress.bytes_received = p.bytes_received;
    progress.consensus_distance = p.consensus_distance;
    progress.wait_s = p.wait_s;
    progress.stragglers.assign(p.stragglers.begin(), p.stragglers.end());
    progress.finished = p.finished;
    progress.end_reason = p.end_reason;
    progress.finish = p.finish;
    progress.finish_contributors = p.finish_contributors;
    progress.elapsed_s = p.elapsed_s;
    progress.loss = p.loss;
    progress.max_lag = p.max_lag;
    progress.straggle =
        telemetry != nullptr ? node::StraggleSpec(telemetry->straggler().Current().options) : "";
  }

  bool Stopping() const { return stop.load() || (hooks.stop && hooks.stop()); }
};

Peer::Peer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Peer::~Peer() {
  if (impl_ != nullptr && impl_->session != nullptr) impl_->session->Leave();
}

std::vector<std::string> Peer::KnownKeys() {
  std::vector<std::string> keys(node::PeerLibraryKeys().begin(), node::PeerLibraryKeys().end());
  keys.insert(keys.end(), std::begin(kLibraryKeys), std::end(kLibraryKeys));
  std::sort(keys.begin(), keys.end());
  return keys;
}

StatusOr<std::unique_ptr<Peer>> Peer::Start(const std::map<std::string, std::string>& config,
                                            std::span<float> params, EvaluateFn evaluate) {
  return Start(config, params, std::move(evaluate), Hooks{});
}

StatusOr<std::unique_ptr<Peer>> Peer::Start(const std::map<std::string, std::string>& config,
                                            std::span<float> params, EvaluateFn evaluate,
                                            Hooks hooks) {
  if (params.empty()) return InvalidArgumentError("the model buffer is empty");
  const auto& schema = node::NodeSchema();
  NodeConfig c{};
  for (const auto& key : schema.keys()) MURMUR_CHECK_OK(key.set(key.default_text, c));
  c.listen = "tcp://127.0.0.1:0";
  c.gossip.epochs = 0;      // a budget is the caller's to give
  c.gossip.eval_every = 0;  // only the final evaluation unless eval_every is given
  c.gossip.train.lr_schedule = "constant";
  // The launcher's keys first; the caller's own override them.
  using KeyMap = std::map<std::string, std::string>;
  Launcher launcher;
  if (hooks.launcher_environment) {
    MURMUR_ASSIGN_OR_RETURN(launcher, LauncherConfig());
  }
  KeyMap merged = std::move(launcher.keys);
  for (const auto& [name, value] : config) merged[name] = value;
  std::map<std::string, std::string> library;
  for (const auto& [name, value] : merged) {
    if (std::find(std::begin(kLibraryKeys), std::end(kLibraryKeys), name) !=
        std::end(kLibraryKeys)) {
      library[name] = value;
      continue;
    }
    auto key = std::find_if(schema.keys().begin(), schema.keys().end(),
                            [&](const auto& k) { return k.name == name; });
    if (key == schema.keys().end()) {
      std::string known;
      for (const std::string& k : KnownKeys()) known += (known.empty() ? "" : ", ") + k;
      return InvalidArgumentError("unknown key '" + name + "' (known: " + known + ")");
    }
    const bool evaluation_key = name == "eval_every" || name == "target_accuracy";
    const bool checkpoint_key = name == "checkpoint_dir" || name == "checkpoint_every";
    if (node::PeerLibraryKeys().count(name) == 0 && !(evaluation_key && evaluate) &&
        !(checkpoint_key && hooks.save_state && hooks.restore_state)) {
      return InvalidArgumentError("key '" + name + "' does not apply to a library peer: " +
                                  node::WhyNotAPeerLibraryKey(name));
    }
    if (Status s = key->set(value, c); !s.ok()) {
      return InvalidArgumentError(name + ": '" + value + "': " + std::string(s.message()) +
                                  " (allowed: " + key->allowed + ")");
    }
  }
  // A checkpoint period with nowhere to write checkpoints would do nothing.
  if (auto every = merged.find("checkpoint_every");
      every != merged.end() && c.checkpoint_dir.empty()) {
    const auto key = std::find_if(schema.keys().begin(), schema.keys().end(),
                                  [](const auto& k) { return k.name == "checkpoint_every"; });
    if (key != schema.keys().end() && every->second != key->default_text) {
      return InvalidArgumentError(
          "checkpoint_every: '" + every->second +
          "' without checkpoint_dir: there is nowhere to write checkpoints");
    }
  }
  MURMUR_ASSIGN_OR_RETURN(node::PeerNodeOptions peer, node::NodeOptionsFrom(c));
  MURMUR_ASSIGN_OR_RETURN(node::GossipTrainerOptions g, node::GossipOptionsFrom(c.gossip));
  int64_t epoch_samples = 0;
  if (auto it = library.find("epoch_samples"); it != library.end()) {
    MURMUR_ASSIGN_OR_RETURN(epoch_samples, PositiveInteger("epoch_samples", it->second));
  }
  if (g.epochs > 0 && epoch_samples == 0) {
    return InvalidArgumentError(
        "epochs needs epoch_samples: the training samples of one epoch "
        "over the whole cluster");
  }
  if (g.epochs <= 0 && g.node.time_limit.count() <= 0 && g.node.target_accuracy <= 0) {
    return InvalidArgumentError(
        "no budget: give epochs (with epoch_samples), time_limit_s or "
        "target_accuracy");
  }
  const int members = std::max(1, c.expect_members);
  int64_t shard_samples = std::max<int64_t>(1, epoch_samples / members);
  if (auto it = library.find("shard_samples"); it != library.end()) {
    MURMUR_ASSIGN_OR_RETURN(shard_samples, PositiveInteger("shard_samples", it->second));
  }
  bool same_init = false;
  if (auto it = library.find("same_init"); it != library.end()) {
    MURMUR_ASSIGN_OR_RETURN(same_init,
                            KeyValue("same_init", it->second, node::ParseBool(it->second)));
  }
  if (g.train.lr_reference_batch > 0 && c.expect_members <= 0) {
    return InvalidArgumentError(
        "lr_reference_batch (the linear scaling rule) needs "
        "expect_members: the cluster's size makes its global batch");
  }
  MURMUR_ASSIGN_OR_RETURN(const kernels::Device device, BufferDevice(library, launcher.device));
  MURMUR_RETURN_IF_ERROR(kernels::CheckMemoryOf(device, params.data(), params.size_bytes()));
  MURMUR_CHECK_OK(SetLogLevel(c.log_level));

  auto impl = std::make_unique<Impl>(params, device, evaluate, std::move(hooks));
  node::GossipSessionOptions s;
  s.peer = std::move(peer);
  s.node = g.node;
  s.node.expect_members = c.expect_members;
  // A peer with no seeds and no members to wait for starts a cluster: nobody can tell it of a
  // running one, so it trains at once (later peers join it by its snapshot).
  if (s.peer.seeds.empty() && c.expect_members <= 0) s.node.join_wait = Duration{0};
  s.shard_rows = shard_samples;
  s.budget_samples =
      g.epochs > 0 ? static_cast<int64_t>(std::ceil(g.epochs * static_cast<double>(epoch_samples)))
                   : 0;
  if (merged.count("lr_schedule") > 0 || merged.count("warmup_epochs") > 0 ||
      merged.count("lr_reference_batch") > 0) {
    if (merged.count("lr") == 0) {
      return InvalidArgumentError("lr_schedule needs lr: the schedule's base rate");
    }
    MURMUR_ASSIGN_OR_RETURN(
        s.lr_schedule,
        node::ScheduleFor(g.train, s.budget_samples, epoch_samples, g.train.batch_size * members));
  } else if (merged.count("lr") > 0) {
    return InvalidArgumentError(
        "lr is the base rate of lr_schedule; without a schedule the "
        "caller's optimizer keeps its own rate");
  }
  s.initial.resize(params.size());
  MURMUR_RETURN_IF_ERROR(kernels::CopyBytes(kernels::Device::Cpu(), s.initial.data(), device,
                                            params.data(), params.size_bytes()));
  s.from_initial = same_init;
  s.straggler = g.straggler;
  s.alone_timeout = std::chrono::seconds(30);
  s.wrong_dimension_limit = std::max(0, hooks.dimension_mismatch_limit);
  if (auto it = library.find("join_timeout_s"); it != library.end()) {
    MURMUR_ASSIGN_OR_RETURN(const double v, KeyValue("join_timeout_s", it->second,
                                                     node::ParseReal(it->second, 0, 86400)));
    s.alone_timeout = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(v));
  }
  // A model that could not be written would be lost when the run ends: refused now.
  if (!c.save_model.empty()) {
    MURMUR_RETURN_IF_ERROR(CheckWritableFilePath(c.save_model, "save_model"));
  }
  s.report_interval = std::chrono::milliseconds(c.report_interval_ms);
  impl->telemetry = std::make_unique<node::NodeTelemetry>(impl->registry, "gossip", g.straggler);
  impl->telemetry->SetDevice(device.ToString());
  if (!c.admin.empty()) {
    std::string token;
    if (!c.admin_token_file.empty()) {
      MURMUR_ASSIGN_OR_RETURN(token, node::LoadAdminToken(c.admin_token_file));
    }
    MURMUR_ASSIGN_OR_RETURN(impl->admin,
                            node::AdminServer::Start(c.admin, *impl->telemetry, nullptr, token));
    MURMUR_LOG_INFO("admin port: http://{}:{}/ (metrics, healthz, status, straggler); changes {}",
                    impl->admin->host(), impl->admin->port(),
                    token.empty() ? "refused (no admin_token_file)" : "need the bearer token");
  }
  s.telemetry = impl->telemetry.get();
  impl->save_model = c.save_model;
  impl->model = impl->hooks.model.empty()
                    ? "caller's model of " + std::to_string(params.size()) + " values"
                    : impl->hooks.model;
  if (const char* fd = std::getenv("MURMUR_REPORT_FD");
      fd != nullptr && impl->hooks.launcher_environment) {
    MURMUR_ASSIGN_OR_RETURN(const int64_t n, PositiveInteger("MURMUR_REPORT_FD", fd));
    impl->report_fd = static_cast<int>(n);
  }
  Impl* raw = impl.get();
  impl->session = std::make_unique<node::GossipSession>(
      std::move(s), impl->work, [raw](const node::GossipProgress& p) { raw->Publish(p); },
      [raw] { return raw->Stopping(); });
  MURMUR_RETURN_IF_ERROR(impl->session->Start());
  if (!c.checkpoint_dir.empty()) {
    impl->checkpoint.dir = c.checkpoint_dir;
    impl->checkpoint.every = c.checkpoint_every;
    impl->checkpoint.model = impl->model;
    impl->checkpoint.identity =
        impl->hooks.run_identity.empty() ? "cluster " + c.cluster : impl->hooks.run_identity;
    impl->checkpoint.node_id = impl->session->id();
    MURMUR_RETURN_IF_ERROR(RestoreCheckpoint(*impl->session, impl->work, impl->hooks,
                                             impl->telemetry.get(), impl->checkpoint));
  }
  // The bound endpoint (a port of 0 took a free one).
  impl->endpoint = impl->session->endpoint();
  {
    std::lock_guard<std::mutex> lock(impl->mu);
    impl->progress.id = impl->session->id();
    impl->progress.endpoint = impl->endpoint;
    impl->progress.phase = "joining";
  }
  return std::unique_ptr<Peer>(new Peer(std::move(impl)));
}

StatusOr<Turn> Peer::Next() {
  Impl& m = *impl_;
  if (m.asked) return FailedPreconditionError("Next called twice: call Done after each step");
  Turn turn;
  if (m.over || !m.session->Next()) {
    m.over = true;
    auto result = m.session->End();
    if (!result.ok()) return result.status();
    return turn;
  }
  m.asked = true;
  m.asked_at = std::chrono::steady_clock::now();
  {
    // What changes every step, fresher than the periodic report.
    const gossip::GossipNodeState& s = m.session->machine().state();
    std::lock_guard<std::mutex> lock(m.mu);
    m.progress.phase = PhaseName(m.session->machine().phase());
    m.progress.step = s.step;
    m.progress.local_steps = s.local_steps;
    m.progress.samples = s.samples;
    m.progress.rounds = s.rounds;
    m.progress.live_members = static_cast<int>(s.live_members);
    m.progress.lr = s.lr;
  }
  turn.step = true;
  turn.lr = m.session->lr();
  turn.model_replaced = m.work.TakeReplaced();
  return turn;
}

Status Peer::Done(double loss, int64_t samples, double compute_s) {
  Impl& m = *impl_;
  if (!m.asked) return FailedPreconditionError("Done without a step: call Next first");
  if (samples < 0) return InvalidArgumentError("samples must be at least 0");
  m.asked = false;
  const Duration compute =
      compute_s >= 0
          ? std::chrono::duration_cast<Duration>(std::chrono::duration<double>(compute_s))
          : std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now() - m.asked_at);
  StatusOr<float> l = std::isfinite(loss)
                          ? StatusOr<float>(static_cast<float>(loss))
                          : StatusOr<float>(FailedPreconditionError("the loss was not finite"));
  m.session->Computed(l, samples, compute);
  const int64_t done = m.session->machine().state().local_steps;
  if (!m.checkpoint.dir.empty() && m.checkpoint.every > 0 && done > 0 &&
      done % m.checkpoint.every == 0) {
    WriteCheckpoint(*m.session, m.work, m.hooks, m.telemetry.get(), m.checkpoint);
  }
  return OkStatus();
}

void Peer::Stop() { impl_->stop.store(true); }

StatusOr<Progress> Peer::Finish() {
  Impl& m = *impl_;
  if (!m.over)
    return FailedPreconditionError("Finish before the run is over (Next returned a step)");
  auto result = m.session->End();
  // The run's end or a stop (SIGTERM): a restart resumes from here.
  if (!m.checkpoint.dir.empty()) {
    WriteCheckpoint(*m.session, m.work, m.hooks, m.telemetry.get(), m.checkpoint);
  }
  Status saved;
  if (result.ok() && !m.save_model.empty()) {
    std::vector<float> params(m.work.params().size());
    saved = kernels::CopyBytes(kernels::Device::Cpu(), params.data(), m.work.device(),
                               m.work.params().data(), params.size() * sizeof(float));
    if (saved.ok()) saved = node::SaveModel(m.save_model, m.model, params);
  }
  m.session->Leave();
  if (!result.ok()) return result.status();
  m.Publish(*result, true);
  if (!saved.ok()) {
    return Status(saved.code(), "save_model: " + std::string(saved.message()));
  }
  return GetProgress();
}

Progress Peer::GetProgress() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->progress;
}

}  // namespace murmur::api
