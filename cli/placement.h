#pragma once
// Where each node process of `murmur local` trains, from its --device and --gpus:
//   cpu      every node on the CPU;
//   auto     round-robin over the GPUs (those --gpus lists, or every visible one); the CPU when
//            none is visible, or for membership, which trains nothing;
//   cuda     round-robin as auto, refused when no GPU is visible or the mode trains nothing;
//   cuda:N   every node on GPU N, refused when N is not visible or the mode trains nothing.
// Several nodes may share one GPU. Nothing here touches a GPU: the caller says how many are
// visible (kernels::CudaDeviceCount), so the rules are tested on any machine.

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "kernels/device.h"

namespace murmur::node {

// One "cpu" or "cuda:N" per node (each node's --device). kInvalidArgument for a GPU list that is
// not one, or that the device does not take; kFailedPrecondition for a device this machine or mode
// cannot give, saying why.
StatusOr<std::vector<std::string>> PlaceNodes(const kernels::DeviceSpec& device,
                                              std::string_view gpus, int nodes, int visible_gpus,
                                              bool trains);

// "cpu", or "cuda:0 (2 nodes), cuda:1 (2 nodes)": what the live table and the report show.
std::string PlacementSummary(const std::vector<std::string>& devices);

}  // namespace murmur::node
