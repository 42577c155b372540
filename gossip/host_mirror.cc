#include "gossip/host_mirror.h"

#include "base/check.h"
#include "kernels/memory.h"

namespace murmur::gossip {

std::span<const float> HostMirror::Read() {
  if (device_.is_cpu()) return model_;
  copy_.resize(model_.size());
  MURMUR_CHECK_OK(kernels::CopyBytes(kernels::Device::Cpu(), copy_.data(), device_, model_.data(),
                                     model_.size_bytes()));
  return copy_;
}

void HostMirror::Write(std::span<const float> host) {
  MURMUR_CHECK_EQ(host.size(), model_.size());
  MURMUR_CHECK_OK(kernels::CopyBytes(device_, model_.data(), kernels::Device::Cpu(), host.data(),
                                     host.size_bytes()));
}

}  // namespace murmur::gossip
