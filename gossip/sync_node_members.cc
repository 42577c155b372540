// What a synchronous run does when one of its members is gone: declared dead by the membership
// (it stopped answering: killed, SIGSTOPped, its host gone) or left without finishing. A member
// that finished is not gone: the run's end reaches everyone that way.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "base/log.h"
#include "gossip/sync_node.h"

namespace murmur::gossip {
namespace {

std::string GoneHow(const MemberView& view, NodeId id) {
  const auto entry = std::find_if(view.members.begin(), view.members.end(),
                                  [&](const MemberEntry& m) { return m.id == id; });
  if (entry == view.members.end()) return "no longer in the view";
  return entry->state == MemberState::kLeft ? "left before finishing"
                                            : "declared dead: it stopped answering probes";
}

}  // namespace

std::vector<int64_t> SyncNode::GoneRanks(const MemberView& view,
                                         const std::vector<NodeId>& live) const {
  std::vector<int64_t> gone;
  for (size_t r = 0; r < ids_.size(); ++r) {
    const NodeId id = ids_[r];
    if (id == o_.self || std::binary_search(live.begin(), live.end(), id)) continue;
    const auto entry = std::find_if(view.members.begin(), view.members.end(),
                                    [&](const MemberEntry& m) { return m.id == id; });
    if (entry != view.members.end() && entry->finished) continue;
    gone.push_back(static_cast<int64_t>(r));
  }
  return gone;
}

// Ring: every rank holds a chunk of every step, so one gone rank stops the ring for good.
// Tree modes: the root gone ends the run for every rank (nobody else steps the model); a parent
// whose children still alive cannot be decoded (more than s gone, or a whole fractional group)
// can never answer its parent again, so it ends, and its own parent then counts it gone. A rank
// whose parent is gone gets no model any more and ends on the root's "finished", as a straggler
// the root no longer waits for.
void SyncNode::CheckRunMembers(const MemberView& view, const std::vector<NodeId>& live) {
  if (plan_.mode == Mode::kPs || peer_finished_) return;
  const std::vector<int64_t> gone = GoneRanks(view, live);
  if (gone.empty()) return;
  const int64_t first = gone.front();
  if (!tree_) {
    return Fail(UnavailableError(fmt::format(
        "ring rank {} (node {}) is gone ({}): every rank of a ring all-reduce carries a chunk of "
        "every step, so the ring cannot go on",
        first, ids_[static_cast<size_t>(first)], GoneHow(view, ids_[static_cast<size_t>(first)]))));
  }
  if (first == 0) {
    return Fail(UnavailableError(fmt::format(
        "the root (node {}) is gone ({}): nobody else steps the model, so the {} run cannot go on",
        ids_[0], GoneHow(view, ids_[0]), ModeName(plan_.mode))));
  }
  const coding::TreeLayout& layout = *plan_.layout;
  if (layout.IsLeaf(rank_)) return;
  const int64_t child0 = layout.FirstChild(rank_);
  const int n = plan_.code->n();
  uint64_t alive = 0;
  std::vector<NodeId> lost;
  for (int k = 0; k < n; ++k) {
    const bool is_gone = std::binary_search(gone.begin(), gone.end(), child0 + k);
    if (!is_gone) alive |= uint64_t{1} << k;
    if (is_gone) lost.push_back(ids_[static_cast<size_t>(child0 + k)]);
  }
  if (plan_.code->Decodable(alive)) return;
  Fail(UnavailableError(fmt::format(
      "{} of this parent's {} children are gone (nodes {}): its {} code (s = {}) cannot decode "
      "from the others, so this subtree can never answer its parent again",
      lost.size(), n, fmt::join(lost, ", "), coding::CodeSchemeName(plan_.code->scheme()),
      plan_.code->s())));
}

}  // namespace murmur::gossip
