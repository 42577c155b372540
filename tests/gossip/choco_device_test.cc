// The device-resident CHOCO on the CPU device: the device path (DeviceCompressor and
// the kernels' vector ops on device buffers) against the host path (Compressor), bit for bit
// after every one of 200 rounds, with a gap and its snapshots in the middle.
#include <cstdio>

#include "tests/gossip/choco_equivalence.h"

namespace murmur::gossip {
namespace {

TEST(ChocoDeviceTest, DevicePathOnTheCpuIsTheHostPathBitForBit) {
  for (const char* spec : {"topk:0.01", "topk:0.01,values=fp16", "onebit", "qsgd:16"}) {
    SCOPED_TRACE(spec);
    std::printf("%s: 5 nodes, d 4099, 200 rounds, seed 2111\n", spec);
    const auto host = equivalence::Run(spec, kernels::Device::Cpu(), /*device_compressor=*/false);
    const auto device = equivalence::Run(spec, kernels::Device::Cpu(), /*device_compressor=*/true);
    equivalence::ExpectSame(host, device);
    // Not a vacuous comparison: the models moved and the copies track them.
    EXPECT_NE(host.models[0], host.models[1]);
    EXPECT_EQ(host.copies[0], host.public_copies[1]);
  }
}

}  // namespace
}  // namespace murmur::gossip
