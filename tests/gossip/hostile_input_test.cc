// Hostile input to the node machines: forged incarnations, clocks, members, samples,
// "finished" flags, updates and snapshot requests. Each is refused, counted by reason, and
// changes nothing; the cluster goes on. Membership alone, then GossipNode on the fake network
// with a manual clock (tests/testing/node_cluster.h). Seeds are fixed and printed on failure.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "coding/update_codec.h"
#include "gossip/gossip_node.h"
#include "gossip/membership.h"
#include "tests/testing/node_cluster.h"
#include "tests/testing/plain_choco_options.h"

namespace murmur::gossip {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Cluster = murmur::testing::NodeCluster<GossipNode>;
using murmur::testing::FastMembership;

MembershipOptions Options(NodeId id) {
  MembershipOptions o;
  o.id = id;
  o.address = "sim://self";
  o.incarnation = 1000;
  o.probe_interval = milliseconds(100);
  o.probe_timeout = milliseconds(40);
  return o;
}

Envelope From(NodeId sender, Incarnation incarnation, Payload payload) {
  Envelope e;
  e.cluster_id = "sim";
  e.sender_id = sender;
  e.incarnation = incarnation;
  e.payload = std::move(payload);
  return e;
}

MemberEntry Entry(NodeId id, Incarnation incarnation, MemberState state, uint64_t clock = 0) {
  MemberEntry e;
  e.id = id;
  e.address = "sim://" + std::to_string(id);
  e.incarnation = incarnation;
  e.state = state;
  e.step_clock = clock;
  return e;
}

// A member joins as a real one does: its Join, then its answer to the verification Ping at its
// address. True when it was admitted.
bool Admit(Membership& m, const MemberEntry& entry, TimePoint now) {
  m.Step(From(entry.id, entry.incarnation, Join{entry}), now);
  for (const Outgoing& out : m.TakeOutput()) {
    const auto* ping = std::get_if<Ping>(&out.payload);
    if (ping != nullptr && out.address == entry.address) {
      m.Step(From(entry.id, entry.incarnation, Ack{ping->probe_id, {entry}}), now);
    }
  }
  return m.Find(entry.id).has_value();
}

TEST(HostileMembershipTest, AMemberIsAdmittedOnlyAfterAnsweringAtItsAddress) {
  const TimePoint now{};
  MembershipOptions o = Options(1);
  o.max_candidates = 8;
  Membership m(o, now);
  // A Join alone admits nobody: the node pings the claimed address with a random probe id.
  EXPECT_TRUE(m.Step(From(9, 5, Join{Entry(9, 5, MemberState::kAlive)}), now));
  EXPECT_FALSE(m.Find(9).has_value());
  std::vector<Outgoing> out = m.TakeOutput();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].address, "sim://9");
  const uint64_t probe = std::get<Ping>(out[0].payload).probe_id;
  EXPECT_EQ(std::get<Ping>(out[0].payload).gossip.size(), 1u) << "a stranger learns only about us";
  // A guessed probe id, or the right one from somebody else, admits nobody.
  m.Step(From(9, 5, Ack{probe + 1, {Entry(9, 5, MemberState::kAlive)}}), now);
  m.Step(From(8, 5, Ack{probe, {Entry(8, 5, MemberState::kAlive)}}), now);
  EXPECT_FALSE(m.Find(9).has_value());
  EXPECT_FALSE(m.Find(8).has_value());
  // What a stranger says about others is not merged; about itself, it is verified first.
  m.Step(From(7, 5, Digest{{Entry(7, 5, MemberState::kAlive), Entry(6, 5, MemberState::kAlive)}, false}), now);
  EXPECT_EQ(m.Members().size(), 1u);
  // A stranger's plausible digest about others only is dropped and counted.
  EXPECT_EQ(m.rejected().count(std::string(kRejectStrangerGossip)), 0u);
  m.Step(From(5, 5,
              Digest{{Entry(6, 5, MemberState::kAlive), Entry(4, 5, MemberState::kDead)}, false}),
         now);
  EXPECT_EQ(m.rejected().at(std::string(kRejectStrangerGossip)), 1u);
  EXPECT_EQ(m.Members().size(), 1u);
  // The answer from the claimed address admits it, and a joiner gets the digest.
  m.TakeOutput();
  m.Step(From(9, 5, Ack{probe, {Entry(9, 5, MemberState::kAlive)}}), now);
  EXPECT_TRUE(m.Find(9).has_value());
  out = m.TakeOutput();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<Digest>(out[0].payload));
  // At most max_candidates claims wait at once; the rest are refused and counted, and a
  // candidate that never answers is forgotten after a probe period.
  for (NodeId id = 100; id < 120; ++id) m.Step(From(id, 5, Join{Entry(id, 5, MemberState::kAlive)}), now);
  EXPECT_EQ(m.rejected().at(std::string(kRejectJoinBacklog)), 20u - 6u)
      << "the claims of 7 (its digest) and 8 (its ack) hold two of the 8 places";
  EXPECT_EQ(m.rejected().count(std::string(kRejectUnverified)), 0u);
  m.Tick(now + o.probe_interval);
  m.TakeOutput();
  EXPECT_EQ(m.rejected().at(std::string(kRejectUnverified)), 8u)
      << "the 8 claims that never answered (7's, 8's and six Joins) are counted as they expire";
  EXPECT_TRUE(Admit(m, Entry(200, 5, MemberState::kAlive), now + o.probe_interval));
  EXPECT_EQ(m.Members().size(), 3u) << "this node, 9 and 200; no stranger that did not answer";
}

