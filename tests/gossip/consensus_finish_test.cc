// ConsensusFinish (gossip/consensus_finish.h) driven message by message under a manual clock:
// the average every member adopts, a member that dies before contributing, a collector that dies
// before answering, a result that never comes, a late contribution, and every refusal.

#include "gossip/consensus_finish.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "coding/update.h"

namespace murmur::gossip {
namespace {

using std::chrono::milliseconds;
constexpr uint32_t kDim = 257;

std::vector<float> Model(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> x(kDim);
  for (float& v : x) v = 1.0f + 0.05f * n(rng);  // members of one run: a few percent apart
  return x;
}

// A member per id, with its own model; messages are delivered by hand.
struct Members {
  explicit Members(std::vector<NodeId> ids, Duration resend = std::chrono::seconds(1))
      : live(std::move(ids)) {
    for (NodeId id : live) {
      ConsensusFinishOptions o;
      o.self = id;
      o.dimension = kDim;
      o.collect_wait = milliseconds(500);
      o.result_wait = milliseconds(1000);
      o.resend = resend;
      finish.emplace(id, ConsensusFinish(o));
      finish.at(id).View(live, TimePoint{});  // as GossipNode does from the start of training
      model.emplace(id, Model(id));
    }
  }
  // Delivers everything sent until nothing more is; messages to `dead` vanish.
  void Deliver(TimePoint now) {
    for (bool more = true; more;) {
      more = false;
      for (auto& [id, f] : finish) {
        for (SendTo& s : f.TakeOutput()) {
          more = true;
          if (dead.contains(s.to) || !finish.contains(s.to)) continue;
          const auto& header = std::get<FinishMessage>(s.payload);
          if (drop_receipts && header.kind == FinishMessage::Kind::kReceipt) continue;
          EXPECT_EQ(s.frame == nullptr, header.kind == FinishMessage::Kind::kReceipt);
          const std::vector<std::byte> none;
          const auto r =
              finish.at(s.to).Step(id, header, s.frame ? *s.frame : none, model.at(s.to), now);
          verdicts[FinishVerdictName(r.verdict)]++;
        }
      }
    }
  }
  std::vector<NodeId> live;
  std::set<NodeId> dead;
  bool drop_receipts = false;  // every receipt lost on the way
  std::map<NodeId, ConsensusFinish> finish;
  std::map<NodeId, std::vector<float>> model;
  std::map<std::string_view, int> verdicts;
};

std::vector<float> Average(const Members& m, const std::vector<NodeId>& ids) {
  std::vector<float> avg(kDim, 0.0f);
  for (NodeId id : ids) {
    for (uint32_t k = 0; k < kDim; ++k) avg[k] += m.model.at(id)[k] / static_cast<float>(ids.size());
  }
  return avg;
}

void ExpectAdopted(const Members& m, const std::vector<NodeId>& ids, uint32_t contributors,
                   const std::vector<float>& expected) {
  const std::vector<float>& first = m.finish.at(ids[0]).outcome()->model;
  for (NodeId id : ids) {
    SCOPED_TRACE("member " + std::to_string(id));
    const auto& o = m.finish.at(id).outcome();
    ASSERT_TRUE(o.has_value());
    ASSERT_TRUE(o->averaged) << o->why;
    EXPECT_EQ(o->contributors, contributors);
    EXPECT_EQ(o->model, first) << "every member holds bit-identical values";
    for (uint32_t k = 0; k < kDim; ++k) {
      ASSERT_NEAR(o->model[k], expected[k], 1e-3 * std::abs(expected[k])) << "index " << k;  // fp16
    }
  }
}

TEST(ConsensusFinishTest, EveryMemberAdoptsTheAverageOfAll) {
  for (size_t n : {1u, 2u, 5u, 16u}) {
    SCOPED_TRACE("members " + std::to_string(n));
    std::vector<NodeId> ids;
    for (size_t i = 0; i < n; ++i) ids.push_back(10 + 3 * i);
    Members m(ids);
    TimePoint now{};
    // Members start in reverse id order: the collector (lowest id) last, so contributions wait
    // for its Start.
    for (auto it = ids.rbegin(); it != ids.rend(); ++it) {
      m.finish.at(*it).Start(m.model.at(*it), ids, now);
      m.Deliver(now);
    }
    ExpectAdopted(m, ids, static_cast<uint32_t>(n), Average(m, ids));
    // Each non-collector sent one model, held until the collector's Start (its own final model
    // is the reference), and the collector one result to each.
    EXPECT_EQ(m.verdicts["deferred"], static_cast<int>(n - 1));
    EXPECT_EQ(m.verdicts["accepted"], static_cast<int>(n - 1));
  }
}

TEST(ConsensusFinishTest, OnlyTheCollectorHoldsASumAndNoneHoldsMoreThanItsFrames) {
  // A member holds its model (fp16 values) and its frame: 1.5 models of fp32 bytes; the
  // collector its own, the sum it averages in place and the result's frame, once it published.
  Members m({1, 2, 3});
  TimePoint now{};
  const uint64_t model = kDim * sizeof(float);
  for (NodeId id : {1, 2, 3}) EXPECT_EQ(m.finish.at(id).HeldBytes(), 0u) << "before Start";
  for (NodeId id : {3, 2}) m.finish.at(id).Start(m.model.at(id), m.live, now);
  for (NodeId id : {2, 3}) {
    EXPECT_GE(m.finish.at(id).HeldBytes(), model);
    EXPECT_LE(m.finish.at(id).HeldBytes(), model * 3 / 2 + 256) << "member " << id;
  }
  m.finish.at(1).Start(m.model.at(1), m.live, now);
  m.Deliver(now);
  ExpectAdopted(m, {1, 2, 3}, 3, Average(m, {1, 2, 3}));
  // Collector: own model, the average (the sum's bytes, moved into the outcome), two frames.
  EXPECT_LE(m.finish.at(1).HeldBytes(), 3 * model + 512);
  for (NodeId id : {2, 3}) {
    // The member's model, its frame and the adopted average.
    EXPECT_LE(m.finish.at(id).HeldBytes(), 5 * model / 2 + 256) << "member " << id;
  }
}

TEST(ConsensusFinishTest, MemberThatDiesBeforeContributingIsNotWaitedForPastItsDeath) {
  Members m({1, 2, 3, 4});
  TimePoint now{};
  for (NodeId id : {1, 2, 3}) m.finish.at(id).Start(m.model.at(id), m.live, now);
  m.Deliver(now);
  EXPECT_FALSE(m.finish.at(1).outcome().has_value()) << "the collector waits for member 4";
  now += milliseconds(100);
  m.dead.insert(4);
  for (NodeId id : {1, 2, 3}) m.finish.at(id).View({1, 2, 3}, now);
  m.Deliver(now);
  ExpectAdopted(m, {1, 2, 3}, 3, Average(m, {1, 2, 3}));
}

TEST(ConsensusFinishTest, CollectorAveragesWhatItHasAfterCollectWait) {
  Members m({1, 2, 3});
  TimePoint now{};
  for (NodeId id : {1, 2}) m.finish.at(id).Start(m.model.at(id), m.live, now);
  m.Deliver(now);
  now += milliseconds(499);
  m.finish.at(1).Tick(now);
  EXPECT_FALSE(m.finish.at(1).outcome().has_value());
  now += milliseconds(1);
  m.finish.at(1).Tick(now);
  m.Deliver(now);
  ExpectAdopted(m, {1, 2}, 2, Average(m, {1, 2}));
  // Member 3 was live, so the result went to it too: it adopts it when it starts.
  m.finish.at(3).Start(m.model.at(3), m.live, now);
  ASSERT_TRUE(m.finish.at(3).outcome().has_value());
  EXPECT_EQ(m.finish.at(3).outcome()->model, m.finish.at(1).outcome()->model);
  const std::vector<SendTo> out = m.finish.at(3).TakeOutput();
  ASSERT_EQ(out.size(), 1u) << "nothing to contribute any more, only its receipt";
  EXPECT_EQ(std::get<FinishMessage>(out[0].payload).kind, FinishMessage::Kind::kReceipt);
  EXPECT_EQ(out[0].to, 1u);
}

// When a finished node may leave without lingering: a member once it holds the average of
// every live member; the collector once the members are gone (never while one may still be
// reading its result); nobody after an average that left a live member out.
TEST(ConsensusFinishTest, SettledOnlyWhenNothingMoreCanBeAsked) {
  Members m({1, 2, 3});
  TimePoint now{};
  for (NodeId id : {1, 2, 3}) EXPECT_FALSE(m.finish.at(id).Settled()) << "before Start";
  for (NodeId id : {3, 2}) m.finish.at(id).Start(m.model.at(id), m.live, now);
  m.Deliver(now);
  for (NodeId id : {1, 2, 3}) EXPECT_FALSE(m.finish.at(id).Settled()) << "no result yet";
  m.drop_receipts = true;
  m.finish.at(1).Start(m.model.at(1), m.live, now);
  m.Deliver(now);
  ExpectAdopted(m, {1, 2, 3}, 3, Average(m, {1, 2, 3}));
  EXPECT_TRUE(m.finish.at(2).Settled());
  EXPECT_TRUE(m.finish.at(3).Settled());
  EXPECT_FALSE(m.finish.at(1).Settled()) << "no receipt: the collector waits for them to leave";
  m.finish.at(1).View({1, 3}, now);
  EXPECT_FALSE(m.finish.at(1).Settled());
  m.finish.at(1).View({1}, now);
  EXPECT_TRUE(m.finish.at(1).Settled());

  // An average without member 3 (collect_wait ran out): no one settles, member 3 may still
  // contribute late and be answered.
  Members late({1, 2, 3});
  for (NodeId id : {1, 2}) late.finish.at(id).Start(late.model.at(id), late.live, now);
  late.Deliver(now);
  now += milliseconds(500);
  late.finish.at(1).Tick(now);
  late.Deliver(now);
  ExpectAdopted(late, {1, 2}, 2, Average(late, {1, 2}));
  EXPECT_FALSE(late.finish.at(2).Settled()) << "its result counts 2 of 3 live members";
  EXPECT_FALSE(late.finish.at(1).Settled());
  // A missed finish never settles.
  Members alone({1, 2});
  alone.dead.insert(1);
  alone.finish.at(2).Start(alone.model.at(2), alone.live, now);
  alone.Deliver(now);
  alone.finish.at(2).Tick(now + milliseconds(1000));
  ASSERT_TRUE(alone.finish.at(2).outcome().has_value());
  EXPECT_FALSE(alone.finish.at(2).outcome()->averaged);
  EXPECT_FALSE(alone.finish.at(2).Settled());
}

// A member's program may keep its process long after it adopted the result (its own
// evaluation and save): the collector is done once each live member said it holds the result.
TEST(ConsensusFinishTest, TheCollectorIsDoneOnceEveryLiveMemberHoldsItsResult) {
  Members m({1, 2, 3});
  TimePoint now{};
  const FinishMessage receipt{FinishMessage::Kind::kReceipt, kDim, 3, 1};
  const std::vector<std::byte> none;
  for (NodeId id : {3, 2}) m.finish.at(id).Start(m.model.at(id), m.live, now);
  m.Deliver(now);
  EXPECT_EQ(m.finish.at(1).Step(2, receipt, none, m.model.at(1), now).verdict,
            FinishVerdict::kNotExpected)
      << "a receipt before the result was published";
  m.finish.at(1).Start(m.model.at(1), m.live, now);
  // Member 3's receipt is lost; member 2's arrives.
  for (SendTo& s : m.finish.at(1).TakeOutput()) {
    m.finish.at(s.to).Step(1, std::get<FinishMessage>(s.payload), *s.frame, m.model.at(s.to), now);
  }
  for (SendTo& s : m.finish.at(2).TakeOutput()) {
    ASSERT_EQ(s.to, 1u);
    EXPECT_EQ(std::get<FinishMessage>(s.payload), receipt) << "names the result it adopted";
    EXPECT_EQ(m.finish.at(1)
                  .Step(2, std::get<FinishMessage>(s.payload), none, m.model.at(1), now)
                  .verdict,
              FinishVerdict::kReceipt);
  }
  ASSERT_EQ(m.finish.at(3).TakeOutput().size(), 1u) << "one receipt per member";
  ExpectAdopted(m, {1, 2, 3}, 3, Average(m, {1, 2, 3}));
  EXPECT_FALSE(m.finish.at(1).Settled()) << "member 3 has said nothing and is still live";
  EXPECT_EQ(m.finish.at(1).Step(2, receipt, none, m.model.at(1), now).verdict,
            FinishVerdict::kDuplicate);
  // A receipt speaks for its sender only, and for the result this collector published.
  FinishMessage other = receipt;
  other.contributors = 2;
  EXPECT_EQ(m.finish.at(1).Step(3, other, none, m.model.at(1), now).verdict,
            FinishVerdict::kNotExpected);
  other = receipt;
  other.collector = 2;
  EXPECT_EQ(m.finish.at(1).Step(3, other, none, m.model.at(1), now).verdict,
            FinishVerdict::kNotExpected);
  EXPECT_EQ(m.finish.at(2).Step(3, receipt, none, m.model.at(2), now).verdict,
            FinishVerdict::kNotExpected)
      << "a member that published nothing takes no receipt";
  EXPECT_FALSE(m.finish.at(1).Settled());
  EXPECT_EQ(m.finish.at(1).Step(3, receipt, none, m.model.at(1), now).verdict,
            FinishVerdict::kReceipt);
  EXPECT_TRUE(m.finish.at(1).Settled()) << "every live member holds the result";
  EXPECT_TRUE(m.finish.at(1).TakeOutput().empty()) << "a receipt is not answered";
}

TEST(ConsensusFinishTest, LateContributionIsAnsweredOnceWithTheSameResult) {
  Members m({1, 2, 3});
  TimePoint now{};
  // Member 3 is out of the others' views when they finish: they average without it.
  for (NodeId id : {1, 2}) m.finish.at(id).View({1, 2}, now);
  for (NodeId id : {1, 2}) m.finish.at(id).Start(m.model.at(id), {1, 2}, now);
  m.Deliver(now);
  ExpectAdopted(m, {1, 2}, 2, Average(m, {1, 2}));
  // It finishes later and contributes: the collector answers with the published average.
  now += milliseconds(200);
  m.finish.at(3).Start(m.model.at(3), m.live, now);
  m.Deliver(now);
  EXPECT_EQ(m.verdicts["answered"], 1);
  ExpectAdopted(m, {1, 2, 3}, 2, Average(m, {1, 2}));
  const auto again = m.finish.at(1).Step(3, {FinishMessage::Kind::kContribution, kDim, 1},
                                         std::vector<std::byte>{}, m.model.at(1), now);
  EXPECT_EQ(again.verdict, FinishVerdict::kDuplicate) << "answered once per member";
  EXPECT_TRUE(m.finish.at(1).TakeOutput().empty());
}

TEST(ConsensusFinishTest, AResultThatDidNotArriveIsSentAgainWhenTheMemberResends) {
  Members m({1, 2, 3}, milliseconds(200));
  TimePoint now{};
  for (NodeId id : {3, 2}) m.finish.at(id).Start(m.model.at(id), m.live, now);
  m.Deliver(now);  // held at the collector until its Start
  m.finish.at(1).Start(m.model.at(1), m.live, now);
  // The result to member 3 is lost on the way (or refused there); member 2's arrives.
  for (SendTo& s : m.finish.at(1).TakeOutput()) {
    if (s.to != 2) continue;
    m.finish.at(2).Step(1, std::get<FinishMessage>(s.payload), *s.frame, m.model.at(2), now);
  }
  ExpectAdopted(m, {1, 2}, 3, Average(m, {1, 2, 3}));
  ASSERT_FALSE(m.finish.at(3).outcome().has_value());
  // A contribution sooner than `resend` after the answer is a duplicate: nothing goes out.
  const auto soon =
      m.finish.at(1).Step(3, {FinishMessage::Kind::kContribution, kDim, 1},
                          std::vector<std::byte>{}, m.model.at(1), now + milliseconds(100));
  EXPECT_EQ(soon.verdict, FinishVerdict::kDuplicate);
  EXPECT_TRUE(m.finish.at(1).TakeOutput().empty());
  // Member 3 resends its model after `resend`; the collector answers it again.
  now += milliseconds(200);
  m.finish.at(3).Tick(now);
  m.Deliver(now);
  EXPECT_EQ(m.verdicts["answered"], 1);
  ExpectAdopted(m, {1, 2, 3}, 3, Average(m, {1, 2, 3}));
  EXPECT_TRUE(m.finish.at(3).Settled());
}

// On a thin link a model takes a large part of a second; copies sent every `resend` would fill
// the link's queue ahead of the one still on its way. A member waits twice as long before each
// resend, and the collector answers a member again only after twice the wait of its answer
// before.
TEST(ConsensusFinishTest, ResendsAndRepeatedAnswersWaitTwiceAsLongEachTime) {
  Members m({1, 2}, milliseconds(100));
  TimePoint start{};
  m.finish.at(2).Start(m.model.at(2), m.live, start);
  ASSERT_EQ(m.finish.at(2).TakeOutput().size(), 1u);  // the contribution, lost on the way
  // Ticks every 10 ms until result_wait (1 s): resends at 100, 300, 700 ms from the start.
  std::vector<int64_t> resent_ms;
  for (int64_t ms = 10; ms < 1000; ms += 10) {
    m.finish.at(2).Tick(start + milliseconds(ms));
    for (const SendTo& s : m.finish.at(2).TakeOutput()) {
      EXPECT_EQ(s.to, 1u);
      resent_ms.push_back(ms);
    }
  }
  EXPECT_EQ(resent_ms, (std::vector<int64_t>{100, 300, 700}));
  // The collector published; member 2's contributions keep coming (its results are lost): each
  // answered only once the wait since the answer before, doubling from `resend`, has passed.
  Members c({1, 2}, milliseconds(100));
  c.finish.at(2).Start(c.model.at(2), c.live, start);
  c.Deliver(start);
  c.finish.at(1).Start(c.model.at(1), c.live, start);
  ASSERT_EQ(c.finish.at(1).TakeOutput().size(), 1u);  // the result to 2, lost
  std::vector<int64_t> answered_ms;
  for (int64_t ms = 10; ms < 1000; ms += 10) {
    const auto r =
        c.finish.at(1).Step(2, {FinishMessage::Kind::kContribution, kDim, 1},
                            std::vector<std::byte>{}, c.model.at(1), start + milliseconds(ms));
    const bool sent = !c.finish.at(1).TakeOutput().empty();
    EXPECT_EQ(sent, r.verdict == FinishVerdict::kAnswered) << ms;
    if (sent)
      answered_ms.push_back(ms);
    else
      EXPECT_EQ(r.verdict, FinishVerdict::kDuplicate) << ms;
  }
  EXPECT_EQ(answered_ms, (std::vector<int64_t>{100, 300, 700}));
}

TEST(ConsensusFinishTest, CollectorThatDiesBeforeAnsweringIsReplacedByTheNextLowest) {
  Members m({1, 2, 3, 4});
  m.dead.insert(1);
  TimePoint now{};
  for (NodeId id : {2, 3, 4}) m.finish.at(id).Start(m.model.at(id), m.live, now);
  m.Deliver(now);  // every contribution went to 1, which is gone
  now += milliseconds(300);
  for (NodeId id : {2, 3, 4}) m.finish.at(id).View({2, 3, 4}, now);
  m.Deliver(now);
  ExpectAdopted(m, {2, 3, 4}, 3, Average(m, {2, 3, 4}));
  EXPECT_EQ(m.finish.at(3).outcome()->collector, 2u);
}

TEST(ConsensusFinishTest, MemberWithNoResultKeepsItsModelAndSaysWhy) {
  Members m({1, 2});
  m.dead.insert(1);
  TimePoint now{};
  m.finish.at(2).Start(m.model.at(2), m.live, now);
  m.Deliver(now);
  now += milliseconds(999);
  m.finish.at(2).Tick(now);
  EXPECT_FALSE(m.finish.at(2).outcome().has_value());
  now += milliseconds(1);
  m.finish.at(2).Tick(now);
  const auto& o = m.finish.at(2).outcome();
  ASSERT_TRUE(o.has_value());
  EXPECT_FALSE(o->averaged);
  EXPECT_TRUE(o->model.empty());
  EXPECT_NE(o->why.find("no result from collector 1"), std::string::npos) << o->why;
}

// Encodes `x` as a member would (dense fp16).
std::vector<std::byte> Frame(std::vector<float> x, bool dense = true) {
  coding::Update u;
  u.dimension = static_cast<uint32_t>(x.size());
  u.dense = dense;
  if (!dense) {
    u.indices = {0};
    x.resize(1);
  }
  u.format = coding::QuantizeFloats(x, 10);
  u.values = x;
  std::vector<std::byte> bytes;
  coding::EncodeUpdate(u, bytes);
  return bytes;
}

TEST(ConsensusFinishTest, RefusesWhatIsNotAnHonestModelAndChangesNothing) {
  Members m({1, 2, 3});
  TimePoint now{};
  ConsensusFinish& c = m.finish.at(1);
  const auto& own = m.model.at(1);
  const FinishMessage contribution{FinishMessage::Kind::kContribution, kDim, 1};
  std::vector<float> far = own;
  for (float& v : far) v *= 10;  // 9 ‖x‖ away: beyond 4 ‖x‖
  // Before Start it is held (kDeferred), and judged against the final model at Start.
  EXPECT_EQ(c.Step(2, contribution, Frame(far), own, now).verdict, FinishVerdict::kDeferred);
  EXPECT_EQ(
      c.Step(2, {FinishMessage::Kind::kContribution, kDim + 1, 1}, Frame(own), own, now).verdict,
      FinishVerdict::kRejected);
  EXPECT_EQ(c.Step(2, contribution, Frame(own, /*dense=*/false), own, now).verdict,
            FinishVerdict::kRejected);
  std::vector<std::byte> corrupt = Frame(own);
  corrupt[60] ^= std::byte{0x10};
  const auto r = c.Step(2, contribution, corrupt, own, now);
  EXPECT_EQ(r.verdict, FinishVerdict::kRejected);
  EXPECT_EQ(r.failure, coding::DecodeFailure::kChecksumMismatch);
  // A result from a member that is neither this node's collector nor the lowest live id is a
  // relay: held, and not adopted on the word of one of the two other members.
  m.finish.at(3).Start(m.model.at(3), m.live, now);
  EXPECT_EQ(
      m.finish.at(3).Step(2, {FinishMessage::Kind::kResult, kDim, 2}, Frame(own), own, now).verdict,
      FinishVerdict::kRelayed);
  EXPECT_EQ(m.finish.at(3).Step(1, {FinishMessage::Kind::kResult, kDim, 0}, Frame(own), own, now).verdict,
            FinishVerdict::kRejected) << "a result of no contributors";
  EXPECT_FALSE(m.finish.at(3).outcome().has_value());
  // None of the refused contributions counted: the honest run averages exactly the three models.
  // The held one from 2 is refused at Start, for the caller to count; 2's honest model then counts.
  c.Start(own, m.live, now);
  const auto refusals = c.TakeRefusals();
  ASSERT_EQ(refusals.size(), 1u);
  EXPECT_EQ(refusals[0].first, 2u);
  EXPECT_EQ(refusals[0].second.verdict, FinishVerdict::kOutlier);
  EXPECT_TRUE(c.TakeRefusals().empty());
  m.finish.at(2).Start(m.model.at(2), m.live, now);
  m.Deliver(now);
  ExpectAdopted(m, {1, 2, 3}, 3, Average(m, {1, 2, 3}));
  // A second contribution from a member is not counted twice, and a result after the outcome
  // changes nothing.
  EXPECT_EQ(m.finish.at(3).Step(1, {FinishMessage::Kind::kResult, kDim, 3}, Frame(far), own, now).verdict,
            FinishVerdict::kDuplicate);
}

// A result that came before Start from a member that is no longer the lowest when this node
// starts is not kept: the new collector's result is adopted.
// A contribution lost on the way (a collector that restarted and did not know the member yet
// refuses it) is sent again, so the average still holds every member's model.
TEST(ConsensusFinishTest, ALostContributionIsSentAgainBeforeTheCollectorGivesUp) {
  Members m({1, 2, 3}, milliseconds(200));
  TimePoint now{};
  for (NodeId id : {1, 2}) m.finish.at(id).Start(m.model.at(id), m.live, now);
  m.Deliver(now);
  m.dead.insert(1);  // member 3's contribution is lost
  m.finish.at(3).Start(m.model.at(3), m.live, now);
  m.Deliver(now);
  EXPECT_FALSE(m.finish.at(1).outcome().has_value()) << "the collector waits for member 3";
  m.dead.clear();
  now += milliseconds(250);  // past resend (200 ms), before collect_wait (500 ms)
  for (NodeId id : {3, 2, 1}) m.finish.at(id).Tick(now);
  m.Deliver(now);
  ExpectAdopted(m, {1, 2, 3}, 3, Average(m, {1, 2, 3}));
}

// A member that trained no step (a restart that found the run over: its model is its
// initializer's) is not averaged in, and is not waited for past its say-so; a collector that
// trained nothing averages the others'. When nobody trained, the collector's model is as good.
TEST(ConsensusFinishTest, AMemberThatTrainedNothingTakesTheAverageWithoutAddingToIt) {
  for (NodeId untrained : {3, 1}) {
    SCOPED_TRACE("untrained member " + std::to_string(untrained));
    Members m({1, 2, 3}, milliseconds(200));
    TimePoint now{};
    for (NodeId id : {3, 2, 1}) {
      m.finish.at(id).Start(m.model.at(id), m.live, now, /*trained=*/id != untrained);
      m.Deliver(now);
    }
    std::vector<NodeId> trained =
        untrained == 1 ? std::vector<NodeId>{2, 3} : std::vector<NodeId>{1, 2};
    if (untrained == 1) {
      // A collector that trained nothing (a late restart) waits until its view held still for
      // `resend` (200 ms here, before collect_wait): its view may not hold every member yet.
      now += milliseconds(199);
      m.finish.at(1).Tick(now);
      EXPECT_FALSE(m.finish.at(1).outcome().has_value());
      now += milliseconds(1);
      m.finish.at(1).Tick(now);
      m.Deliver(now);
    }
    ExpectAdopted(m, {1, 2, 3}, 2, Average(m, trained));
  }
  Members none({1, 2});
  TimePoint now{};
  for (NodeId id : {2, 1}) none.finish.at(id).Start(none.model.at(id), none.live, now, false);
  none.Deliver(now);
  now += milliseconds(500);
  none.finish.at(1).Tick(now);
  none.Deliver(now);
  ExpectAdopted(none, {1, 2}, 1, Average(none, {1}));
  // A collector that trained nothing has no model to judge by: it judges what came against the
  // model closest to the others, so an outlier among honest models is refused and counted.
  Members judged({1, 2, 3, 4});
  judged.finish.at(1).Start(std::vector<float>(kDim, 0.0f), judged.live, now, false);
  for (NodeId id : {2, 3}) judged.finish.at(id).Start(judged.model.at(id), judged.live, now);
  judged.Deliver(now);
  std::vector<float> far = judged.model.at(4);
  for (float& v : far) v *= 10;
  EXPECT_EQ(judged.finish.at(1)
                .Step(4, {FinishMessage::Kind::kContribution, kDim, 1}, Frame(far), {}, now)
                .verdict,
            FinishVerdict::kAccepted)
      << "held until it publishes";
  now += milliseconds(500);
  judged.finish.at(1).Tick(now);
  const auto refused = judged.finish.at(1).TakeRefusals();
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].first, 4u);
  EXPECT_EQ(refused[0].second.verdict, FinishVerdict::kOutlier);
  judged.Deliver(now);
  ExpectAdopted(judged, {1, 2, 3}, 2, Average(judged, {2, 3}));
  // A collector that trained nothing and got no trained model averages nothing.
  Members alone({1, 2});
  alone.finish.at(1).Start(alone.model.at(1), alone.live, {}, false);
  alone.finish.at(1).Tick(TimePoint{} + milliseconds(1000));
  ASSERT_TRUE(alone.finish.at(1).outcome().has_value());
  EXPECT_FALSE(alone.finish.at(1).outcome()->averaged);
}

