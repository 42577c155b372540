#pragma once
// Membership and failure detection as a sans-IO state machine: SWIM probes with suspicion and
// incarnation numbers (Das et al., DSN 2002; memberlist's precedence rules), plus a heartbeat
// digest gossiped to a few random members each period (van Renesse et al. 1998) that carries
// every member's heartbeat and training step clock. docs/algorithms.md §7.1–7.2.
//
// Driving it: feed every received membership message to Step(message, now), call Tick(now)
// often (every probe_interval / 10 is plenty), and send what TakeOutput() returns. Nothing here
// reads a clock, touches a socket or blocks, so tests run it on a ManualClock and a fake network.
//
// Guarantees (all members using the same options, messages eventually delivered):
// - A crashed member is declared dead by every live member within DetectionBound(n): at most
//   2n-1 probe periods until some member's shuffled round-robin probes it and that probe fails,
//   then the suspicion timeout (suspicion_multiplier * max(1, log10 n) periods), then the
//   spread of the verdict by digest gossip (log2 n + 4 periods).
// - A live member wrongly suspected or declared dead refutes it by raising its incarnation as
//   soon as it hears the accusation; members talk to retained dead members and to seeds
//   periodically, so after a partition heals every live member is Alive everywhere again.
// - A restarted member (a higher incarnation, or any incarnation: it refutes its old death)
//   rejoins without anybody restarting.
//
// Thread safety: none; one driver thread owns an instance.

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "gossip/envelope.h"

namespace murmur::gossip {

struct MembershipOptions {
  NodeId id = 0;
  std::string address;  // where peers reach this node (the advertised endpoint)
  // Restarted nodes should start higher than any earlier life (the node uses wall-clock
  // milliseconds); a lower one still works, one refutation later.
  Incarnation incarnation = 0;
  std::vector<std::string> seeds;  // endpoints to join through (this node's own is skipped)

  Duration probe_interval = std::chrono::milliseconds(500);  // SWIM protocol period T
  Duration probe_timeout = std::chrono::milliseconds(200);   // direct ack wait, then ping-req
  int indirect_checks = 3;                                   // ping-req fan-out k
  int suspicion_multiplier = 4;                              // memberlist's LAN default
  int gossip_fanout = 3;       // digests sent per period
  int max_piggyback = 8;       // member updates piggybacked on one ping or ack
  int retransmit_multiplier = 4;  // an update is piggybacked mult * ceil(log10(n+1)) times
  Duration join_retry = std::chrono::seconds(1);     // while nobody is known
  Duration seed_rejoin = std::chrono::seconds(10);   // seeds not alive in the view
  Duration dead_gossip = std::chrono::seconds(2);    // digest to one retained dead member
  Duration dead_retention = std::chrono::seconds(60);  // then a dead member is forgotten
  uint64_t rng_seed = 1;
  // Bounds on what a message may claim; a message with one entry beyond them changes nothing
  // and is counted (rejected()). Members known at once, dead ones included until forgotten:
  // entries for new members beyond it are refused, so invented ids cannot grow memory.
  size_t max_members = 4096;
  // Entries in one digest: this node, the members whose news is still being spread, then a
  // random sample of the rest. A digest's size stays bounded whatever the membership (one that
  // listed 2,500+ members exceeded the envelope's max_header_bytes); at larger sizes each member
  // is still carried by a random share of the digests, and SWIM probes do the detection.
  size_t max_digest_entries = 128;
  // A member is admitted on its own word only after it answered a Ping at the address it
  // claims (an unknown sender's Join, or its own entry in any message): candidates waiting for
  // that answer, at most this many, each for one probe_interval. Beyond it a claim is refused
  // (kRejectJoinBacklog). Invented members at addresses nobody answers never enter the table.
  size_t max_candidates = 64;
  // How far a gossiped step clock may lead the highest clock this node knows (its own and every
  // member's). A node that knows no clock yet (it is joining) accepts any up to kMaxStepClock.
  uint64_t max_clock_lead = 100000;
  // Incarnations are wall-clock milliseconds at a node's start (plus its refutations), so no
  // honest claim is far above this node's own start incarnation plus the time it has run:
  // claims beyond that by more than max_incarnation_lead (clock skew between machines) are
  // refused. Without it, an accusation just under kMaxIncarnation would leave its target
  // unable to refute the next one; with it, the ceiling grows with time, so a refutation is
  // never refused for long.
  uint64_t max_incarnation_lead = 24ull * 3600 * 1000;

