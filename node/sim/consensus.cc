#include "node/sim/consensus.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <queue>
#include <random>
#include <string>

#include "gossip/choco.h"
#include "node/sim/wire.h"

namespace murmur::sim {
namespace {

gossip::NodeId IdOf(size_t i) { return i + 1; }

struct Event {
  TimePoint at;
  uint64_t order = 0;
  bool arrived = false;  // false: its first byte reaches the NIC; true: its last byte is in
  std::shared_ptr<Wire> wire;
  bool operator>(const Event& o) const { return at != o.at ? at > o.at : order > o.order; }
};

class Run {
 public:
  Run(const ConsensusOptions& o, const std::function<void(const ConsensusRound&)>& progress)
      : o_(o), progress_(progress), net_(o.nodes, o.link, o.seed) {}

  StatusOr<ConsensusResult> Go() {
    const auto wall_start = std::chrono::steady_clock::now();
    MURMUR_RETURN_IF_ERROR(Start());
    for (int r = 0; r < o_.max_rounds; ++r) {
      MURMUR_RETURN_IF_ERROR(Round(r));
      if (progress_) progress_(result_.rounds.back());
      if (result_.rounds.back().error <= o_.tolerance) {
        result_.rounds_to_tolerance = r + 1;
        break;
      }
    }
    for (const auto& node : nodes_) result_.gamma_halvings += node->gamma_halvings();
    result_.virtual_s = Seconds(now_.time_since_epoch());
    result_.wall_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    return std::move(result_);
  }

 private:
  Status Start() {
    const size_t d = o_.dimension;
    for (size_t i = 0; i < o_.nodes; ++i) view_.push_back(IdOf(i));
    const std::vector<float> initial(d, 0.0f);  // the streams' version 0, shared by all
    std::mt19937_64 rng(o_.seed);
    std::normal_distribution<float> normal;
    average_.assign(d, 0.0);
    for (size_t i = 0; i < o_.nodes; ++i) {
      gossip::ChocoOptions c = o_.choco;
      c.self = IdOf(i);
      c.incarnation = 1;
      c.dimension = o_.dimension;
      c.max_copies = 64;  // every in-peer's stream (log2 N of them on the exponential graph)
      MURMUR_ASSIGN_OR_RETURN(
          auto node, gossip::ChocoGossip::Create(c, initial, initial, /*from_initial=*/true));
      result_.gamma = node->gamma();
      nodes_.push_back(std::move(node));
      std::vector<float> x(d);
      for (float& v : x) v = normal(rng);
      for (size_t k = 0; k < d; ++k) average_[k] += x[k] / static_cast<double>(o_.nodes);
      x_.push_back(std::move(x));
    }
    start_spread_ = std::sqrt(SquaredSpread().first);
    if (start_spread_ == 0) return InvalidArgumentError("consensus: the start vectors agree");
    return OkStatus();
  }

  // (Σ_i ‖x_i − x̄‖², max_i ‖x_i − x̄‖²)
  std::pair<double, double> SquaredSpread() const {
    double total = 0, worst = 0;
    for (const auto& x : x_) {
      double s = 0;
      for (size_t k = 0; k < x.size(); ++k) {
        const double e = x[k] - average_[k];
        s += e * e;
      }
      total += s;
      worst = std::max(worst, s);
    }
    return {total, worst};
  }

  Status Round(int r) {
    const auto round = static_cast<uint64_t>(r);
    std::vector<gossip::ChocoRoundStats> stats(nodes_.size());
    for (size_t i = 0; i < nodes_.size(); ++i) {
      MURMUR_ASSIGN_OR_RETURN(stats[i], nodes_[i]->Publish(x_[i], view_, round));
      Collect(i, round);
    }
    TimePoint end = now_;
    while (!events_.empty()) {
      Event e = events_.top();
      events_.pop();
      end = std::max(end, e.at);
      if (!e.arrived) {
        events_.push({net_.Receive(e.wire->to, e.wire->bytes, e.at), order_++, true, e.wire});
        continue;
      }
      Deliver(*e.wire, e.at, round);
    }
    now_ = end;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      nodes_[i]->Mix(x_[i], view_, round, nullptr, stats[i]);
    }
    const auto [total, worst] = SquaredSpread();
    const double per_node = start_spread_ / std::sqrt(static_cast<double>(nodes_.size()));
    result_.rounds.push_back({r + 1, std::sqrt(total) / start_spread_, std::sqrt(worst) / per_node,
                              Seconds(now_.time_since_epoch()), result_.bytes});
    return OkStatus();
  }

