#include "api/peer.h"

#include <prometheus/registry.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <utility>

#include "api/peer_checkpoint.h"
#include "api/peer_options.h"
#include "base/check.h"
#include "base/file.h"
#include "base/log.h"
#include "kernels/device.h"
#include "kernels/memory.h"
#include "node/config/admin_port.h"
#include "node/config/config_schema.h"
#include "node/config/gossip_config.h"
#include "node/config/node_config.h"
#include "node/driver/gossip_checkpoint.h"
#include "node/driver/gossip_session.h"
#include "node/driver/node_report.h"
#include "node/observe/admin_server.h"
#include "node/observe/telemetry.h"
#include "node/train/checkpoint.h"

namespace murmur::api {
namespace {

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
  void AddMemory(MemoryUse& memory) const override {
    if (hooks_.memory) hooks_.memory(memory);
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
  std::atomic<bool> ended{false};  // EndTraining was called
  bool asked = false;  // Next returned a step; Done is due
  int64_t budget_samples = 0;  // the budget in samples (epochs); 0: none
  bool over = false;
  std::chrono::steady_clock::time_point asked_at{};
  std::string endpoint;
  std::string save_model;  // the final buffer is written here ("": not)
  std::string model;       // what the buffer holds, in the saved model and the checkpoints
  node::GossipCheckpointOptions checkpoint;  // dir empty: none
  int report_fd = -1;  // `murmur node --report json` lines go here (murmur local --exec)
  mutable std::mutex mu;
  Progress progress;  // guarded by mu
  std::map<std::string, double> scalars;  // Log's, guarded by mu

  void Publish(const node::GossipProgress& p, bool final = false) {
    std::string line;
    if (report_fd >= 0 || hooks.progress) {
      std::map<std::string, double> own;
      {
        std::lock_guard<std::mutex> lock(mu);
        own = scalars;
      }
      if (own.empty()) {
        line = node::GossipProgressJson(p, final);
      } else {
        node::GossipProgress with = p;
        with.scalars = std::move(own);
        line = node::GossipProgressJson(with, final);
      }
    }
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
    progress.phase = gossip::PhaseName(session->machine().phase());
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
    progress.loss = p.have_loss ? p.loss : std::nan("");
    progress.perplexity = p.perplexity;
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

std::vector<std::string> Peer::KnownKeys() { return PeerKnownKeys(); }

StatusOr<std::unique_ptr<Peer>> Peer::Start(const std::map<std::string, std::string>& config,
                                            std::span<float> params, EvaluateFn evaluate) {
  return Start(config, params, std::move(evaluate), Hooks{});
}

StatusOr<std::unique_ptr<Peer>> Peer::Start(const std::map<std::string, std::string>& config,
                                            std::span<float> params, EvaluateFn evaluate,
                                            Hooks hooks) {
  const KeyContext context{.evaluate = static_cast<bool>(evaluate),
                           .state_hooks = hooks.save_state && hooks.restore_state,
                           .launcher_environment = hooks.launcher_environment};
  MURMUR_ASSIGN_OR_RETURN(PeerOptions options, PeerOptionsFromKeys(config, context));
  return Start(options, params, std::move(evaluate), std::move(hooks));
}

namespace {

// What the typed options may hold that the caller's hooks cannot serve.
Status CheckAgainstHooks(const PeerOptions& o, bool evaluate, const Hooks& hooks) {
  if (!evaluate && (o.gossip.node.target_accuracy > 0 || o.gossip.node.eval_every != 0)) {
    return InvalidArgumentError("eval_every and target_accuracy need an evaluation (evaluate)");
  }
  if (!o.checkpoint_dir.empty() && !(hooks.save_state && hooks.restore_state)) {
    return InvalidArgumentError(
        "checkpoint_dir needs the caller's optimizer state: give Hooks::save_state and "
        "restore_state");
  }
  // A model that could not be written would be lost when the run ends: refused now.
  if (!o.save_model.empty()) {
    MURMUR_RETURN_IF_ERROR(CheckWritableFilePath(o.save_model, "save_model"));
  }
  return OkStatus();
}

// murmur local --exec's report pipe (MURMUR_REPORT_FD), where the environment is read; -1: none.
StatusOr<int> ReportFd(const Hooks& hooks) {
  const char* fd = std::getenv("MURMUR_REPORT_FD");
  if (fd == nullptr || !hooks.launcher_environment) return -1;
  StatusOr<int64_t> n = node::ParseInteger(fd, 0, 1 << 20);
  if (!n.ok()) {
    return InvalidArgumentError("MURMUR_REPORT_FD: '" + std::string(fd) +
                                "': " + std::string(n.status().message()));
  }
  return static_cast<int>(*n);
}

}  // namespace

StatusOr<std::unique_ptr<Peer>> Peer::Start(const PeerOptions& options, std::span<float> params,
                                            EvaluateFn evaluate, Hooks hooks) {
  if (params.empty()) return InvalidArgumentError("the model buffer is empty");
  MURMUR_RETURN_IF_ERROR(CheckAgainstHooks(options, static_cast<bool>(evaluate), hooks));
  node::GossipPeerOptions session = options.gossip;  // the session's, whole
  session.wrong_dimension_limit = std::max(0, hooks.dimension_mismatch_limit);
  MURMUR_RETURN_IF_ERROR(
      kernels::CheckMemoryOf(options.device, params.data(), params.size_bytes()));
  MURMUR_RETURN_IF_ERROR(SetLogLevel(options.log_level));
  for (const std::string& overridden : options.launcher_overrides) {
    MURMUR_LOG_WARN("{}", overridden);
  }
  MURMUR_ASSIGN_OR_RETURN(const int report_fd, ReportFd(hooks));
  std::unique_ptr<Peer> peer(new Peer(
      std::make_unique<Impl>(params, options.device, std::move(evaluate), std::move(hooks))));
  Impl& m = *peer->impl_;
  m.report_fd = report_fd;
  m.telemetry = std::make_unique<node::NodeTelemetry>(m.registry, "gossip", session.straggler);
  m.telemetry->SetDevice(options.device.ToString());
  MURMUR_ASSIGN_OR_RETURN(m.admin, node::StartAdminPort(options.admin, options.admin_token_file,
                                                        *m.telemetry, nullptr));
  m.save_model = options.save_model;
  m.model = m.hooks.model.empty() ? "caller's model of " + std::to_string(params.size()) + " values"
                                  : m.hooks.model;
  Impl* raw = &m;
  m.session = std::make_unique<node::GossipSession>(
      std::move(session), m.work, m.telemetry.get(),
      [raw](const node::GossipProgress& p) { raw->Publish(p); }, [raw] { return raw->Stopping(); });
  MURMUR_RETURN_IF_ERROR(m.session->Start());
  if (!options.checkpoint_dir.empty()) {
    m.checkpoint.dir = options.checkpoint_dir;
    m.checkpoint.every = options.checkpoint_every;
    m.checkpoint.model = m.model;
    m.checkpoint.identity =
        m.hooks.run_identity.empty() ? "cluster " + options.cluster : m.hooks.run_identity;
    m.checkpoint.node_id = m.session->id();
    MURMUR_RETURN_IF_ERROR(
        RestoreCheckpoint(*m.session, m.work, m.hooks, m.telemetry.get(), m.checkpoint));
  }
  // The bound endpoint (a port of 0 took a free one).
  m.endpoint = m.session->endpoint();
  std::lock_guard<std::mutex> lock(m.mu);
  m.progress.id = m.session->id();
  m.progress.endpoint = m.endpoint;
  m.progress.phase = "joining";
  m.budget_samples = options.gossip.BudgetSamples();
  m.progress.budget_samples = m.budget_samples;
  return peer;
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
    m.progress.phase = gossip::PhaseName(m.session->machine().phase());
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

Status Peer::Done(std::optional<double> loss, int64_t samples, double compute_s) {
  Impl& m = *impl_;
  if (!m.asked) return FailedPreconditionError("Done without a step: call Next first");
  if (samples < 0) return InvalidArgumentError("samples must be at least 0");
  // A step of no rows would never spend a budget counted in samples; a stopped or ended run's
  // last turn (the caller drains it) may have none.
  if (samples == 0 && m.budget_samples > 0 && !m.stop.load() && !m.ended.load()) {
    return InvalidArgumentError(
        "samples: 0, but the budget (epochs) counts samples: give each step's rows");
  }
  m.asked = false;
  const Duration compute =
      compute_s >= 0
          ? std::chrono::duration_cast<Duration>(std::chrono::duration<double>(compute_s))
          : std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now() - m.asked_at);
  using Loss = StatusOr<std::optional<float>>;
  const Loss l = !loss.has_value()      ? Loss(std::optional<float>())
                 : std::isfinite(*loss) ? Loss(std::optional<float>(static_cast<float>(*loss)))
                                        : Loss(FailedPreconditionError("the loss was not finite"));
  m.session->Computed(l, samples, compute);
  const int64_t done = m.session->machine().state().local_steps;
  if (!m.checkpoint.dir.empty() && m.checkpoint.every > 0 && done > 0 &&
      done % m.checkpoint.every == 0) {
    WriteCheckpoint(*m.session, m.work, m.hooks, m.telemetry.get(), m.checkpoint);
  }
  return OkStatus();
}

void Peer::Stop() { impl_->stop.store(true); }

// The report's reader keeps the same bounds (a report line comes from another process).
static_assert(Peer::kMaxScalarName == node::GossipProgress::kMaxScalarName);
static_assert(Peer::kMaxScalars == node::GossipProgress::kMaxScalars);

Status Peer::Log(const std::string& name, double value) {
  const bool well_named = !name.empty() && name.size() <= kMaxScalarName &&
                          std::all_of(name.begin(), name.end(), [](char c) {
                            return std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
                                   c == '.' || c == '/' || c == '-';
                          });
  if (!well_named) {
    return InvalidArgumentError("log: name '" + name + "': 1 to " + std::to_string(kMaxScalarName) +
                                " characters of letters, digits, _ . / -");
  }
  if (!std::isfinite(value)) {
    return InvalidArgumentError("log: " + name + " is not finite");
  }
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto& scalars = impl_->scalars;
  if (scalars.count(name) == 0 && scalars.size() >= kMaxScalars) {
    return InvalidArgumentError("log: " + name + ": at most " + std::to_string(kMaxScalars) +
                                " names are kept");
  }
  scalars[name] = value;
  return OkStatus();
}

void Peer::EndTraining() {
  impl_->ended.store(true);
  impl_->session->EndTraining();
}

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