// A collector that restarts, or comes back into view, after the others adopted an average
// without it (the split seen after a kill under load: it averaged alone or with one straggler)
// is sent that average by the members that hold it, and adopts it once a majority of the other
// live members sent the same one — whether it still trained when they came or already waited
// for contributions.
TEST(ConsensusFinishTest, ALateLowestAdoptsTheAverageAMajorityRelays) {
  for (bool started_first : {false, true}) {
    SCOPED_TRACE(started_first ? "the late lowest waits as collector" : "it still trains");
    Members m({1, 2, 3, 4});
    TimePoint now{};
    for (NodeId id : {2, 3, 4}) m.finish.at(id).View({2, 3, 4}, now);
    for (NodeId id : {2, 3, 4}) m.finish.at(id).Start(m.model.at(id), {2, 3, 4}, now);
    m.Deliver(now);
    ExpectAdopted(m, {2, 3, 4}, 3, Average(m, {2, 3, 4}));
    now += milliseconds(100);
    if (started_first) m.finish.at(1).Start(m.model.at(1), m.live, now);
    for (NodeId id : {2, 3, 4}) m.finish.at(id).View(m.live, now);  // 1 is back
    m.Deliver(now);
    if (!started_first) {
      EXPECT_FALSE(m.finish.at(1).outcome().has_value()) << "judged at Start";
      m.finish.at(1).Start(m.model.at(1), m.live, now);
      m.Deliver(now);
      EXPECT_EQ(m.verdicts["relayed"], 3);
    } else {
      EXPECT_EQ(m.verdicts["relayed"], 2) << "adopted at the second of three";
      EXPECT_EQ(m.verdicts["duplicate"], 1);
    }
    ExpectAdopted(m, {1, 2, 3, 4}, 3, Average(m, {2, 3, 4}));
    for (NodeId id : {1, 2, 3, 4}) EXPECT_EQ(m.finish.at(id).outcome()->collector, 2u);
    // Relayed once per member: a later view change sends nothing again.
    for (NodeId id : {2, 3, 4}) m.finish.at(id).View(m.live, now);
    for (NodeId id : {2, 3, 4}) EXPECT_TRUE(m.finish.at(id).TakeOutput().empty());
  }
}

