#include "gossip/admission.h"

#include <algorithm>

#include "gossip/membership.h"

namespace murmur::gossip {

void Admission::View(const MemberView& view) {
  members_ = view.members;
  live_ = LiveIds(view, self_);
}

std::string_view Admission::Check(const Incoming& m, uint64_t known) const {
  if (m.from == self_ || !std::binary_search(live_.begin(), live_.end(), m.from)) {
    return kRejectUnknownSender;
  }
  if (m.incarnation >= kMaxIncarnation) return kRejectIncarnation;
  if (m.incarnation > ViewIncarnation(m.from)) return kRejectUnconfirmedIncarnation;
  if (const auto* u = std::get_if<UpdateHeader>(&m.payload);
      u != nullptr &&
      !(u->consensus == -1 || (u->consensus >= 0 && u->consensus <= kMaxConsensus))) {
    return kRejectConsensus;  // NaN fails both comparisons
  }
  const uint64_t ceiling =
      known == 0 ? kMaxStepClock : std::min(kMaxStepClock, known + max_clock_lead_);
  if (m.step_clock > ceiling) return kRejectClock;
  return {};
}

std::string Admission::Unconfirmed(const Incoming& m, std::string_view why) const {
  if (why == kRejectUnknownSender) return "not a live member";
  return "incarnation " + std::to_string(m.incarnation) +
         " never confirmed by the membership (it holds " +
         std::to_string(ViewIncarnation(m.from)) + ")";
}

Incarnation Admission::ViewIncarnation(NodeId id) const {
  for (const MemberEntry& m : members_) {
    if (m.id == id) return m.incarnation;
  }
  return 0;
}

bool Admission::KnownGone(NodeId id, Incarnation incarnation) const {
  for (const MemberEntry& m : members_) {
    if (m.id == id) {
      return (m.state == MemberState::kDead || m.state == MemberState::kLeft) &&
             incarnation <= m.incarnation;
    }
  }
  return false;
}

}  // namespace murmur::gossip