TEST(HostileMembershipTest, ADeathAtTheLargestIncarnationIsRefusedAndCannotWrapARefutation) {
  const TimePoint now{};
  Membership m(Options(1), now);
  ASSERT_TRUE(Admit(m, Entry(9, 5, MemberState::kAlive), now));
  m.TakeEvents();
  // The attack of the issue: a Digest declaring this node dead at 2^64-1.
  EXPECT_TRUE(m.Step(From(9, 5, Digest{{Entry(1, ~uint64_t{0}, MemberState::kDead)}, false}), now));
  EXPECT_EQ(m.rejected().at(std::string(kRejectIncarnation)), 1u);
  EXPECT_EQ(m.incarnation(), 1000u);
  EXPECT_TRUE(m.Members().size() == 2) << "nothing of the refused message was merged";
  EXPECT_TRUE(m.TakeEvents().empty());
  // The largest plausible accusation (this node's start incarnation + the time it ran +
  // max_incarnation_lead) is refuted one higher. One just under kMaxIncarnation, after which the
  // target could not refute the next, is refused, as is any claim above the ceiling.
  const Incarnation lead = m.options().max_incarnation_lead;
  EXPECT_EQ(m.IncarnationCeiling(now), 1000 + lead);
  EXPECT_TRUE(m.Step(From(9, 5, Digest{{Entry(1, 1000 + lead, MemberState::kDead)}, false}), now));
  EXPECT_EQ(m.incarnation(), 1000 + lead + 1);
  EXPECT_TRUE(m.Step(From(9, 5, Digest{{Entry(1, kMaxIncarnation - 2, MemberState::kDead)}, false}), now));
  EXPECT_TRUE(m.Step(From(9, 5, Digest{{Entry(9, 1000 + lead + 1, MemberState::kAlive)}, false}), now));
  EXPECT_TRUE(m.Step(From(9, 1000 + lead + 1, Digest{{}, false}), now));
  EXPECT_EQ(m.rejected().at(std::string(kRejectIncarnation)), 4u);
  EXPECT_EQ(m.incarnation(), 1000 + lead + 1);
  EXPECT_EQ(m.Find(9)->incarnation, 5u);
  // The ceiling grows with time (incarnations are wall-clock milliseconds): a second later the
  // same claim is plausible, so a refutation is never refused for long.
  EXPECT_TRUE(m.Step(From(9, 5, Digest{{Entry(9, 1000 + lead + 1, MemberState::kAlive)}, false}),
                     now + seconds(1)));
  EXPECT_EQ(m.Find(9)->incarnation, 1000 + lead + 1);
}

