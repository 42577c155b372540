// The device conformance suite (device_conformance.h) on the CPU: the host backend against the
// naive reference, and the API's contracts (poisoned outputs, edge sizes, rejections) exercised
// here so that the GPU run checks kernels, not the tests.
#include "tests/kernels/device_conformance.h"

namespace murmur::kernels::conformance {
namespace {

INSTANTIATE_TEST_SUITE_P(Cpu, DeviceConformance,
                         ::testing::Values(Case{Device::Cpu(), (1 << 20) + 3, "cpu"}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace murmur::kernels::conformance
