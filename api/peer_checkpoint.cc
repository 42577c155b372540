#include "api/peer_checkpoint.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "base/log.h"
#include "kernels/memory.h"
#include "node/train/checkpoint.h"

namespace murmur::api {
namespace {

node::Checkpoint ToSections(SavedState state) {
  node::Checkpoint c;
  c.text = std::move(state.text);
  c.numbers = std::move(state.numbers);
  c.tensors = std::move(state.tensors);
  c.indices = std::move(state.indices);
  return c;
}

SavedState FromSections(node::Checkpoint c) {
  SavedState state;
  state.text = std::move(c.text);
  state.numbers = std::move(c.numbers);
  state.tensors = std::move(c.tensors);
  state.indices = std::move(c.indices);
  return state;
}

void Count(node::NodeTelemetry* telemetry, std::string_view what, int64_t step,
           Duration took = Duration::zero()) {
  if (telemetry != nullptr) telemetry->CountCheckpoint(what, step, took);
}

// The buffer, the caller's sections, then the machine's clocks and public copy: a refusal by
// the caller leaves the machine as it started (it joins with a peer's model).
Status Resume(node::GossipSession& session, node::GossipWork& work, const Hooks& hooks,
              node::GossipResume resume) {
  const std::span<float> params = work.params();
  if (resume.params.size() != params.size()) {
    return DataLossError("it holds " + std::to_string(resume.params.size()) +
                         " parameters, the model has " + std::to_string(params.size()));
  }
  MURMUR_RETURN_IF_ERROR(kernels::CopyBytes(work.device(), params.data(), kernels::Device::Cpu(),
                                            resume.params.data(), params.size_bytes()));
  MURMUR_RETURN_IF_ERROR(hooks.restore_state(FromSections(std::move(resume.caller))));
  return session.machine().Resume(std::move(resume.node));
}

}  // namespace

Status RestoreCheckpoint(node::GossipSession& session, node::GossipWork& work, const Hooks& hooks,
                         node::NodeTelemetry* telemetry,
                         const node::GossipCheckpointOptions& options) {
  std::error_code error;
  std::filesystem::create_directories(options.dir, error);
  if (error || !std::filesystem::is_directory(options.dir)) {
    return InvalidArgumentError("checkpoint_dir: cannot create '" + options.dir +
                                "': " + error.message());
  }
  const std::string path = options.Path();
  auto read = node::ReadCheckpoint(path);
  if (read.status().code() == StatusCode::kNotFound) {
    MURMUR_LOG_INFO("node {}: no checkpoint in '{}': starting afresh", session.id(), options.dir);
    Count(telemetry, "none", 0);
    return OkStatus();
  }
  StatusOr<node::GossipResume> resume = read.ok() ? node::ReadGossipCheckpoint(options, *read)
                                                  : StatusOr<node::GossipResume>(read.status());
  if (resume.status().code() == StatusCode::kFailedPrecondition) return resume.status();
  const Status restored =
      resume.ok() ? Resume(session, work, hooks, *std::move(resume)) : resume.status();
  if (!restored.ok()) {
    // Written atomically and checksummed, so this is a damaged disk or a foreign file: set it
    // aside for a person to look at and join from a peer.
    const std::string aside = path + ".corrupt";
    std::rename(path.c_str(), aside.c_str());
    MURMUR_LOG_ERROR(
        "node {}: cannot resume from '{}' ({}); moved it to '{}' and joining with a "
        "peer's model",
        session.id(), path, restored.ToString(), aside);
    Count(telemetry, "corrupt", 0);
    return OkStatus();
  }
  const gossip::GossipNodeState& s = session.machine().state();
  MURMUR_LOG_INFO("node {}: resumed from '{}' at step {} ({} local steps, {} samples)",
                  session.id(), path, s.step, s.local_steps, s.samples);
  Count(telemetry, "resumed", static_cast<int64_t>(s.step));
  return OkStatus();
}

void WriteCheckpoint(node::GossipSession& session, node::GossipWork& work, const Hooks& hooks,
                     node::NodeTelemetry* telemetry, const node::GossipCheckpointOptions& options) {
  if (!session.joined()) return;
  const auto t0 = std::chrono::steady_clock::now();
  const std::span<float> params = work.params();
  std::vector<float> host(params.size());
  Status written = kernels::CopyBytes(kernels::Device::Cpu(), host.data(), work.device(),
                                      params.data(), params.size_bytes());
  StatusOr<SavedState> caller = written.ok() ? hooks.save_state() : StatusOr<SavedState>(written);
  StatusOr<node::Checkpoint> checkpoint =
      caller.ok() ? node::MakeGossipCheckpoint(
                        options, std::move(host), ToSections(*std::move(caller)),
                        session.machine().state(), session.machine().PublicCopyOnHost())
                  : StatusOr<node::Checkpoint>(caller.status());
  written =
      checkpoint.ok() ? node::WriteCheckpoint(options.Path(), *checkpoint) : checkpoint.status();
  const int64_t step = static_cast<int64_t>(session.machine().state().step);
  if (!written.ok()) {
    MURMUR_LOG_ERROR("node {}: checkpoint at step {} failed: {}", session.id(), step,
                     written.ToString());
  }
  Count(telemetry, written.ok() ? "written" : "write_failed", step,
        std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now() - t0));
}

}  // namespace murmur::api