TEST(HostileMembershipTest, AClockBeyondTheLeadIsRefusedOnceAnyClockIsKnown) {
  const TimePoint now{};
  Membership m(Options(1), now);
  m.SetProgress(1000, 64000, false);
  EXPECT_TRUE(m.Step(From(9, 5, Join{Entry(9, 5, MemberState::kAlive, 1000000000)}), now));
  EXPECT_EQ(m.rejected().at(std::string(kRejectClock)), 1u);
  EXPECT_FALSE(m.Find(9).has_value());
  const uint64_t plausible = 1000 + m.options().max_clock_lead;
  ASSERT_TRUE(Admit(m, Entry(9, 5, MemberState::kAlive, plausible), now));
  EXPECT_EQ(m.Find(9)->step_clock, plausible);
  // A joining node (no clock known) takes a running cluster's clock.
  Membership fresh(Options(2), now);
  EXPECT_TRUE(Admit(fresh, Entry(9, 5, MemberState::kAlive, 50000000), now));
}

TEST(HostileMembershipTest, InventedMembersAreBoundedAndJoinsMustBeTheSendersOwn) {
  const TimePoint now{};
  MembershipOptions o = Options(1);
  o.max_members = 64;
  Membership m(o, now);
  for (NodeId id = 100; id < 2100; ++id) Admit(m, Entry(id, 5, MemberState::kAlive), now);
  EXPECT_EQ(m.Members().size(), 65u) << "this node and max_members others";
  EXPECT_EQ(m.rejected().at(std::string(kRejectMemberLimit)), 2000u - 64u);
  // A Join about somebody else: impersonation.
  Membership n(Options(1), now);
  EXPECT_TRUE(n.Step(From(9, 5, Join{Entry(10, 5, MemberState::kAlive)}), now));
  EXPECT_EQ(n.rejected().at(std::string(kRejectImpersonation)), 1u);
  EXPECT_FALSE(n.Find(10).has_value());
}

// ---- GossipNode on the fake network ----

class CountingObserver : public GossipNodeObserver {
 public:
  void Rejected(std::string_view reason) override { ++by_reason[std::string(reason)]; }
  std::map<std::string, uint64_t> by_reason;
};

struct Attacked {
  explicit Attacked(uint64_t seed, int64_t budget_samples = 0)
      : cluster(3, FastMembership(), seed,
                [budget_samples](size_t i, Cluster::Node& node, TimePoint now) {
                  GossipNodeOptions o = murmur::testing::PlainChocoNodeOptions();
                  o.self = Cluster::Id(i);
                  o.incarnation = node.membership->incarnation();
                  o.choco.compressor = *coding::ParseCompressorSpec("topk:0.25");
                  o.choco.gamma = 0.2;
                  o.join_wait = milliseconds(300);
                  o.snapshot_timeout = milliseconds(500);
                  o.linger = milliseconds(100);
                  o.budget_samples = budget_samples;
                  std::vector<float> initial(node.x.size(), 0.0f);
                  return *GossipNode::Create(o, node.x, initial, /*from_initial=*/true, now);
                }) {
    for (size_t i = 0; i < 3; ++i) {
      cluster.Start(i);
      cluster.machine(i).set_observer(&observers[i]);
    }
    // Training: every node took steps and mixed.
    EXPECT_TRUE(cluster.RunFor(seconds(5), [&] {
      for (size_t i = 0; i < 3; ++i) {
        if (cluster.machine(i).state().rounds < 50) return false;
      }
      return true;
    }));
  }
  // The attacker owns the addresses it claims: it answers every verification Ping there.
  void AnswerPingsAsAttacker() {
    cluster.on_outside = [this](size_t i, const Outgoing& out) {
      const auto* ping = std::get_if<Ping>(&out.payload);
      if (ping == nullptr || !out.address.starts_with("attacker://")) return;
      MemberEntry e = Entry(std::stoull(out.address.substr(11)), 5, MemberState::kAlive, 1);
      e.address = out.address;
      pending.push_back({i, From(e.id, 5, Ack{ping->probe_id, {e}})});
    };
  }
  void DeliverAnswers() {
    for (auto& [i, e] : std::exchange(pending, {})) cluster.Inject(i, e);
  }
  std::vector<std::pair<size_t, Envelope>> pending;
  uint32_t dimension() { return static_cast<uint32_t>(cluster.node(0).x.size()); }
  // A dense update frame of the model's dimension, every value `value`.
  std::shared_ptr<const std::vector<std::byte>> Dense(float value) {
    auto bytes = std::make_shared<std::vector<std::byte>>();
    coding::EncodeDense(std::vector<float>(dimension(), value), *bytes);
    return bytes;
  }
  Envelope Member(size_t i, Payload payload) {
    Envelope e = From(Cluster::Id(i), cluster.node(i).membership->incarnation(), std::move(payload));
    e.step_clock = cluster.machine(i).state().step;
    return e;
  }
  uint64_t Refused(size_t i, std::string_view reason) {
    auto it = observers[i].by_reason.find(std::string(reason));
    return it == observers[i].by_reason.end() ? 0 : it->second;
  }
  // The models are where the workload drives them: node i towards i + 1 (node_cluster.h).
  bool ModelsSane() {
    for (size_t i = 0; i < 3; ++i) {
      for (float v : cluster.node(i).x) {
        if (!std::isfinite(v) || v < -0.5f || v > 3.5f) return false;
      }
    }
    return true;
  }
  Cluster cluster;
  CountingObserver observers[3];
};

