#include "gossip/node_io.h"

#include <algorithm>

namespace murmur::gossip {

std::vector<NodeId> LiveIds(const MemberView& view, NodeId self) {
  std::vector<NodeId> out;
  bool has_self = false;
  for (const MemberEntry& m : view.members) {
    if (m.id == self) {
      has_self = true;
      out.push_back(m.id);
    } else if (m.state == MemberState::kAlive || m.state == MemberState::kSuspect) {
      out.push_back(m.id);
    }
  }
  if (!has_self) out.push_back(self);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void ActionQueue::Emit(NodeAction action) {
  if (std::holds_alternative<Wait>(action) && !actions_.empty() &&
      std::holds_alternative<Wait>(actions_.back())) {
    actions_.back() = std::move(action);
    return;
  }
  actions_.push_back(std::move(action));
}

bool LingerIsOver(TimePoint now, TimePoint until, bool settled, ActionQueue& out) {
  if (!settled && now < until) {
    out.Emit(Wait{until});
    return false;
  }
  out.Emit(RunOver{OkStatus()});
  return true;
}

}  // namespace murmur::gossip