  // Node i's outgoing messages, sent at the round's time (its uplink serializes them).
  void Collect(size_t i, uint64_t round) {
    for (gossip::ChocoOutgoing& out : nodes_[i]->TakeOutput()) {
      const size_t to = out.to - 1;
      if (to >= nodes_.size()) continue;
      gossip::Envelope e;
      e.sender_id = IdOf(i);
      e.incarnation = 1;
      e.step_clock = round;
      e.sequence = ++sequence_;
      if (std::holds_alternative<gossip::SnapshotReply>(out.payload)) ++result_.snapshots;
      e.payload = std::move(out.payload);
      auto wire = MakeWire(i, to, std::move(e), std::move(out.frame), o_.wire_scale);
      ++result_.messages;
      result_.bytes += wire->bytes;
      for (uint64_t v : {round, uint64_t{i}, uint64_t{to}, wire->bytes}) {
        result_.trace_hash = TraceMix(result_.trace_hash, v);
      }
      const auto arrival = net_.Send(i, to, wire->bytes, now_);
      if (!arrival.has_value()) continue;  // lost: the stream's next update finds a gap
      events_.push({*arrival, order_++, false, std::move(wire)});
    }
  }

  void Deliver(const Wire& wire, TimePoint at, uint64_t round) {
    auto envelope = OpenWire(wire);
    if (!envelope.ok()) {
      ++result_.rejected;
      return;
    }
    gossip::ChocoIncoming in{envelope->sender_id, envelope->incarnation, envelope->payload, {}};
    if (wire.frame) in.frame = *wire.frame;
    const auto verdict = nodes_[wire.to]->Step(in, at).verdict;
    if (verdict == gossip::ChocoVerdict::kRejected || verdict == gossip::ChocoVerdict::kOutlier) {
      ++result_.rejected;
    }
    // A snapshot request or reply it caused leaves when the message is in.
    const TimePoint saved = now_;
    now_ = at;
    Collect(wire.to, round);
    now_ = saved;
  }

  const ConsensusOptions& o_;
  const std::function<void(const ConsensusRound&)>& progress_;
  NetworkModel net_;
  std::vector<gossip::NodeId> view_;
  std::vector<std::unique_ptr<gossip::ChocoGossip>> nodes_;
  std::vector<std::vector<float>> x_;
  std::vector<double> average_;
  double start_spread_ = 0;
  TimePoint now_{};
  uint64_t sequence_ = 0, order_ = 0;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  ConsensusResult result_;
};

}  // namespace

Status ConsensusOptions::Validate() const {
  if (nodes < 2) return InvalidArgumentError("consensus needs at least 2 nodes");
  if (dimension < 1) return InvalidArgumentError("consensus: dimension must be at least 1");
  if (max_rounds < 1) return InvalidArgumentError("consensus: rounds must be at least 1");
  if (!(tolerance >= 0)) return InvalidArgumentError("consensus: tolerance must be >= 0");
  if (!(wire_scale > 0)) return InvalidArgumentError("consensus: wire_scale must be positive");
  return OkStatus();
}

StatusOr<ConsensusResult> RunConsensus(const ConsensusOptions& options,
                                       const std::function<void(const ConsensusRound&)>& progress) {
  MURMUR_RETURN_IF_ERROR(options.Validate());
  return Run(options, progress).Go();
}

int RoundsTo(const ConsensusResult& result, double error) {
  for (const ConsensusRound& r : result.rounds) {
    if (r.error <= error) return r.round;
  }
  return -1;
}

}  // namespace murmur::sim