TEST(HostileGossipNodeTest, AForgedDenseUpdateFromAJoinedMemberMovesNoModel) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Attacked run(seed);
    const uint32_t d = static_cast<uint32_t>(run.cluster.node(0).x.size());
    // An attacker joins (it answers at its address), then sends +10 on every parameter.
    std::vector<float> plus_ten(d, 10.0f);
    auto bytes = std::make_shared<std::vector<std::byte>>();
    coding::EncodeDense(plus_ten, *bytes);
    run.AnswerPingsAsAttacker();
    MemberEntry attacker = Entry(99, 5, MemberState::kAlive, 1);
    attacker.address = "attacker://99";
    for (size_t i = 0; i < 3; ++i) run.cluster.Inject(i, From(99, 5, Join{attacker}));
    run.DeliverAnswers();
    for (size_t i = 0; i < 3; ++i) ASSERT_TRUE(run.cluster.node(i).membership->Find(99).has_value());
    run.cluster.RunFor(milliseconds(5));
    uint64_t gaps[3];
    for (size_t i = 0; i < 3; ++i) {
      const auto& verdicts = run.cluster.machine(i).state().verdicts;
      gaps[i] = verdicts.contains("gap") ? verdicts.at("gap") : 0;
      Envelope e = From(99, 5, UpdateHeader{1, 0, d, true, true});
      e.step_clock = 1;
      e.payload_frames = 1;
      run.cluster.Inject(i, e, bytes);
    }
    run.cluster.RunFor(seconds(2));
    for (size_t i = 0; i < 3; ++i) {
      // A node that still holds the initial model the update claims to start from decodes it
      // and refuses it by its norm; one that released it (every neighbour's stream started, its
      // own log past version 0) takes it for a gap and asks the attacker for its copy, which
      // never comes. Either way nothing is applied.
      const auto& verdicts = run.cluster.machine(i).state().verdicts;
      const uint64_t gap = (verdicts.contains("gap") ? verdicts.at("gap") : 0) - gaps[i];
      EXPECT_EQ(run.Refused(i, kRejectOutlier) + (gap > 0 ? 1 : 0), 1u) << "node " << i;
    }
    EXPECT_TRUE(run.ModelsSane());
  }
}

TEST(HostileGossipNodeTest, AForgedClockOrIncarnationFromAMemberIsRefused) {
  Attacked run(7);
  const uint64_t best = run.cluster.machine(0).best_clock();
  Envelope e = run.Member(1, SnapshotRequest{0, false});
  e.step_clock = 1000000000;
  run.cluster.Inject(0, e);
  EXPECT_EQ(run.Refused(0, kRejectClock), 1u);
  EXPECT_LT(run.cluster.machine(0).best_clock(), best + 1000);
  Envelope f = run.Member(1, SnapshotRequest{0, false});
  f.incarnation = ~uint64_t{0};
  run.cluster.Inject(0, f);
  EXPECT_EQ(run.Refused(0, kRejectIncarnation), 1u);
  run.cluster.RunFor(seconds(1));
  EXPECT_TRUE(run.ModelsSane());
}

