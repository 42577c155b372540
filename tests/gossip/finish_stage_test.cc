// The node's side of the consensus finish (gossip/finish_stage.h): off when finish_wait is 0,
// the average adopted by every member with how far it moved, refusals by reason, verdicts
// counted.

#include "gossip/finish_stage.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

namespace murmur::gossip {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(FinishStageTest, OffWhenTheWaitIsZero) {
  FinishStage off(1, 4, seconds(0));
  off.Ensure({1, 2}, TimePoint{});
  EXPECT_FALSE(off.on());
  EXPECT_FALSE(off.Settled());
}

TEST(FinishStageTest, TwoMembersAdoptTheirAverageAndSayHowFarItMoved) {
  const std::vector<NodeId> live = {1, 2};
  std::map<NodeId, FinishStage> stage;
  std::map<NodeId, std::vector<float>> model = {{1, {1, 1, 1, 1}}, {2, {3, 3, 3, 3}}};
  for (NodeId id : live) {
    stage.emplace(id, FinishStage(id, 4, seconds(2)));
    stage.at(id).Ensure(live, TimePoint{});
    ASSERT_TRUE(stage.at(id).on());
  }
  for (NodeId id : live) stage.at(id).Start(model.at(id), live, TimePoint{}, true);
  for (bool more = true; more;) {
    more = false;
    for (auto& [id, s] : stage) {
      for (SendTo& send : s.TakeOutput()) {
        more = true;
        // A receipt carries no frame.
        const std::span<const std::byte> frame =
            send.frame ? std::span<const std::byte>(*send.frame) : std::span<const std::byte>();
        stage.at(send.to).Step(
            id, std::get<FinishMessage>(send.payload), frame,
            [&] { return std::span<const float>(model.at(send.to)); },
            TimePoint{} + milliseconds(1));
      }
    }
  }
  for (NodeId id : live) {
    SCOPED_TRACE("member " + std::to_string(id));
    FinishStage& s = stage.at(id);
    ASSERT_TRUE(s.outcome().has_value());
    ASSERT_TRUE(s.outcome()->averaged);
    EXPECT_EQ(s.outcome()->contributors, 2u);
    for (float v : s.outcome()->model) EXPECT_NEAR(v, 2.0f, 1e-2);
    // ‖x̄ − x_i‖ / ‖x̄‖ = 1 / 2 for both.
    EXPECT_NEAR(s.Moved(s.outcome()->model), 0.5, 1e-2);
    EXPECT_TRUE(s.TakeRefusals().empty());
    uint64_t counted = 0;
    for (const auto& [name, n] : s.verdicts()) counted += n;
    EXPECT_GE(counted, 1u);
  }
}

TEST(FinishStageTest, AFinishMessageOfTheWrongSizeIsRefusedByReasonAndCounted) {
  FinishStage a(1, 4, seconds(2)), b(2, 8, seconds(2));
  a.Ensure({1, 2}, TimePoint{});
  b.Ensure({1, 2}, TimePoint{});
  const std::vector<float> eight(8, 1.0f);
  const std::vector<float> four(4, 1.0f);
  b.Start(eight, {1, 2}, TimePoint{}, true);  // contributes 8 values to collector 1
  std::vector<SendTo> out = b.TakeOutput();
  ASSERT_FALSE(out.empty());
  ASSERT_EQ(out[0].to, 1u);
  a.Step(
      2, std::get<FinishMessage>(out[0].payload), *out[0].frame,
      [&] { return std::span<const float>(four); }, TimePoint{});
  const std::vector<Refusal> refused = a.TakeRefusals();
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].from, 2u);
  EXPECT_NE(refused[0].reason, "");
  EXPECT_EQ(a.verdicts().size(), 1u);
  EXPECT_TRUE(a.TakeRefusals().empty()) << "handed back once";
}

}  // namespace
}  // namespace murmur::gossip