  // kInvalidArgument naming the field.
  Status Validate() const;
};

struct MemberEvent {
  // kIdConflict: another endpoint claims this node's id (a misconfiguration; `address` is the
  // other endpoint). Reported at most once per probe period; this node keeps its own claim.
  enum class Kind : uint8_t {
    kJoined, kSuspected, kDead, kLeft, kRecovered, kRefuted, kForgotten, kIdConflict
  };
  Kind kind;
  NodeId id;
  Incarnation incarnation;
  std::string address;  // the member's endpoint (still known after it is forgotten)
  bool operator==(const MemberEvent&) const = default;
};
const char* MemberEventName(MemberEvent::Kind kind);
const char* MemberStateName(MemberState state);

// Beyond these a claim is implausible, whoever makes it: 2^62 milliseconds are 146 million years
// (incarnations are wall-clock milliseconds), so a refutation can never wrap.
inline constexpr Incarnation kMaxIncarnation = Incarnation{1} << 62;
inline constexpr uint64_t kMaxStepClock = uint64_t{1} << 48;
inline constexpr uint64_t kMaxSamples = uint64_t{1} << 56;

// Why Membership refused a message (labels of murmur_rejected_messages_total).
inline constexpr std::string_view kRejectIncarnation = "implausible_incarnation";
inline constexpr std::string_view kRejectClock = "implausible_clock";
inline constexpr std::string_view kRejectMemberLimit = "member_limit";
inline constexpr std::string_view kRejectImpersonation = "impersonation";
inline constexpr std::string_view kRejectMalformedMember = "malformed_member";
inline constexpr std::string_view kRejectJoinBacklog = "join_backlog";
// A claim about itself (a Join, or a stranger's own entry) whose claimed address did not answer
// the verification Ping within a probe period: not admitted.
inline constexpr std::string_view kRejectUnverified = "unverified_member";
// Entries from a sender that is not a member and says nothing about itself: not merged.
inline constexpr std::string_view kRejectStrangerGossip = "stranger_gossip";

// A message for the transport: send `payload` to `address` in an Envelope carrying this node's
// id and current incarnation().
struct Outgoing {
  std::string address;
  Payload payload;
};

// True when `incoming` replaces `current` (same member): the higher incarnation wins; at equal
// incarnations the state further along Alive < Suspect < Dead < Left wins.
bool Supersedes(const MemberEntry& incoming, const MemberEntry& current);

class Membership {
 public:
  // REQUIRES: options.Validate().ok()
  Membership(MembershipOptions options, TimePoint now);

  // A received Envelope; non-membership payloads are ignored (returns false). A message that
  // fails a check (Check) changes nothing and is counted by reason.
  bool Step(const Envelope& message, TimePoint now);
  // Why `message` would be refused: an incarnation above IncarnationCeiling(now), a step clock
  // beyond max_clock_lead (or kMaxStepClock), samples beyond kMaxSamples, an entry without an
  // id or address, a Join whose entry is not its sender's, or new members beyond max_members.
  // Empty when it passes.
  std::string_view Check(const Envelope& message, TimePoint now) const;
  // The highest incarnation a claim may carry at `now`: this node's start incarnation, plus the
  // time since, plus max_incarnation_lead; always below kMaxIncarnation, so no refutation wraps.
  Incarnation IncarnationCeiling(TimePoint now) const;
  // Refused messages by reason.
  const std::map<std::string, uint64_t, std::less<>>& rejected() const { return rejected_; }
  void Tick(TimePoint now);
  // Graceful leave: tells every live member its final entry (progress, "finished") and that it
  // leaves, and stops probing. Step/Tick do nothing afterwards.
  void Leave(TimePoint now);

  std::vector<Outgoing> TakeOutput();
  std::vector<MemberEvent> TakeEvents();

  // Alive and suspected members with this node, sorted by id: the view peer sampling uses.
  // Suspects stay in until confirmed dead (docs/algorithms.md §7.3).
  const std::vector<NodeId>& LiveView() const { return live_view_; }
  // Increases whenever LiveView() changes.
  uint64_t view_epoch() const { return view_epoch_; }
  // Every known member (this node first), dead and left ones included until forgotten.
  std::vector<MemberEntry> Members() const;
  std::optional<MemberEntry> Find(NodeId id) const;

  NodeId id() const { return self_.id; }
  Incarnation incarnation() const { return self_.incarnation; }
  const std::string& address() const { return self_.address; }
  bool has_left() const { return left_; }
  // Training progress, gossiped in this node's entry (soft sync and the cluster budget). Within
  // an incarnation receivers keep the maximum, so these only take effect when they grow.
  void SetProgress(uint64_t step_clock, uint64_t samples, bool finished) {
    self_.step_clock = step_clock;
    self_.samples = samples;
    self_.finished = finished;
  }
  // Seeds are re-resolved by the driver (DNS names), so they can change.
  void SetSeeds(std::vector<std::string> seeds) { options_.seeds = std::move(seeds); }

  Duration SuspicionTimeout() const;
  // The documented detection bound for a cluster of n members (see the header comment).
  Duration DetectionBound(size_t n) const;
  const MembershipOptions& options() const { return options_; }

 private:
  struct Member {
    MemberEntry entry;
    TimePoint since{};            // last state change, local time
    TimePoint suspect_deadline{};  // when a suspect is declared dead
    TimePoint last_digest_reply{};
  };
  struct Probe {
    NodeId target;
    uint64_t id;
    TimePoint sent;
    bool indirect_sent = false;
    bool acked = false;
  };
  struct Candidate {
    MemberEntry entry;
    bool joined = false;  // it sent a Join: it gets the join reply (a digest) once admitted
    TimePoint expires;
  };
  struct Relay {
    std::string origin_address;
    uint64_t origin_probe;
    TimePoint expires;
  };

