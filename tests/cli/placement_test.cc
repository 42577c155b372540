#include "cli/placement.h"

#include <gtest/gtest.h>

namespace murmur::node {
namespace {

using V = std::vector<std::string>;

kernels::DeviceSpec Spec(std::string_view text) { return *kernels::ParseDeviceSpec(text); }

TEST(PlacementTest, CpuAndAutoWithoutAGpuPlaceEveryNodeOnTheCpu) {
  EXPECT_EQ(*PlaceNodes(Spec("cpu"), "", 3, 0, true), (V{"cpu", "cpu", "cpu"}));
  EXPECT_EQ(*PlaceNodes(Spec("auto"), "", 2, 0, true), (V{"cpu", "cpu"}));
  EXPECT_EQ(*PlaceNodes(Spec("cpu"), "", 2, 4, true), (V{"cpu", "cpu"}));  // a GPU is not forced
}

TEST(PlacementTest, AutoAndCudaSpreadNodesRoundRobinOverTheVisibleOrListedGpus) {
  EXPECT_EQ(*PlaceNodes(Spec("auto"), "", 5, 2, true),
            (V{"cuda:0", "cuda:1", "cuda:0", "cuda:1", "cuda:0"}));
  EXPECT_EQ(*PlaceNodes(Spec("cuda"), "", 3, 1, true), (V{"cuda:0", "cuda:0", "cuda:0"}));
  EXPECT_EQ(*PlaceNodes(Spec("cuda"), "2,0", 4, 3, true),
            (V{"cuda:2", "cuda:0", "cuda:2", "cuda:0"}));
  EXPECT_EQ(*PlaceNodes(Spec("cuda:1"), "", 2, 2, true), (V{"cuda:1", "cuda:1"}));
}

TEST(PlacementTest, AGpuThatCannotBeGivenIsRefusedWithTheReason) {
  auto none = PlaceNodes(Spec("cuda"), "", 4, 0, true);
  EXPECT_EQ(none.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(none.status().message().find("no CUDA device is visible"), std::string::npos);
  EXPECT_EQ(PlaceNodes(Spec("cuda:2"), "", 4, 2, true).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(PlaceNodes(Spec("auto"), "0,3", 4, 2, true).status().code(),
            StatusCode::kFailedPrecondition);
  // Membership trains nothing: auto means the CPU, an explicit GPU is refused.
  EXPECT_EQ(*PlaceNodes(Spec("auto"), "", 2, 2, false), (V{"cpu", "cpu"}));
  auto membership = PlaceNodes(Spec("cuda"), "", 2, 2, false);
  EXPECT_EQ(membership.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(membership.status().message().find("trains nothing"), std::string::npos);
}

TEST(PlacementTest, BadValuesAreInvalidArguments) {
  for (auto [device, gpus] : std::vector<std::pair<std::string, std::string>>{
           {"auto", "0,,1"}, {"auto", "a"}, {"cpu", "0"}, {"cuda:0", "0"}}) {
    EXPECT_EQ(PlaceNodes(Spec(device), gpus, 2, 2, true).status().code(),
              StatusCode::kInvalidArgument)
        << device << " / " << gpus;
  }
  // A device that is none is refused where the text is parsed, before any placement.
  for (const char* device : {"gpu", "cuda:x", "cuda:-1", "cuda:", "CPU", ""}) {
    EXPECT_EQ(kernels::ParseDeviceSpec(device).status().code(), StatusCode::kInvalidArgument)
        << device;
  }
  for (const char* device : {"auto", "cpu", "cuda", "cuda:0", "cuda:7"}) {
    EXPECT_EQ(Spec(device).ToString(), device);
  }
}

TEST(PlacementTest, SummaryCountsNodesPerDevice) {
  EXPECT_EQ(PlacementSummary({"cpu", "cpu"}), "cpu");
  EXPECT_EQ(PlacementSummary({"cuda:0", "cuda:1", "cuda:0"}), "cuda:0 (2 nodes), cuda:1 (1 node)");
}

}  // namespace
}  // namespace murmur::node
