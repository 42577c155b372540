// A gossip node's transport is bounded by its model (node/driver/gossip_session.h): no frame
// above a dense model's encoding, and an inbox and a training queue of at most kInboxModels of
// them.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "coding/update.h"
#include "coding/update_codec.h"
#include "node/driver/gossip_session.h"

namespace murmur::node {
namespace {

TEST(TransportBoundTest, TheLargestLegitimateFrameFitsAndTheBoundOnlyTightens) {
  for (size_t d : {size_t{1}, size_t{7}, size_t{235146}, size_t{10'000'000}}) {
    SCOPED_TRACE(d);
    PeerNodeOptions peer;
    BoundPeerByModel(d, peer);
    const transport::TransportOptions& o = peer.transport;
    // A dense fp32 update of d values, and a sparse one of all but one (a bitmap index): the
    // largest frames the codec makes for this model.
    coding::Update dense;
    dense.dimension = static_cast<uint32_t>(d);
    dense.dense = true;
    dense.values.assign(d, 1.5f);
    EXPECT_GE(o.max_frame_bytes, coding::EncodedSize(dense));
    coding::Update sparse;
    sparse.dimension = static_cast<uint32_t>(d);
    for (uint32_t i = 1; i < d; ++i) sparse.indices.push_back(i);
    sparse.values.assign(d - 1, 1.5f);
    EXPECT_GE(o.max_frame_bytes, coding::EncodedSize(sparse));
    EXPECT_GE(o.max_frame_bytes, d * sizeof(float));  // a snapshot or a final model
    EXPECT_LE(o.max_frame_bytes, d * sizeof(float) + d / 8 + 64 * 1024);
    EXPECT_EQ(o.max_inbox_bytes, std::min(transport::TransportOptions{}.max_inbox_bytes,
                                          kInboxModels * o.max_frame_bytes));
    EXPECT_EQ(peer.max_training_queue_bytes, std::min(PeerNodeOptions{}.max_training_queue_bytes,
                                                      kInboxModels * o.max_frame_bytes));
    PeerNodeOptions tight;
    tight.transport.max_frame_bytes = 100;
    tight.transport.max_inbox_bytes = 1000;
    tight.max_training_queue_bytes = 2000;
    BoundPeerByModel(d, tight);
    EXPECT_EQ(tight.transport.max_frame_bytes, 100u) << "a tighter setting stays";
    EXPECT_EQ(tight.transport.max_inbox_bytes, 1000u);
    EXPECT_EQ(tight.max_training_queue_bytes, 2000u);
  }
}

}  // namespace
}  // namespace murmur::node