  // Who a message that passed Check is from, as Step's handlers need it.
  struct Heard {
    NodeId sender;
    bool known;  // a member (in members_, any state)
    Incarnation incarnation;
    TimePoint now;
  };
  bool OnPing(const Heard& heard, const Ping& p);
  bool OnAck(const Heard& heard, const Ack& a);
  bool OnPingReq(const Heard& heard, const PingReq& p);
  bool OnJoin(const Heard& heard, const Join& j);
  bool OnDigest(const Heard& heard, const Digest& d);
  bool OnLeave(const Heard& heard);
  void MergeOrVerify(const Heard& heard, const std::vector<MemberEntry>& entries);
  void TellIfHeldDead(const Heard& heard);
  // A message from a suspect itself, at the incarnation it is suspected at, is first-hand
  // evidence that it lives: its suspicion deadline restarts from now. (A member whose link is
  // full answers probes late but still sends; before, a collector receiving every member's
  // model over a thin link was declared dead by all while it collected.) It stays a suspect
  // until it refutes, as SWIM has it; a crashed member sends nothing, so its detection is
  // delayed at most by the messages still queued on their way when it crashed.
  void HeardFromSuspect(const Heard& heard);

  void Merge(const MemberEntry& entry, TimePoint now);
  // An unknown sender's claim about itself: Ping it at the claimed address (Candidate).
  void Verify(const MemberEntry& entry, bool joined, TimePoint now);
  // The sender's own entry among `entries`, if any.
  static const MemberEntry* OwnEntry(NodeId sender, const std::vector<MemberEntry>& entries);
  void CountRejection(std::string_view why);
  void MergeAll(const std::vector<MemberEntry>& entries, TimePoint now);
  void Transition(Member& m, const MemberEntry& entry, TimePoint now);
  void Refute(Incarnation heard);
  void Suspect(NodeId id, TimePoint now);
  void StartProbe(TimePoint now);
  void SendDigests(TimePoint now);
  void ContactSeeds(TimePoint now);
  void GossipToDead(TimePoint now);
  void Expire(TimePoint now);
  void UpdateView();
  void Broadcast(NodeId id);
  void Send(const std::string& address, Payload payload);
  std::vector<MemberEntry> Piggyback();
  std::vector<MemberEntry> DigestEntries();
  void EnterProbeOrder(NodeId id);
  Duration SuspicionFor(size_t n) const;
  std::vector<NodeId> LiveOthers() const;
  static bool IsLive(MemberState s) { return s == MemberState::kAlive || s == MemberState::kSuspect; }

  MembershipOptions options_;
  TimePoint started_;
  MemberEntry self_;
  bool left_ = false;
  bool refuted_ = false;
  // A member this node had not known joined: its digests go out before the next period, at
  // most every probe_interval / 4 (a cluster started together knows itself in a round trip, not
  // in a period or two; a burst of joins costs at most four extra digest rounds a period).
  bool joined_news_ = false;
  TimePoint last_news_digests_{};
  std::map<NodeId, Member> members_;  // everyone but this node
  std::vector<NodeId> member_ids_;    // the same ids in no order: digests sample it in O(room)
  std::mt19937_64 rng_;

  std::vector<NodeId> probe_order_;
  size_t probe_next_ = 0;
  std::optional<Probe> probe_;
  uint64_t next_probe_id_ = 1;
  std::map<uint64_t, Relay> relays_;
  std::map<uint64_t, Candidate> candidates_;  // by the random probe id of their Ping
  std::map<NodeId, int> broadcasts_;  // member -> times piggybacked
  std::set<std::pair<int, NodeId>> broadcast_order_;  // (times piggybacked, member): the same news
  void Unbroadcast(NodeId id);

  TimePoint next_period_;
  void SetLive(NodeId id, bool live);
  std::vector<NodeId> live_others_;  // alive and suspect members but this node, sorted
  bool view_dirty_ = true;           // a member's liveness changed since UpdateView (or left_ did)
  TimePoint next_expiry_{};
  // The highest step clock of the members held (Check's reference), kept as they change;
  // recomputed when one may have dropped (a member forgotten, or a new life's lower clock).
  uint64_t HighestMemberClock() const;
  mutable uint64_t highest_clock_ = 0;
  mutable bool clock_stale_ =
      false;  // the earliest suspicion, retention, relay or candidate deadline
  void NoteDeadlines(const Member& m);
  TimePoint last_join_;
  TimePoint last_seed_rejoin_;
  TimePoint last_dead_gossip_;
  TimePoint last_conflict_report_{};

  std::vector<NodeId> live_view_;
  uint64_t view_epoch_ = 0;
  std::vector<Outgoing> output_;
  std::vector<MemberEvent> events_;
  std::map<std::string, uint64_t, std::less<>> rejected_;
};

}  // namespace murmur::gossip
