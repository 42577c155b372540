// HostMirror: the host's view of a node's model reads what the model holds at the call and
// writes it whole; a write of another size is a broken invariant (a CHECK). On a GPU (when this
// machine has one) the view is a copy that follows the device's memory.
#include "gossip/host_mirror.h"

#include <gtest/gtest.h>

#include <vector>

#include "kernels/device.h"
#include "kernels/memory.h"

namespace murmur::gossip {
namespace {

TEST(HostMirrorTest, OnTheCpuTheViewIsTheModelItself) {
  std::vector<float> model = {1, 2, 3};
  HostMirror mirror(model, kernels::Device::Cpu());
  EXPECT_EQ(mirror.Read().data(), model.data());
  model[1] = 7;
  EXPECT_EQ(mirror.Read()[1], 7);
  const std::vector<float> adopted = {4, 5, 6};
  mirror.Write(adopted);
  EXPECT_EQ(model, adopted);
}

TEST(HostMirrorTest, AWriteOfAnotherSizeIsABrokenInvariant) {
  std::vector<float> model(3, 0.0f);
  HostMirror mirror(model, kernels::Device::Cpu());
  const std::vector<float> short_model(2, 1.0f);
  EXPECT_DEATH(mirror.Write(short_model), "");
}

TEST(HostMirrorTest, OnAGpuTheViewFollowsTheDevicesMemory) {
  if (kernels::CudaDeviceCount() == 0) GTEST_SKIP() << "no GPU on this machine";
  const kernels::Device gpu = kernels::Device::Cuda(0);
  const std::vector<float> start = {1, 2, 3, 4};
  auto buffer = kernels::Buffer<float>::FromHost(gpu, start);
  ASSERT_TRUE(buffer.ok()) << buffer.status();
  HostMirror mirror(buffer->span(), gpu);
  const std::span<const float> read = mirror.Read();
  EXPECT_EQ(std::vector<float>(read.begin(), read.end()), start);
  const std::vector<float> adopted = {9, 8, 7, 6};
  mirror.Write(adopted);
  std::vector<float> back(4, 0.0f);
  ASSERT_TRUE(buffer->CopyToHost(std::span<float>(back)).ok());
  EXPECT_EQ(back, adopted);
}

}  // namespace
}  // namespace murmur::gossip