// A relayed result is one member's word: one member, or a minority, cannot make a collector
// adopt a model; the different relayed models a node holds are bounded; a relayed model beyond
// the distance bound is not adopted even by a majority.
TEST(ConsensusFinishTest, AMinorityCannotMakeANodeAdoptARelayedResult) {
  Members m({1, 2, 3, 4, 5, 6, 7});
  TimePoint now{};
  ConsensusFinish& c = m.finish.at(1);
  c.Start(m.model.at(1), m.live, now);
  for (NodeId from : {2, 3, 4, 5, 6}) {
    std::vector<float> forged = m.model.at(1);
    forged[from] += 1.0f;  // a different model from each
    const auto r =
        c.Step(from, {FinishMessage::Kind::kResult, kDim, 6, 9}, Frame(forged), m.model.at(1), now);
    EXPECT_EQ(r.verdict, from <= 5 ? FinishVerdict::kRelayed : FinishVerdict::kNotExpected)
        << "from " << from << ": " << r.status.ToString();
    EXPECT_EQ(c.Step(from, {FinishMessage::Kind::kResult, kDim, 6, 9}, Frame(m.model.at(1)),
                     m.model.at(1), now)
                  .verdict,
              from <= 5 ? FinishVerdict::kDuplicate : FinishVerdict::kNotExpected)
        << "one relay per member";
  }
  EXPECT_FALSE(c.outcome().has_value());
  std::vector<float> far = m.model.at(1);
  for (float& v : far) v *= 10;
  Members outlier({1, 2, 3});
  outlier.finish.at(1).Start(outlier.model.at(1), outlier.live, now);
  for (NodeId from : {2, 3}) {
    EXPECT_EQ(outlier.finish.at(1)
                  .Step(from, {FinishMessage::Kind::kResult, kDim, 2, 9}, Frame(far), far, now)
                  .verdict,
              FinishVerdict::kRelayed);
  }
  EXPECT_FALSE(outlier.finish.at(1).outcome().has_value()) << "beyond the distance bound";
  // The honest members' contributions still make the run's average.
  for (NodeId id : {2, 3, 4, 5, 6, 7}) m.finish.at(id).Start(m.model.at(id), m.live, now);
  m.Deliver(now);
  ExpectAdopted(m, {1, 2, 3, 4, 5, 6, 7}, 7, Average(m, {1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(c.outcome()->collector, 1u);
}

TEST(ConsensusFinishTest, EarlyResultFromAFormerCollectorGivesWayToTheNewOne) {
  Members m({1, 2, 3});
  TimePoint now{};
  const FinishMessage result{FinishMessage::Kind::kResult, kDim, 2};
  ASSERT_EQ(m.finish.at(3).Step(1, result, Frame(m.model.at(1)), m.model.at(3), now).verdict,
            FinishVerdict::kDeferred);
  m.dead.insert(1);
  for (NodeId id : {2, 3}) m.finish.at(id).View({2, 3}, now);
  for (NodeId id : {2, 3}) m.finish.at(id).Start(m.model.at(id), {2, 3}, now);
  m.Deliver(now);
  ExpectAdopted(m, {2, 3}, 2, Average(m, {2, 3}));
  EXPECT_EQ(m.finish.at(3).outcome()->collector, 2u);
}

// A contribution that comes while the collector still trains is judged against the collector's
// final model, not the one still training: a collector starved of CPU may still hold its zero
// start, against which every honest model is "infinitely" far (seen as a flaky PeerTest: a
// bound of 4 x 0). A later contribution from the same member replaces a held one.
TEST(ConsensusFinishTest, AnEarlyContributionIsJudgedAgainstTheFinalModel) {
  Members m({1, 2});
  TimePoint now{};
  const FinishMessage contribution{FinishMessage::Kind::kContribution, kDim, 1};
  const std::vector<float> zero(kDim, 0.0f);
  std::vector<float> stale = m.model.at(2);
  for (float& v : stale) v *= 100;  // replaced below, so never counted
  EXPECT_EQ(m.finish.at(1).Step(2, contribution, Frame(stale), zero, now).verdict,
            FinishVerdict::kDeferred);
  m.finish.at(2).Start(m.model.at(2), m.live, now);  // sends 2's model to 1, still training
  for (SendTo& send : m.finish.at(2).TakeOutput()) {
    EXPECT_EQ(m.finish.at(1).Step(2, std::get<FinishMessage>(send.payload), *send.frame, zero, now)
                  .verdict,
              FinishVerdict::kDeferred);
  }
  m.finish.at(1).Start(m.model.at(1), m.live, now);
  EXPECT_TRUE(m.finish.at(1).TakeRefusals().empty());
  m.Deliver(now);
  ExpectAdopted(m, {1, 2}, 2, Average(m, {1, 2}));
}

}  // namespace
}  // namespace murmur::gossip
