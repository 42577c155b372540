#pragma once
// Who may speak to a gossip node (gossip_node.h "Trust"): the latest membership view, and the
// check every training message passes before it changes anything. A message is admitted when its
// sender is a live member other than this node, at a life (incarnation) below kMaxIncarnation
// that the view has confirmed, with a consensus estimate that is absent or within
// [0, kMaxConsensus], and a step clock within `max_clock_lead` of the highest clock this node
// knows (its own, the most advanced member's, the sender's). A refusal names its reason (the
// label of murmur_rejected_messages_total). A message refused as from an unknown sender or an
// unconfirmed life may pass later, once the view catches up (a member that just joined, or
// restarted), unless the view holds that life dead or gone.
// Sans-IO, no clock. Thread safety: none.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gossip/envelope.h"
#include "gossip/node_io.h"

namespace murmur::gossip {

class Admission {
 public:
  Admission(NodeId self, uint64_t max_clock_lead) : self_(self), max_clock_lead_(max_clock_lead) {}

  // The latest view: every known member (live or not) and the live ids, sorted, with this node.
  void View(const MemberView& view);
  const std::vector<MemberEntry>& members() const { return members_; }
  const std::vector<NodeId>& live() const { return live_; }

  // Why `m` must not change state (kRejectUnknownSender, kRejectIncarnation,
  // kRejectUnconfirmedIncarnation, kRejectConsensus, kRejectClock); empty when it may. `known`:
  // the highest clock this node knows (its own, the most advanced member's, the sender's).
  std::string_view Check(const Incoming& m, uint64_t known) const;
  static bool MayPassLater(std::string_view why) {
    return why == kRejectUnknownSender || why == kRejectUnconfirmedIncarnation;
  }
  // Why a message held for the view (MayPassLater) is refused once it can wait no longer: "not a
  // live member", or the life the view never confirmed.
  std::string Unconfirmed(const Incoming& m, std::string_view why) const;
  // The member's incarnation in the view (0 when it is not there).
  Incarnation ViewIncarnation(NodeId id) const;
  // Dead or left in the view at `incarnation` or later (a newer life is a restart, not a ghost).
  bool KnownGone(NodeId id, Incarnation incarnation) const;

 private:
  const NodeId self_;
  const uint64_t max_clock_lead_;
  std::vector<MemberEntry> members_;
  std::vector<NodeId> live_;
};

}  // namespace murmur::gossip
