#pragma once
// A gossip node's side of the consensus finish (consensus_finish.h): the machine exists from the
// start of training unless finish_wait is 0, or from a member's finish message while this node
// still joins (a restarted collector's members: held, not refused); it takes the views and the
// members' messages in every phase, starts with the node's final model, and ends with an outcome
// the node adopts or not. Its verdicts are counted by name and its refusals handed back by reason.
//
// Invariants: started at most once; the final model it started with stays as it is until the
// outcome (training is over). Sans-IO. Thread safety: none.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/clock.h"
#include "gossip/consensus_finish.h"
#include "gossip/node_io.h"

namespace murmur::gossip {

class FinishStage {
 public:
  // `finish_wait`: how long a member waits for the average (the collector averages what it has
  // after half of it); 0: no finish.
  FinishStage(NodeId self, uint32_t dimension, Duration finish_wait);

  // Creates the machine (unless the finish is off or it exists) with the view `live`.
  void Ensure(const std::vector<NodeId>& live, TimePoint now);
  bool on() const { return finish_ != nullptr; }

  // The following REQUIRE on().
  void View(const std::vector<NodeId>& live, TimePoint now) { finish_->View(live, now); }
  // A member's finish message. `own` gives this node's model when the finish has not started.
  void Step(NodeId from, const FinishMessage& header, std::span<const std::byte> frame,
            const std::function<std::span<const float>()>& own, TimePoint now);
  // The finish starts with `final_model` (the caller keeps it as it is until the outcome). A node
  // that trained nothing (a restart that found the run over) holds no model of the run's: it
  // takes the average without adding to it.
  void Start(std::span<const float> final_model, const std::vector<NodeId>& live, TimePoint now,
             bool trained);
  void Tick(TimePoint now) { finish_->Tick(now); }
  const std::optional<FinishOutcome>& outcome() const { return finish_->outcome(); }
  TimePoint deadline() const { return finish_->deadline(); }
  bool Settled() const { return on() && finish_->Settled(); }
  uint64_t HeldBytes() const { return on() ? finish_->HeldBytes() : 0; }
  // ‖x̄ − x_i‖ / ‖x̄‖: how far `average` is from the model the finish started with.
  double Moved(std::span<const float> average) const;
  // How the finish ended, once it has an outcome or the operator stopped the node while it
  // waited (a miss); logged, a miss as a warning (the run ends on a model not the cluster's).
  struct Report {
    bool averaged = false;
    uint32_t contributors = 0;
    NodeId collector = 0;  // whose average (averaged only)
    double moved = 0;      // Moved(the average)
  };
  Report Conclude() const;

  std::vector<SendTo> TakeOutput() { return finish_->TakeOutput(); }
  // The machine's refusals, and the messages Step refused, in order.
  std::vector<Refusal> TakeRefusals();
  const std::map<std::string, uint64_t>& verdicts() const { return verdicts_; }

 private:
  const NodeId self_;
  const uint32_t dimension_;
  const Duration wait_;
  std::unique_ptr<ConsensusFinish> finish_;
  std::span<const float> final_model_;  // on the host, from Start
  std::map<std::string, uint64_t> verdicts_;
  std::vector<Refusal> refusals_;
};

}  // namespace murmur::gossip
