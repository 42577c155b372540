#include "gossip/membership.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"

namespace murmur::gossip {
namespace {

template <typename... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <typename... F>
Overloaded(F...) -> Overloaded<F...>;

// Training progress only grows within one incarnation: `into` keeps the larger of each.
void MergeProgress(const MemberEntry& from, MemberEntry& into) {
  into.step_clock = std::max(into.step_clock, from.step_clock);
  into.samples = std::max(into.samples, from.samples);
  into.finished = into.finished || from.finished;
}

}  // namespace

Status MembershipOptions::Validate() const {
  if (address.empty()) return InvalidArgumentError("membership: address is empty");
  if (probe_interval <= Duration::zero()) {
    return InvalidArgumentError("membership: probe_interval must be positive");
  }
  if (probe_timeout <= Duration::zero() || probe_timeout >= probe_interval) {
    return InvalidArgumentError("membership: probe_timeout must be positive and below "
                                "probe_interval (the indirect probe needs the rest of the period)");
  }
  if (indirect_checks < 0 || gossip_fanout < 1 || max_piggyback < 0 ||
      suspicion_multiplier < 1 || retransmit_multiplier < 1) {
    return InvalidArgumentError("membership: indirect_checks >= 0, gossip_fanout >= 1, "
                                "max_piggyback >= 0 and multipliers >= 1 are required");
  }
  if (max_members < 1) return InvalidArgumentError("membership: max_members must be at least 1");
  if (max_candidates < 1) return InvalidArgumentError("membership: max_candidates must be at least 1");
  if (max_digest_entries < 1) {
    return InvalidArgumentError("membership: max_digest_entries must be at least 1");
  }
  if (dead_retention < probe_interval) {
    return InvalidArgumentError("membership: dead_retention must be at least one probe_interval");
  }
  return OkStatus();
}

const char* MemberEventName(MemberEvent::Kind kind) {
  switch (kind) {
    case MemberEvent::Kind::kJoined: return "joined";
    case MemberEvent::Kind::kSuspected: return "suspected";
    case MemberEvent::Kind::kDead: return "dead";
    case MemberEvent::Kind::kLeft: return "left";
    case MemberEvent::Kind::kRecovered: return "recovered";
    case MemberEvent::Kind::kRefuted: return "refuted";
    case MemberEvent::Kind::kForgotten: return "forgotten";
    case MemberEvent::Kind::kIdConflict: return "id_conflict";
  }
  return "?";
}

const char* MemberStateName(MemberState state) {
  switch (state) {
    case MemberState::kAlive: return "alive";
    case MemberState::kSuspect: return "suspect";
    case MemberState::kDead: return "dead";
    case MemberState::kLeft: return "left";
  }
  return "?";
}

bool Supersedes(const MemberEntry& incoming, const MemberEntry& current) {
  if (incoming.incarnation != current.incarnation) {
    return incoming.incarnation > current.incarnation;
  }
  return static_cast<int>(incoming.state) > static_cast<int>(current.state);
}

Membership::Membership(MembershipOptions options, TimePoint now)
    : options_(std::move(options)), started_(now), rng_(options_.rng_seed) {
  MURMUR_CHECK(options_.Validate().ok()) << options_.Validate().ToString();
  self_.id = options_.id;
  self_.address = options_.address;
  self_.incarnation = options_.incarnation;
  self_.state = MemberState::kAlive;
  // Spread the first period so nodes started together do not probe in lockstep.
  next_period_ = now + Duration(rng_() % options_.probe_interval.count());
  last_join_ = now - options_.join_retry;
  last_news_digests_ = now - options_.probe_interval;
  last_seed_rejoin_ = now;
  last_dead_gossip_ = now;
  last_conflict_report_ = now - options_.probe_interval;
  UpdateView();
}

Duration Membership::SuspicionFor(size_t n) const {
  const double scale = std::max(1.0, std::log10(std::max<double>(static_cast<double>(n), 1.0)));
  return Duration(static_cast<int64_t>(options_.suspicion_multiplier * scale *
                                       static_cast<double>(options_.probe_interval.count())));
}

Duration Membership::SuspicionTimeout() const { return SuspicionFor(live_view_.size()); }

Duration Membership::DetectionBound(size_t n) const {
  const int64_t spread = static_cast<int64_t>(std::ceil(std::log2(std::max<size_t>(n, 2)))) + 4;
  return options_.probe_interval * static_cast<int64_t>(2 * n) + SuspicionFor(n) +
         options_.probe_interval * spread;
}

std::vector<MemberEntry> Membership::Members() const {
  std::vector<MemberEntry> out;
  out.reserve(members_.size() + 1);
  out.push_back(self_);
  for (const auto& [id, m] : members_) out.push_back(m.entry);
  return out;
}

std::optional<MemberEntry> Membership::Find(NodeId id) const {
  if (id == self_.id) return self_;
  auto it = members_.find(id);
  if (it == members_.end()) return std::nullopt;
  return it->second.entry;
}

std::vector<Outgoing> Membership::TakeOutput() { return std::exchange(output_, {}); }
std::vector<MemberEvent> Membership::TakeEvents() { return std::exchange(events_, {}); }

void Membership::Send(const std::string& address, Payload payload) {
  if (address.empty() || address == self_.address) return;
  output_.push_back({address, std::move(payload)});
}

void Membership::Refute(Incarnation heard) {
  if (left_) return;
  self_.incarnation = std::max(self_.incarnation, heard) + 1;
  events_.push_back({MemberEvent::Kind::kRefuted, self_.id, self_.incarnation, self_.address});
  refuted_ = true;
}

void Membership::Transition(Member& m, const MemberEntry& entry, TimePoint now) {
  // Invariants: a member's entry is replaced only by one for the same member, and its life
  // number (incarnation) never goes down: an older life's news is refused before it gets here
  // (Supersedes, SWIM's merge order, docs/algorithms.md §7.1).
  MURMUR_CHECK_EQ(entry.id, m.entry.id);
  MURMUR_CHECK_GE(entry.incarnation, m.entry.incarnation) << "member " << entry.id;
  const MemberState before = m.entry.state;
  const bool newer_life = entry.incarnation > m.entry.incarnation;
  const uint64_t heartbeat = newer_life ? entry.heartbeat : std::max(entry.heartbeat, m.entry.heartbeat);
  const MemberEntry before_entry = m.entry;
  m.entry = entry;
  m.entry.heartbeat = heartbeat;
  if (!newer_life) MergeProgress(before_entry, m.entry);
  if (m.entry.step_clock < before_entry.step_clock) clock_stale_ = true;  // a new life restarts it
  highest_clock_ = std::max(highest_clock_, m.entry.step_clock);
  if (before == entry.state && !newer_life) return;
  SetLive(entry.id, IsLive(entry.state));
  m.since = now;
  if (entry.state == MemberState::kSuspect) m.suspect_deadline = now + SuspicionTimeout();
  NoteDeadlines(m);
  Broadcast(entry.id);
  using K = MemberEvent::Kind;
  switch (entry.state) {
    case MemberState::kAlive:
      if (before != MemberState::kAlive) events_.push_back({K::kRecovered, entry.id, entry.incarnation, entry.address});
      break;
    case MemberState::kSuspect:
      if (before != MemberState::kSuspect) events_.push_back({K::kSuspected, entry.id, entry.incarnation, entry.address});
      break;
    case MemberState::kDead:
      events_.push_back({K::kDead, entry.id, entry.incarnation, entry.address});
      break;
    case MemberState::kLeft:
      events_.push_back({K::kLeft, entry.id, entry.incarnation, entry.address});
      break;
  }
  if (IsLive(entry.state) && !IsLive(before)) {
    EnterProbeOrder(entry.id);
  }
}

// A member that joins or comes back goes to a random place in the rest of the current pass
// (§7.1 step 1), so it is probed within this pass or the next.
void Membership::EnterProbeOrder(NodeId id) {
  const size_t at = probe_next_ + rng_() % (probe_order_.size() - probe_next_ + 1);
  probe_order_.insert(probe_order_.begin() + static_cast<std::ptrdiff_t>(at), id);
}

void Membership::Merge(const MemberEntry& entry, TimePoint now) {
  if (entry.id == self_.id) {
    if (entry.address != self_.address && entry.state == MemberState::kAlive) {
      // An older life at another endpoint (a pod restarted with a new IP) is stale news. A claim
      // at least as new is a live twin: refuting would start an incarnation war, so report.
      if (entry.incarnation >= self_.incarnation &&
          now - last_conflict_report_ >= options_.probe_interval) {
        last_conflict_report_ = now;
        events_.push_back({MemberEvent::Kind::kIdConflict, entry.id, entry.incarnation, entry.address});
      }
      return;
    }
    // Someone holds a claim about this node that is not "alive at our incarnation": an
    // accusation, or a newer life from before a restart. Beat it (memberlist's refute).
    if (entry.incarnation > self_.incarnation ||
        (entry.incarnation == self_.incarnation && entry.state != MemberState::kAlive)) {
      Refute(entry.incarnation);
    }
    return;
  }
  auto it = members_.find(entry.id);
  if (it == members_.end()) {
    Member m;
    m.entry = entry;
    m.since = now;
    if (entry.state == MemberState::kSuspect) m.suspect_deadline = now + SuspicionTimeout();
    NoteDeadlines(m);
    members_.emplace(entry.id, m);
    member_ids_.push_back(entry.id);
    SetLive(entry.id, IsLive(entry.state));
    highest_clock_ = std::max(highest_clock_, entry.step_clock);
    Broadcast(entry.id);
    if (IsLive(entry.state)) {
      events_.push_back({MemberEvent::Kind::kJoined, entry.id, entry.incarnation, entry.address});
      EnterProbeOrder(entry.id);
      joined_news_ = true;
    }
    return;
  }
  Member& m = it->second;
  if (Supersedes(entry, m.entry)) {
    Transition(m, entry, now);
  } else if (entry.incarnation == m.entry.incarnation) {
    m.entry.heartbeat = std::max(m.entry.heartbeat, entry.heartbeat);
    MergeProgress(entry, m.entry);
    highest_clock_ = std::max(highest_clock_, m.entry.step_clock);
  }
}

uint64_t Membership::HighestMemberClock() const {
  if (clock_stale_) {
    highest_clock_ = 0;
    for (const auto& [id, m] : members_)
      highest_clock_ = std::max(highest_clock_, m.entry.step_clock);
    clock_stale_ = false;
  }
  return highest_clock_;
}

void Membership::CountRejection(std::string_view why) {
  auto it = rejected_.find(why);
  if (it == rejected_.end()) it = rejected_.emplace(std::string(why), 0).first;
  ++it->second;
}

const MemberEntry* Membership::OwnEntry(NodeId sender, const std::vector<MemberEntry>& entries) {
  for (const MemberEntry& e : entries) {
    if (e.id == sender) return &e;
  }
  return nullptr;
}

void Membership::Verify(const MemberEntry& entry, bool joined, TimePoint now) {
  if (!IsLive(entry.state) || entry.id == self_.id) return;
  for (auto& [id, c] : candidates_) {
    if (c.entry.id == entry.id && c.entry.address == entry.address) {
      c.joined = c.joined || joined;
      return;  // already asked
    }
  }
  if (candidates_.size() >= options_.max_candidates) {
    CountRejection(kRejectJoinBacklog);
    return;
  }
  // A random probe id: only whoever receives the Ping at that address can answer it.
  uint64_t id = rng_();
  while (id == 0 || candidates_.contains(id) || relays_.contains(id)) id = rng_();
  candidates_[id] = {entry, joined, now + options_.probe_interval};
  Send(entry.address, Ping{id, {self_}});
}

void Membership::MergeAll(const std::vector<MemberEntry>& entries, TimePoint now) {
  for (const auto& e : entries) Merge(e, now);
}

Incarnation Membership::IncarnationCeiling(TimePoint now) const {
  const auto ran = std::chrono::duration_cast<std::chrono::milliseconds>(now - started_).count();
  const uint64_t lead = options_.max_incarnation_lead + static_cast<uint64_t>(std::max<int64_t>(0, ran));
  const Incarnation start = std::min(options_.incarnation, kMaxIncarnation - 1);
  return kMaxIncarnation - 1 - start <= lead ? kMaxIncarnation - 1 : start + lead;
}

std::string_view Membership::Check(const Envelope& message, TimePoint now) const {
  const std::vector<MemberEntry>* entries = std::visit(
      Overloaded{
          [](const Ping& p) { return &p.gossip; },
          [](const Ack& a) { return &a.gossip; },
          [](const PingReq& p) { return &p.gossip; },
          [](const Digest& d) { return &d.members; },
          [](const auto&) { return static_cast<const std::vector<MemberEntry>*>(nullptr); },
      },
      message.payload);
  std::vector<MemberEntry> join;
  if (const auto* j = std::get_if<Join>(&message.payload)) {
    if (j->self.id != message.sender_id) return kRejectImpersonation;
    join.push_back(j->self);
    entries = &join;
  }
  if (entries == nullptr && !std::holds_alternative<gossip::Leave>(message.payload)) return {};
  const Incarnation ceiling = IncarnationCeiling(now);
  if (message.incarnation > ceiling) return kRejectIncarnation;
  if (entries == nullptr) return {};
  // The highest clock this node knows: the reference a gossiped clock may lead by
  // max_clock_lead. Knowing none (joining), it takes any clock up to kMaxStepClock.
  const uint64_t known_clock = std::max(self_.step_clock, HighestMemberClock());
  const uint64_t clock_ceiling =
      known_clock == 0 ? kMaxStepClock
                       : std::min(kMaxStepClock, known_clock + options_.max_clock_lead);
  size_t new_members = 0;
  for (const MemberEntry& e : *entries) {
    if (e.id == 0 || e.address.empty()) return kRejectMalformedMember;
    if (e.incarnation > ceiling) return kRejectIncarnation;
    if (e.step_clock > clock_ceiling || e.samples > kMaxSamples) return kRejectClock;
    if (e.id != self_.id && !members_.contains(e.id)) ++new_members;
  }
  if (new_members > 0 && members_.size() + new_members > options_.max_members) {
    return kRejectMemberLimit;
  }
  return {};
}

bool Membership::Step(const Envelope& message, TimePoint now) {
  if (left_) return false;
  const NodeId sender = message.sender_id;
  if (sender == self_.id) return false;  // our own echo, or a misconfigured twin
  if (const std::string_view why = Check(message, now); !why.empty()) {
    CountRejection(why);
    return true;  // a membership message, refused
  }
  const Heard heard{sender, members_.contains(sender), message.incarnation, now};
  const bool handled = std::visit(Overloaded{
                                      [&](const Ping& p) { return OnPing(heard, p); },
                                      [&](const Ack& a) { return OnAck(heard, a); },
                                      [&](const PingReq& p) { return OnPingReq(heard, p); },
                                      [&](const Join& j) { return OnJoin(heard, j); },
                                      [&](const Digest& d) { return OnDigest(heard, d); },
                                      [&](const gossip::Leave&) { return OnLeave(heard); },
                                      [&](const auto&) { return false; },
                                  },
                                  message.payload);
  if (!handled) return false;
  HeardFromSuspect(heard);
  if (!std::holds_alternative<gossip::Leave>(message.payload)) TellIfHeldDead(heard);
  UpdateView();
  return true;
}

// What a member says is merged (transitive trust among members); an unknown sender is only
// heard about itself, and admitted once it answers at its address (Verify).
void Membership::MergeOrVerify(const Heard& heard, const std::vector<MemberEntry>& entries) {
  if (heard.known) {
    MergeAll(entries, heard.now);
  } else if (const MemberEntry* own = OwnEntry(heard.sender, entries)) {
    Verify(*own, false, heard.now);
  } else if (!entries.empty()) {
    CountRejection(kRejectStrangerGossip);  // a stranger's word about others only
  }
}

bool Membership::OnPing(const Heard& heard, const Ping& p) {
  MergeOrVerify(heard, p.gossip);
  if (heard.known) {
    Send(members_.at(heard.sender).entry.address, Ack{p.probe_id, Piggyback()});
  } else if (const MemberEntry* own = OwnEntry(heard.sender, p.gossip)) {
    // A verification Ping (or a stranger's probe): answer it, telling only about us.
    Send(own->address, Ack{p.probe_id, {self_}});
  }
  return true;
}

bool Membership::OnAck(const Heard& heard, const Ack& a) {
  if (auto c = candidates_.find(a.probe_id);
      c != candidates_.end() && c->second.entry.id == heard.sender) {
    Candidate candidate = std::move(c->second);
    candidates_.erase(c);
    const MemberEntry* own = OwnEntry(heard.sender, a.gossip);
    Merge(own != nullptr && own->address == candidate.entry.address ? *own : candidate.entry,
          heard.now);
    if (candidate.joined) Send(candidate.entry.address, Digest{DigestEntries(), false});
    return true;
  }
  MergeOrVerify(heard, a.gossip);
  if (probe_.has_value() && probe_->id == a.probe_id) {
    probe_->acked = true;
  } else if (auto r = relays_.find(a.probe_id); r != relays_.end()) {
    Send(r->second.origin_address, Ack{r->second.origin_probe, Piggyback()});
    relays_.erase(r);
  }
  return true;
}

bool Membership::OnPingReq(const Heard& heard, const PingReq& p) {
  MergeOrVerify(heard, p.gossip);
  if (!heard.known) return true;
  const uint64_t id = next_probe_id_++;
  relays_[id] = {members_.at(heard.sender).entry.address, p.probe_id,
                 heard.now + options_.probe_interval};
  Send(p.target_address, Ping{id, Piggyback()});
  return true;
}

bool Membership::OnJoin(const Heard& heard, const Join& j) {
  // A known member rejoining from its known address (a restart) needs no new proof.
  if (heard.known && members_.at(heard.sender).entry.address == j.self.address) {
    Merge(j.self, heard.now);
    Send(j.self.address, Digest{DigestEntries(), false});
  } else {
    Verify(j.self, true, heard.now);
  }
  return true;
}

bool Membership::OnDigest(const Heard& heard, const Digest& d) {
  MergeOrVerify(heard, d.members);
  if (heard.known && d.reply_wanted) {
    Send(members_.at(heard.sender).entry.address, Digest{DigestEntries(), false});
  }
  return true;
}

bool Membership::OnLeave(const Heard& heard) {
  auto it = members_.find(heard.sender);
  if (it != members_.end()) {
    MemberEntry e = it->second.entry;
    e.incarnation = std::max(e.incarnation, heard.incarnation);
    e.state = MemberState::kLeft;
    if (Supersedes(e, it->second.entry)) Transition(it->second, e, heard.now);
  }
  return true;
}

// A message from a member we hold dead: tell it, so it refutes (at most once a period).
void Membership::TellIfHeldDead(const Heard& heard) {
  auto it = members_.find(heard.sender);
  if (it == members_.end() || IsLive(it->second.entry.state) ||
      it->second.entry.incarnation < heard.incarnation ||
      heard.now - it->second.last_digest_reply < options_.probe_interval) {
    return;
  }
  it->second.last_digest_reply = heard.now;
  Send(it->second.entry.address, Digest{DigestEntries(), false});
}

void Membership::Suspect(NodeId id, TimePoint now) {
  auto it = members_.find(id);
  if (it == members_.end() || it->second.entry.state != MemberState::kAlive) return;
  MemberEntry e = it->second.entry;
  e.state = MemberState::kSuspect;
  Transition(it->second, e, now);
}

void Membership::StartProbe(TimePoint now) {
  // Shuffled round-robin (§7.1 step 1): every live member once per pass.
  while (true) {
    if (probe_next_ >= probe_order_.size()) {
      probe_order_ = LiveOthers();
      std::shuffle(probe_order_.begin(), probe_order_.end(), rng_);
      probe_next_ = 0;
      if (probe_order_.empty()) return;
    }
    const NodeId target = probe_order_[probe_next_++];
    auto it = members_.find(target);
    if (it == members_.end() || !IsLive(it->second.entry.state)) continue;
    probe_ = Probe{target, next_probe_id_++, now};
    Send(it->second.entry.address, Ping{probe_->id, Piggyback()});
    return;
  }
}

void Membership::ContactSeeds(TimePoint now) {
  const bool alone = live_others_.empty();  // not LiveOthers(), a copy: this runs every tick
  const bool retry = alone && now - last_join_ >= options_.join_retry;
  const bool rejoin = now - last_seed_rejoin_ >= options_.seed_rejoin;
  if (!retry && !rejoin) return;
  if (retry) last_join_ = now;
  if (rejoin) last_seed_rejoin_ = now;
  for (const std::string& seed : options_.seeds) {
    bool known_live = false;
    for (const auto& [id, m] : members_) {
      if (m.entry.address == seed && IsLive(m.entry.state)) known_live = true;
    }
    if (!known_live) Send(seed, Join{self_});
  }
}

void Membership::GossipToDead(TimePoint now) {
  if (now - last_dead_gossip_ < options_.dead_gossip) return;
  last_dead_gossip_ = now;
  std::vector<NodeId> dead;
  for (const auto& [id, m] : members_) {
    if (m.entry.state == MemberState::kDead) dead.push_back(id);
  }
  if (dead.empty()) return;
  const NodeId pick = dead[rng_() % dead.size()];
  Send(members_.at(pick).entry.address, Digest{DigestEntries(), true});
}

void Membership::Tick(TimePoint now) {
  if (left_) return;
  Expire(now);
  if (probe_.has_value() && !probe_->acked && !probe_->indirect_sent &&
      now - probe_->sent >= options_.probe_timeout) {
    probe_->indirect_sent = true;
    std::vector<NodeId> helpers = LiveOthers();
    std::erase(helpers, probe_->target);
    std::shuffle(helpers.begin(), helpers.end(), rng_);
    helpers.resize(std::min<size_t>(helpers.size(), static_cast<size_t>(options_.indirect_checks)));
    const auto target = members_.find(probe_->target);
    if (target != members_.end()) {
      for (NodeId h : helpers) {
        Send(members_.at(h).entry.address,
             PingReq{probe_->id, probe_->target, target->second.entry.address, Piggyback()});
      }
    }
  }
  if (now >= next_period_) {
    if (probe_.has_value() && !probe_->acked) Suspect(probe_->target, now);
    probe_.reset();
    ++self_.heartbeat;
    next_period_ += options_.probe_interval;
    if (next_period_ <= now) next_period_ = now + options_.probe_interval;
    StartProbe(now);
    SendDigests(now);
    GossipToDead(now);
    joined_news_ = false;
  } else if (refuted_) {
    SendDigests(now);  // spread a refutation without waiting for the next period
  } else if (joined_news_ && now - last_news_digests_ >= options_.probe_interval / 4) {
    SendDigests(now);
    last_news_digests_ = now;
    joined_news_ = false;
  }
  // Every tick, not every period: a node's first Join goes out at once (its first period is
  // spread over probe_interval). ContactSeeds keeps to join_retry and seed_rejoin itself.
  ContactSeeds(now);
  refuted_ = false;
  UpdateView();
}

void Membership::Leave(TimePoint) {
  if (left_) return;
  // Our own entry first: its progress ("finished" above all) must not leave with us. A member
  // that ends its run and leaves within a protocol period would otherwise take the news along,
  // and members that depend on it (a synchronous run's ranks) would wait for it forever.
  for (NodeId id : LiveOthers()) {
    Send(members_.at(id).entry.address, Digest{{self_}, false});
    Send(members_.at(id).entry.address, gossip::Leave{});
  }
  left_ = true;
  view_dirty_ = true;
  self_.state = MemberState::kLeft;
  UpdateView();
}

}  // namespace murmur::gossip
