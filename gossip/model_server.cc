#include "gossip/model_server.h"

#include <memory>
#include <vector>

#include "coding/update_codec.h"
#include "coding/vector_ops.h"

namespace murmur::gossip {

ModelServer::Answer ModelServer::Serve(NodeId to, uint64_t step,
                                       const std::function<std::span<const float>()>& model,
                                       TimePoint now) {
  if (!bucket_.Take(now)) {
    ++refused_;
    return {SendTo{to, SnapshotReply{step, 0, true}, nullptr}, true, kRejectSnapshotRate};
  }
  const std::span<const float> values = model();
  if (coding::FirstNonFinite(values).has_value()) {
    bucket_.Return();
    ++refused_;
    return {SendTo{to, SnapshotReply{step, 0, true}, nullptr}, true, kRejectOwnModelNonFinite};
  }
  auto bytes = std::make_shared<std::vector<std::byte>>();
  coding::EncodeDense(values, *bytes);
  ++served_;
  return {
      SendTo{to, SnapshotReply{step, static_cast<uint32_t>(values.size()), true}, std::move(bytes)},
      false,
      {}};
}

}  // namespace murmur::gossip
