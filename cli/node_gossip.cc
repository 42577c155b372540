#include "cli/node_gossip.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "api/peer.h"
#include "api/peer_options.h"
#include "base/check.h"
#include "base/clock.h"
#include "base/log.h"
#include "cli/node_command.h"
#include "cli/run_dir.h"
#include "node/config/train_config.h"
#include "node/train/checkpoint.h"
#include "node/train/sharding.h"
#include "node/train/trainer.h"

namespace murmur::node {
namespace {

// A run that failed: exit 2 for what the operator must change (a model or checkpoint this node
// cannot use, a bad option), 1 otherwise.
int Failed(const Status& status) {
  if (status.code() == StatusCode::kFailedPrecondition ||
      status.code() == StatusCode::kInvalidArgument) {
    return RefuseNode(status);
  }
  std::fprintf(stderr, "murmur node: %s\n", status.ToString().c_str());
  return 1;
}

// The peer's settings: the node's own options as resolved once (its peer's by NodeCommand, its
// gossip's by RunGossipNode, the data's size by LoadNodeWork), and what only the node knows.
api::PeerOptions PeerSettings(const NodeConfig& config, const PeerNodeOptions& peer,
                              GossipPeerOptions gossip, int64_t shard_rows,
                              const kernels::Device& device) {
  gossip.shard_samples = shard_rows;
  gossip.same_init = !gossip.per_node_init;
  gossip.join_timeout = Duration{0};  // a node trains on alone, saying so
  gossip.schedule_rate = true;        // the cluster's schedule over the cluster's samples
  api::PeerOptions o = api::PeerOptionsWith(config, peer, std::move(gossip));
  o.device = device;
  return o;
}

api::SavedState TrainerSections(TrainerState state) {
  api::SavedState out;
  out.tensors["velocity"] = std::move(state.velocity);
  out.text["rng"] = std::move(state.rng);
  out.indices["order"] = std::move(state.order);
  out.numbers["cursor"] = static_cast<uint64_t>(state.cursor);
  out.numbers["trainer_steps"] = static_cast<uint64_t>(state.steps);
  return out;
}

// The trainer's state from its checkpoint sections (read through node::Checkpoint's accessors,
// which name a missing section), with the parameters the peer restored.
StatusOr<TrainerState> TrainerStateFrom(const api::SavedState& saved, std::vector<float> params) {
  const Checkpoint c{saved.text, saved.numbers, saved.tensors, saved.indices};
  TrainerState state;
  state.params = std::move(params);
  MURMUR_ASSIGN_OR_RETURN(state.velocity, c.Tensor("velocity"));
  MURMUR_ASSIGN_OR_RETURN(state.rng, c.Text("rng"));
  MURMUR_ASSIGN_OR_RETURN(state.order, c.Indices("order"));
  MURMUR_ASSIGN_OR_RETURN(const uint64_t cursor, c.Number("cursor"));
  MURMUR_ASSIGN_OR_RETURN(const uint64_t steps, c.Number("trainer_steps"));
  constexpr uint64_t kMax = uint64_t{1} << 53;  // any count a real run reaches
  if (cursor >= kMax || steps >= kMax) return DataLossError("an implausible cursor or step count");
  state.cursor = static_cast<int64_t>(cursor);
  state.steps = static_cast<int64_t>(steps);
  return state;
}

// The node's own work: its data, its model and the Trainer over its shard, with the cluster's
// common initial model set.
struct NodeWork {
  TrainTest data;
  std::optional<Model<float>> model;
  Dataset eval_subset;  // the periodic evaluations' rows
  RealClock clock;
  std::unique_ptr<Trainer> trainer;
};

// Loads the data and builds the trainer; every failure here is the operator's to fix (exit 2).
StatusOr<std::unique_ptr<NodeWork>> LoadNodeWork(const NodeConfig& config,
                                                 const kernels::Device& device,
                                                 GossipPeerOptions& options) {
  if (config.shard_index >= config.shard_count) {
    return InvalidArgumentError(fmt::format("shard_index {} must be less than shard_count {}",
                                            config.shard_index, config.shard_count));
  }
  auto w = std::make_unique<NodeWork>();
  MURMUR_ASSIGN_OR_RETURN(w->data, LoadTrainData(config.gossip.train));
  MURMUR_ASSIGN_OR_RETURN(
      w->model, Model<float>::Create(TrainModelSpec(config.gossip.train, w->data.train), device));
  options.epoch_samples = w->data.train.rows;  // the session checks the rules once it starts
  auto strategy = ParseShardStrategy(config.gossip.train.shard_strategy);
  MURMUR_ASSIGN_OR_RETURN(
      auto rows, ShardRows(w->data.train.rows, config.shard_index, config.shard_count, *strategy));
  // Each node shuffles its own shard in its own order.
  options.train.seed =
      config.gossip.train.seed * 1000003ULL + static_cast<uint64_t>(config.shard_index);
  // The model, its optimizer state and this node's shard go to the model's device before the
  // node joins: a device that cannot hold them is refused here.
  MURMUR_ASSIGN_OR_RETURN(w->trainer, Trainer::Create(*w->model, w->data.train, std::move(rows),
                                                      &w->data.test, options.train, w->clock));
  w->eval_subset = w->data.test;
  w->eval_subset.Truncate(options.eval_samples);
  w->eval_subset.Densify();  // evaluated every eval_every steps: convert its rows once
  return w;
}

// The report lines: JSON, text every report interval and at the end, or none; and the run
// directory's time series.
std::function<void(const api::Progress&, bool)> ProgressPrinter(
    const NodeConfig& config, std::optional<SeriesWriter>& series) {
  if (config.report == "none" && !series.has_value()) return nullptr;
  return [&config, &series](const api::Progress& p, bool final) {
    if (series) series->Write(p.id, p.report, p.straggle);
    if (config.report == "json") {
      std::printf("%s\n", p.report.c_str());
    } else if (config.report != "none" && final) {
      std::printf("node %llu: done (%s) at step %llu, test accuracy %.4f, %.2f MB sent\n",
                  static_cast<unsigned long long>(p.id), p.end_reason.c_str(),
                  static_cast<unsigned long long>(p.step), p.accuracy,
                  static_cast<double>(p.bytes_sent) / 1e6);
    } else if (config.report != "none") {
      std::printf("node %llu: step %llu, loss %.4f, accuracy %s, sent %.2f MB, lag %llu\n",
                  static_cast<unsigned long long>(p.id), static_cast<unsigned long long>(p.step),
                  p.loss, p.accuracy >= 0 ? fmt::format("{:.4f}", p.accuracy).c_str() : "-",
                  static_cast<double>(p.bytes_sent) / 1e6,
                  static_cast<unsigned long long>(p.max_lag));
    }
    std::fflush(stdout);
  };
}

// What the peer needs of the node beyond its buffer: its own start, momentum reset, stop signal,
// report lines, and the Trainer's state in the checkpoints.
api::Hooks NodeHooks(const NodeConfig& config, const GossipPeerOptions& options, NodeWork& w,
                     std::optional<SeriesWriter>& series) {
  api::Hooks hooks;
  hooks.launcher_environment = false;  // the node's keys are its own
  hooks.dimension_mismatch_limit = 0;  // a peer cannot end a node's run by sending bad sizes
  hooks.model = w.model->spec().ToString();
  // What a resumed checkpoint must have been written by: the same cluster, data, shard and
  // compression (the model is checked separately).
  hooks.run_identity =
      fmt::format("cluster {}, task {}, shard {}/{} ({}), compress {}", config.cluster,
                  config.gossip.train.task, config.shard_index, config.shard_count,
                  config.gossip.train.shard_strategy, GossipAveraging(config.gossip));
  Trainer& t = *w.trainer;
  if (options.per_node_init) {
    hooks.started = [&w, &t, seed = options.init_seed](uint64_t id) {
      std::vector<float> own(static_cast<size_t>(w.model->NumParams()));
      w.model->Initialize(std::span<float>(own), OwnInitSeed(seed, id));
      return t.SetParams(own);
    };
  }
  hooks.replaced = [&t] { t.ResetOptimizerState(); };
  hooks.memory = [&t](MemoryUse& memory) { t.AddMemory(memory); };
  hooks.stop = StopRequested;
  hooks.save_state = [&t]() -> StatusOr<api::SavedState> {
    MURMUR_ASSIGN_OR_RETURN(TrainerState state, t.SaveState());
    return TrainerSections(std::move(state));
  };
  hooks.restore_state = [&t](const api::SavedState& saved) -> Status {
    MURMUR_ASSIGN_OR_RETURN(std::vector<float> params, t.ParamsOnHost());
    MURMUR_ASSIGN_OR_RETURN(TrainerState state, TrainerStateFrom(saved, std::move(params)));
    return t.RestoreState(state);
  };
  hooks.progress = ProgressPrinter(config, series);
  return hooks;
}

// One Trainer step per turn until the peer says the run is over.
void TrainOnPeer(api::Peer& peer, Trainer& t) {
  bool told_skip = false;
  while (true) {
    StatusOr<api::Turn> turn = peer.Next();
    if (!turn.ok() || !turn->step) break;
    const auto t0 = std::chrono::steady_clock::now();
    StatusOr<float> loss = t.Step(turn->lr);
    if (!loss.ok() && !told_skip) {  // the trainer's reason and advice, once; the peer counts each
      told_skip = true;
      MURMUR_LOG_WARN("node {}: {}", peer.GetProgress().id, loss.status().message());
    }
    const double compute_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    MURMUR_CHECK_OK(peer.Done(loss.ok() ? *loss : std::numeric_limits<double>::quiet_NaN(),
                              t.last_batch_rows(), compute_s));
  }
}

}  // namespace

int RunGossipNode(const NodeConfig& config, const PeerNodeOptions& peer_options,
                  const kernels::Device& device) {
  auto options = GossipOptionsFrom(config.gossip);
  if (!options.ok()) return RefuseNode(options.status());
  auto work = LoadNodeWork(config, device, *options);
  if (!work.ok()) return RefuseNode(work.status());
  NodeWork& w = **work;
  Trainer& t = *w.trainer;
  // The cluster's common initial model (every node draws the same), or one of this node's own
  // drawn from its id once the peer knows it.
  {  // not kept: the peer copies the starting model it needs
    std::vector<float> initial(static_cast<size_t>(w.model->NumParams()));
    w.model->Initialize(std::span<float>(initial), options->init_seed);
    if (Status set = t.SetParams(initial); !set.ok()) return Failed(set);
  }
  std::optional<SeriesWriter> series;
  if (!config.run_dir.empty()) series.emplace(config.run_dir);
  api::Hooks hooks = NodeHooks(config, *options, w, series);
  api::EvaluateFn evaluate = [&w, &t](bool full) -> std::optional<double> {
    auto r = Evaluate<float>(*w.model, t.params(), full ? w.data.test : w.eval_subset);
    if (!r.ok()) return std::nullopt;
    return r->accuracy;
  };
  auto peer = api::Peer::Start(PeerSettings(config, peer_options, *options, t.shard_rows(), device),
                               t.params(), evaluate, std::move(hooks));
  if (!peer.ok()) return Failed(peer.status());
  TrainOnPeer(**peer, t);
  StatusOr<api::Progress> result = (*peer)->Finish();
  if (!result.ok()) return Failed(result.status());  // save_model's failure included
  MURMUR_LOG_INFO(
      "node {}: done ({}) at step {}, test accuracy {}", result->id,
      result->end_reason.empty() ? "stopped before training" : result->end_reason, result->step,
      result->accuracy >= 0 ? fmt::format("{:.4f}", result->accuracy) : "not evaluated");
  return 0;
}

}  // namespace murmur::node
