// Gossip nodes that really train, on the CPU device: the device-resident path (CHOCO
// with DeviceCompressor and the kernels' vector ops) gives the same models as the host path, bit
// for bit, through training, the consensus finish and the final evaluation.
#include "tests/testing/gossip_training.h"

namespace murmur::node {
namespace {

TEST(GossipDeviceTest, DevicePathTrainsExactlyAsTheHostPathOnTheCpu) {
  auto data = LoadFashionMnist();
  if (!data.ok()) GTEST_SKIP() << data.status();
  const auto host = testing::RunGossipTraining(*data, kernels::Device::Cpu(), false);
  const auto device = testing::RunGossipTraining(*data, kernels::Device::Cpu(), true);
  ASSERT_EQ(host.models.size(), 4u);
  EXPECT_EQ(host.models, device.models);
  EXPECT_EQ(host.accuracy, device.accuracy);
  EXPECT_EQ(host.steps, device.steps);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(host.finish[i], "averaged") << "node " << i;
    EXPECT_GT(host.accuracy[i], 0.7) << "node " << i;  // it learned
  }
  EXPECT_EQ(host.models[0], host.models[3]);  // the finish made them one model
  EXPECT_EQ(device.transfer_bytes, 0u);       // nothing crosses on the CPU
}

}  // namespace
}  // namespace murmur::node