// A "new life" of a live member that only a data message claims (the posing attack: a
// zero update from the initial model under member 1's id at a newer incarnation) waits for the
// membership to confirm that life, is refused when it does not, and leaves member 1's public
// copy and its stream alone: its real updates keep being applied, none is stale.
TEST(HostileGossipNodeTest, ANewLifeOnlyADataMessageClaimsIsHeldThenRefused) {
  for (uint64_t seed = 23; seed <= 25; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Attacked run(seed);
    const uint32_t d = run.dimension();
    const auto zero = run.Dense(0.0f);
    const auto before = run.cluster.machine(0).state().verdicts;
    const auto count = [](const auto& verdicts, const char* name) {
      auto it = verdicts.find(name);
      return it == verdicts.end() ? uint64_t{0} : it->second;
    };
    Envelope e = run.Member(1, UpdateHeader{1, 0, d, true, true});
    e.incarnation += 1;
    e.payload_frames = 1;
    run.cluster.Inject(0, e, zero);
    EXPECT_EQ(run.Refused(0, kRejectUnconfirmedIncarnation), 0u)
        << "held while the view may catch up";
    run.cluster.RunFor(seconds(2));
    EXPECT_EQ(run.Refused(0, kRejectUnconfirmedIncarnation), 1u);
    const auto after = run.cluster.machine(0).state().verdicts;
    EXPECT_EQ(count(after, "stale_incarnation"), count(before, "stale_incarnation"));
    EXPECT_GT(count(after, "applied"), count(before, "applied") + 10);
    EXPECT_TRUE(run.ModelsSane());
  }
}

// A consensus estimate no honest node sends (not finite, negative, beyond 100) is refused before
// any part of the update is read: the CHOCO machine never sees it.
TEST(HostileGossipNodeTest, AnImplausibleConsensusEstimateIsRefused) {
  Attacked run(19);
  const uint32_t d = run.dimension();
  const auto bytes = run.Dense(0.001f);
  const auto verdicts = run.cluster.machine(0).state().verdicts;
  const float bad[] = {std::nanf(""), INFINITY, -0.5f, 1e6f};
  for (float consensus : bad) {
    Envelope e = run.Member(1, UpdateHeader{1, 0, d, true, true, consensus});
    e.payload_frames = 1;
    run.cluster.Inject(0, e, bytes);
  }
  EXPECT_EQ(run.Refused(0, kRejectConsensus), std::size(bad));
  EXPECT_EQ(run.cluster.machine(0).state().verdicts, verdicts);
  run.cluster.RunFor(seconds(1));
  EXPECT_TRUE(run.ModelsSane());
}

TEST(HostileGossipNodeTest, MessagesFromInventedSendersChangeNothing) {
  Attacked run(11);
  const uint32_t d = run.dimension();
  const auto bytes = run.Dense(0.001f);
  std::vector<size_t> replies;
  run.cluster.on_output = [&](size_t i, const NodeAction& a) {
    if (const auto* s = std::get_if<SendTo>(&a); s != nullptr && s->to >= 1000) replies.push_back(i);
  };
  for (NodeId id = 1000; id < 3000; ++id) {
    Envelope e = From(id, 5, UpdateHeader{1, 0, d, true, true});
    e.payload_frames = 1;
    run.cluster.Inject(0, e, bytes);
    run.cluster.Inject(0, From(id, 5, SnapshotRequest{0, false}));
  }
  run.cluster.RunFor(seconds(1));
  // A few waited (a member that just joined may send before the view has it), then were refused.
  EXPECT_EQ(run.Refused(0, kRejectUnknownSender), 4000u);
  EXPECT_TRUE(replies.empty()) << "nothing is sent to a sender that is not a live member";
  EXPECT_TRUE(run.ModelsSane());
}

TEST(HostileGossipNodeTest, ModelSnapshotsGoOnlyToLiveMembers) {
  Attacked run(13);
  const Incarnation old = run.cluster.node(2).membership->incarnation();
  run.cluster.Crash(2);
  ASSERT_TRUE(run.cluster.RunFor(seconds(10), [&] {
    const auto e = run.cluster.node(0).membership->Find(Cluster::Id(2));
    return e.has_value() && e->state == MemberState::kDead;
  }));
  bool served = false;
  run.cluster.on_output = [&](size_t, const NodeAction& a) {
    if (const auto* s = std::get_if<SendTo>(&a); s != nullptr && s->to == Cluster::Id(2)) {
      if (const auto* r = std::get_if<SnapshotReply>(&s->payload); r != nullptr && r->model) served = true;
    }
  };
  run.cluster.Inject(0, From(Cluster::Id(2), old, SnapshotRequest{0, true}));
  run.cluster.RunFor(seconds(1));
  EXPECT_FALSE(served) << "a dead member's model request was answered";
  EXPECT_EQ(run.Refused(0, kRejectUnknownSender), 1u) << "refused once it did not come alive";
}

