// What a member knows and spreads, kept so that a tick or a message costs what it changes, not a
// walk over every member: the live view (kept sorted as liveness changes), the news of recent
// changes and their piggyback order (fewest sends first), digests, and the expiry of suspects and
// retained dead members (walked only when a deadline is due). Split from membership.cc for size;
// the contracts are membership.h's.
#include <algorithm>
#include <cmath>

#include "gossip/membership.h"

namespace murmur::gossip {

std::vector<NodeId> Membership::LiveOthers() const { return live_others_; }

void Membership::Broadcast(NodeId id) {
  if (auto it = broadcasts_.find(id); it != broadcasts_.end())
    broadcast_order_.erase({it->second, id});
  broadcasts_[id] = 0;
  broadcast_order_.insert({0, id});
}

void Membership::Unbroadcast(NodeId id) {
  if (auto it = broadcasts_.find(id); it != broadcasts_.end()) {
    broadcast_order_.erase({it->second, id});
    broadcasts_.erase(it);
  }
}

std::vector<MemberEntry> Membership::Piggyback() {
  std::vector<MemberEntry> out = {self_};
  if (broadcasts_.empty() || options_.max_piggyback == 0) return out;
  const int limit =
      options_.retransmit_multiplier *
      static_cast<int>(std::ceil(std::log10(static_cast<double>(members_.size()) + 2)));
  // Fewest transmissions first (docs/algorithms.md §7.1, dissemination); broadcast_order_ keeps that
  // order, so a message costs the entries it carries, not a sort of all the news.
  std::vector<std::pair<int, NodeId>> taken;
  for (auto it = broadcast_order_.begin();
       it != broadcast_order_.end() && static_cast<int>(out.size()) <= options_.max_piggyback;
       ++it) {
    const NodeId id = it->second;
    if (auto entry = Find(id); entry.has_value() && id != self_.id) out.push_back(*entry);
    taken.push_back(*it);
  }
  for (const auto& [count, id] : taken) {
    broadcast_order_.erase({count, id});
    if (count + 1 >= limit) {
      broadcasts_.erase(id);
    } else {
      broadcasts_[id] = count + 1;
      broadcast_order_.insert({count + 1, id});
    }
  }
  return out;
}

std::vector<MemberEntry> Membership::DigestEntries() {
  if (members_.size() + 1 <= options_.max_digest_entries) return Members();
  std::vector<MemberEntry> out = {self_};
  // News that went out least first (as Piggyback): in id order the same lowest ids would fill
  // every digest while news lasts, and a large cluster's later joiners would spread only by
  // probes (1024 members: views still incomplete a minute after the start).
  for (const auto& [count, id] : broadcast_order_) {
    if (out.size() >= options_.max_digest_entries) break;
    if (auto it = members_.find(id); it != members_.end()) out.push_back(it->second.entry);
  }
  // Then members drawn at random without repeats (a partial Fisher-Yates over member_ids_,
  // whose order is free), skipping the news already in: O(room), not a walk over every member.
  for (size_t i = 0; i < member_ids_.size() && out.size() < options_.max_digest_entries; ++i) {
    std::swap(member_ids_[i], member_ids_[i + rng_() % (member_ids_.size() - i)]);
    const NodeId id = member_ids_[i];
    if (!broadcasts_.contains(id)) out.push_back(members_.at(id).entry);
  }
  return out;
}

void Membership::UpdateView() {
  // Only a change of some member's liveness (SetLive) or our leaving changes the view: a message
  // that changes none costs nothing here, and one that does costs a copy of the live ids, not a
  // walk over every member.
  if (!view_dirty_) return;
  view_dirty_ = false;
  std::vector<NodeId> view;
  if (!left_) {
    view.reserve(live_others_.size() + 1);
    view = live_others_;
    view.insert(std::lower_bound(view.begin(), view.end(), self_.id), self_.id);
  }
  if (view != live_view_) {
    live_view_ = std::move(view);
    ++view_epoch_;
  }
}

void Membership::SetLive(NodeId id, bool live) {
  auto it = std::lower_bound(live_others_.begin(), live_others_.end(), id);
  const bool present = it != live_others_.end() && *it == id;
  if (live && !present) live_others_.insert(it, id);
  if (!live && present) live_others_.erase(it);
  view_dirty_ |= live != present;
}

void Membership::SendDigests(TimePoint) {
  std::vector<NodeId> live = LiveOthers();
  std::shuffle(live.begin(), live.end(), rng_);
  const size_t fanout = std::min<size_t>(live.size(), static_cast<size_t>(options_.gossip_fanout));
  if (fanout == 0) return;
  const std::vector<MemberEntry> all = DigestEntries();
  for (size_t i = 0; i < fanout; ++i) Send(members_.at(live[i]).entry.address, Digest{all, false});
}

void Membership::HeardFromSuspect(const Heard& heard) {
  const auto it = members_.find(heard.sender);
  if (it == members_.end()) return;
  Member& m = it->second;
  if (m.entry.state != MemberState::kSuspect || heard.incarnation != m.entry.incarnation) return;
  m.suspect_deadline = std::max(m.suspect_deadline, heard.now + SuspicionTimeout());
  NoteDeadlines(m);
}

void Membership::NoteDeadlines(const Member& m) {
  if (m.entry.state == MemberState::kSuspect)
    next_expiry_ = std::min(next_expiry_, m.suspect_deadline);
  if (!IsLive(m.entry.state))
    next_expiry_ = std::min(next_expiry_, m.since + options_.dead_retention);
}

void Membership::Expire(TimePoint now) {
  for (auto it = relays_.begin(); it != relays_.end();) {
    it = now >= it->second.expires ? relays_.erase(it) : std::next(it);
  }
  for (auto it = candidates_.begin(); it != candidates_.end();) {
    if (now < it->second.expires) {
      ++it;
      continue;
    }
    CountRejection(kRejectUnverified);
    it = candidates_.erase(it);
  }
  // Every member's deadline is noted when it is set (NoteDeadlines), so the walk over the
  // members runs only when one is due: O(1) per tick instead of O(members).
  if (now < next_expiry_) return;
  next_expiry_ = TimePoint::max();
  for (auto it = members_.begin(); it != members_.end();) {
    Member& m = it->second;
    if (m.entry.state == MemberState::kSuspect && now >= m.suspect_deadline) {
      MemberEntry e = m.entry;
      e.state = MemberState::kDead;
      Transition(m, e, now);
    }
    if (!IsLive(m.entry.state) && now - m.since >= options_.dead_retention) {
      events_.push_back(
          {MemberEvent::Kind::kForgotten, it->first, m.entry.incarnation, m.entry.address});
      Unbroadcast(it->first);
      SetLive(it->first, false);
      std::erase(member_ids_, it->first);
      it = members_.erase(it);
      clock_stale_ = true;
      continue;
    }
    NoteDeadlines(m);
    ++it;
  }
}

}  // namespace murmur::gossip
