// Admission (gossip/admission.h): which training messages may change a node's state.

#include "gossip/admission.h"

#include <gtest/gtest.h>

#include <cmath>

#include "gossip/membership.h"

namespace murmur::gossip {
namespace {

MemberEntry Member(NodeId id, Incarnation life, MemberState state = MemberState::kAlive) {
  MemberEntry m;
  m.id = id;
  m.incarnation = life;
  m.state = state;
  return m;
}

Incoming From(NodeId from, Incarnation life, uint64_t clock) {
  Incoming m;
  m.from = from;
  m.incarnation = life;
  m.step_clock = clock;
  m.payload = NoPayload{};
  return m;
}

class AdmissionTest : public ::testing::Test {
 protected:
  AdmissionTest() {
    admission_.View(MemberView{{Member(1, 0), Member(2, 3), Member(3, 0, MemberState::kSuspect),
                                Member(4, 5, MemberState::kDead)}});
  }
  Admission admission_{1, /*max_clock_lead=*/1000};
};

TEST_F(AdmissionTest, ALiveMemberAtItsConfirmedLifeIsAdmitted) {
  EXPECT_EQ(admission_.live(), (std::vector<NodeId>{1, 2, 3}));
  EXPECT_TRUE(admission_.Check(From(2, 3, 500), 400).empty());
  EXPECT_TRUE(admission_.Check(From(3, 0, 0), 400).empty()) << "a suspect is live";
  EXPECT_TRUE(admission_.Check(From(2, 2, 500), 400).empty()) << "an older life may still speak";
}

TEST_F(AdmissionTest, StrangersTheNodeItselfAndTheDeadAreUnknown) {
  EXPECT_EQ(admission_.Check(From(9, 0, 1), 1), kRejectUnknownSender);
  EXPECT_EQ(admission_.Check(From(1, 0, 1), 1), kRejectUnknownSender);
  EXPECT_EQ(admission_.Check(From(4, 5, 1), 1), kRejectUnknownSender);
}

TEST_F(AdmissionTest, ALifeTheViewHasNotConfirmedMayPassLater) {
  const std::string_view why = admission_.Check(From(2, 4, 1), 1);
  EXPECT_EQ(why, kRejectUnconfirmedIncarnation);
  EXPECT_TRUE(Admission::MayPassLater(why));
  EXPECT_TRUE(Admission::MayPassLater(kRejectUnknownSender));
  EXPECT_FALSE(Admission::MayPassLater(kRejectClock));
  EXPECT_EQ(admission_.Check(From(2, kMaxIncarnation, 1), 1), kRejectIncarnation);
}

TEST_F(AdmissionTest, AClockFarAheadOfEverythingKnownIsRefused) {
  EXPECT_TRUE(admission_.Check(From(2, 3, 1400), 400).empty());
  EXPECT_EQ(admission_.Check(From(2, 3, 1401), 400), kRejectClock);
  // A node that knows no clock yet (joining) accepts any up to the step clock's ceiling.
  EXPECT_TRUE(admission_.Check(From(2, 3, kMaxStepClock), 0).empty());
  EXPECT_EQ(admission_.Check(From(2, 3, kMaxStepClock + 1), 0), kRejectClock);
}

TEST_F(AdmissionTest, AnImplausibleConsensusEstimateIsRefused) {
  Incoming m = From(2, 3, 10);
  for (float estimate : {-1.0f, 0.0f, 0.5f, 100.0f}) {
    m.payload = UpdateHeader{.consensus = estimate};
    EXPECT_TRUE(admission_.Check(m, 10).empty()) << estimate;
  }
  for (float estimate : {-0.5f, 100.5f, std::nanf(""), INFINITY}) {
    m.payload = UpdateHeader{.consensus = estimate};
    EXPECT_EQ(admission_.Check(m, 10), kRejectConsensus) << estimate;
  }
}

TEST_F(AdmissionTest, GoneMeansDeadOrLeftAtThatLifeOrLater) {
  EXPECT_TRUE(admission_.KnownGone(4, 5));
  EXPECT_TRUE(admission_.KnownGone(4, 2));
  EXPECT_FALSE(admission_.KnownGone(4, 6)) << "a newer life is a restart";
  EXPECT_FALSE(admission_.KnownGone(2, 3));
  EXPECT_FALSE(admission_.KnownGone(9, 0)) << "never seen";
  EXPECT_EQ(admission_.ViewIncarnation(2), 3u);
  EXPECT_EQ(admission_.ViewIncarnation(9), 0u);
}

}  // namespace
}  // namespace murmur::gossip