TEST(HostileGossipNodeTest, ForgedSamplesAndOneForgedFinishDoNotEndTheRun) {
  Attacked run(17, /*budget_samples=*/100000000);
  const uint64_t clock = run.cluster.machine(1).state().step;
  // A member's samples far beyond what its steps can hold, and an invented member that says
  // it finished.
  MemberEntry inflated = Entry(Cluster::Id(1), run.cluster.node(1).membership->incarnation(),
                               MemberState::kAlive, clock);
  inflated.address = Cluster::Address(1);
  inflated.samples = uint64_t{1} << 50;
  MemberEntry done = Entry(99, 5, MemberState::kAlive, clock);
  done.address = "attacker://99";
  done.finished = true;
  run.AnswerPingsAsAttacker();
  for (size_t i : {0, 2}) {
    run.cluster.Inject(i, From(Cluster::Id(1), inflated.incarnation, Digest{{inflated}, false}));
    run.cluster.Inject(i, From(99, 5, Join{done}));
  }
  run.DeliverAnswers();
  run.cluster.RunFor(seconds(1));
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_FALSE(run.cluster.node(i).finished.has_value())
        << "node " << i << " ended: " << run.cluster.node(i).finished.value_or("");
    EXPECT_LT(run.cluster.machine(i).state().cluster_samples, 100000000);
  }
}

// Inflated claims: a member that announces a clock 90,000 steps ahead (under the
// lead limit) and samples of clock x 256 (under the batch cap) neither ends the budget nor
// makes the others catch up; both are counted once.
TEST(HostileGossipNodeTest, OneMembersInflatedClockAndSamplesDecideNothing) {
  Attacked run(29, /*budget_samples=*/100000000);
  const uint64_t clock = run.cluster.machine(1).state().step + 90000;
  MemberEntry inflated = Entry(Cluster::Id(1), run.cluster.node(1).membership->incarnation(),
                               MemberState::kAlive, clock);
  inflated.address = Cluster::Address(1);
  inflated.samples = clock * 256;
  const uint64_t catchups = run.cluster.machine(0).state().catchups;
  run.cluster.Inject(0, From(Cluster::Id(1), inflated.incarnation, Digest{{inflated}, false}));
  run.cluster.RunFor(seconds(1));
  EXPECT_FALSE(run.cluster.node(0).finished.has_value())
      << run.cluster.node(0).finished.value_or("");
  EXPECT_LT(run.cluster.machine(0).state().cluster_samples, 1000000);
  EXPECT_LT(run.cluster.machine(0).best_clock(), clock - 80000);
  EXPECT_EQ(run.cluster.machine(0).state().catchups, catchups);
  EXPECT_EQ(run.Refused(0, kRejectUnconfirmedSamples), 1u);
  EXPECT_EQ(run.Refused(0, kRejectUnconfirmedClock), 1u);
  EXPECT_TRUE(run.ModelsSane());
  // The claim no longer grows: it keeps what it was believed when made, while the others train
  // on (it would otherwise count as much as the most advanced honest member at every view).
  const GossipNodeState& s = run.cluster.machine(0).state();
  const int64_t others_then = s.samples + run.cluster.machine(2).state().samples;
  const int64_t believed_then = s.cluster_samples - others_then;
  run.cluster.RunFor(seconds(3));
  const int64_t others = s.samples + run.cluster.machine(2).state().samples;
  std::printf("member 1 believed at %lld samples; nodes 0 and 2 did %lld, then %lld\n",
              static_cast<long long>(believed_then), static_cast<long long>(others_then),
              static_cast<long long>(others));
  EXPECT_LE(run.cluster.machine(0).state().cluster_samples - others, believed_then + 64 * 4);
}

}  // namespace
}  // namespace murmur::gossip
