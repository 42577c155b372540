// SyncNode's parameter-server roles (mode ps; param_server.h): the roles' creation, the
// servers' single point of failure, and the final model of a sharded server assembled at
// server 0 for its evaluation.

#include <fmt/format.h>

#include <algorithm>

#include "base/check.h"
#include "coding/update_codec.h"
#include "gossip/sync_node.h"

namespace murmur::gossip {

uint64_t SyncNode::UpdatesPerIteration() const {
  return IsServer() && plan_.ps.sync != PsSync::kFull ? static_cast<uint64_t>(plan_.workers) : 1;
}

void SyncNode::StartPs() {
  const int64_t servers = plan_.ps.servers;
  const auto dim = static_cast<uint32_t>(params_.size());
  std::span<const float> model = this->model();
  if (rank_ < servers) {
    const auto [begin, end] = PsSlice(model.size(), servers, rank_);
    auto server =
        PsServer::Create({rank_, plan_.workers, o_.batch, dim, plan_.ps, o_.momentum, o_.device},
                         model.subspan(begin, end - begin));
    if (!server.ok()) return Fail(server.status());
    server_.emplace(*std::move(server));
    return;
  }
  const int64_t w = rank_ - servers, n = plan_.workers;
  for (int64_t p = o_.batch * w / n; p < o_.batch * (w + 1) / n; ++p) own_.push_back({p, 1.0});
  auto worker = PsWorker::Create({rank_, plan_.workers, dim, plan_.ps, o_.push_compress},
                                 std::vector<float>(model.begin(), model.end()));
  if (!worker.ok()) return Fail(worker.status());
  worker_.emplace(*std::move(worker));
}

void SyncNode::CheckPsMembers(const MemberView& view, const std::vector<NodeId>& live,
                              TimePoint now) {
  for (size_t r = 0; r < ids_.size(); ++r) {
    const NodeId id = ids_[r];
    if (id == o_.self || std::binary_search(live.begin(), live.end(), id)) continue;
    const auto entry = std::find_if(view.members.begin(), view.members.end(),
                                    [&](const MemberEntry& m) { return m.id == id; });
    const bool ended =
        entry != view.members.end() && (entry->finished || entry->state == MemberState::kLeft);
    if (static_cast<int64_t>(r) < plan_.ps.servers) {
      if (ended || peer_finished_) continue;
      return Fail(UnavailableError(fmt::format(
          "parameter server {} (rank {}) is gone ({}): a parameter server is the run's single "
          "point of failure, and its slice of the model went with it",
          id, r, entry == view.members.end() ? "no longer in the view" : "declared dead")));
    }
    if (server_) {
      server_->DropWorker(static_cast<int64_t>(r));
      Dispatch(server_->TakeOutput(), now);
    }
  }
  if (server_ && server_->live_workers() == 0) {
    Fail(UnavailableError("every worker is gone: the parameter server has no one to train"));
  }
}

void SyncNode::FinishPs() {
  if (!server_) return;  // a worker has nothing to evaluate
  if (rank_ != 0) {
    const auto [begin, end] = server_->range();
    auto bytes = std::make_shared<std::vector<std::byte>>();
    coding::EncodeDense(model().subspan(begin, end - begin), *bytes);
    Emit(SendTo{ids_[0],
                CodedMessage{CodedMessage::Kind::kModel, s_.iteration, static_cast<uint32_t>(rank_),
                             static_cast<uint32_t>(params_.size())},
                std::move(bytes)});
    final_sent_ = true;
    return;
  }
  evaluating_final_ = true;
  s_.evaluated_at = s_.iteration;
  if (final_slices_ + 1 == static_cast<size_t>(plan_.ps.servers)) {
    final_sent_ = true;  // server 0: the final evaluation is asked for
    Emit(Evaluate{true, model()});
  }
}

void SyncNode::TakeFinalSlice(int64_t server, const CodedMessage& header,
                              std::span<const float> slice, TimePoint now) {
  const uint64_t bit = uint64_t{1} << server;
  if (rank_ != 0 || header.kind != CodedMessage::Kind::kModel ||
      header.tree_position != static_cast<uint32_t>(server) || (final_from_ & bit) != 0) {
    return Reject(kRejectProtocol, ids_[static_cast<size_t>(server)],
                  "a server's message other than its one final slice to server 0");
  }
  final_from_ |= bit;
  const auto [begin, end] = PsSlice(params_.size(), plan_.ps.servers, server);
  MURMUR_CHECK_OK(kernels::Copy<float>(o_.device, params_.span().subspan(begin, end - begin),
                                       kernels::Device::Cpu(), slice));
  host_stale_ = true;
  ++final_slices_;
  if (evaluating_final_ && !final_sent_ &&
      final_slices_ + 1 == static_cast<size_t>(plan_.ps.servers)) {
    final_sent_ = true;
    Emit(Evaluate{true, model()});
  }
  Tick(now);
}

}  // namespace murmur::gossip
