#pragma once
// The host's view of a model that may live in a GPU's memory: on the CPU the model itself, on a
// GPU a copy kept here, refreshed on every read. What a node serves (snapshots, its finish
// contribution) and what it adopts (a snapshot, the finish's average) pass through it.
//
// Invariant: Read() returns the model's values as they are at the call. Thread safety: none.

#include <span>
#include <vector>

#include "kernels/device.h"

namespace murmur::gossip {

class HostMirror {
 public:
  // `model` (memory of `device`) must outlive the mirror.
  HostMirror(std::span<float> model, const kernels::Device& device)
      : model_(model), device_(device) {}

  // The model's values on the host; valid until the next Read or Write.
  std::span<const float> Read();
  // The model = `host`, copied up on a GPU. REQUIRES host.size() == the model's size.
  void Write(std::span<const float> host);
  // Bytes of the host copy (none on the CPU).
  uint64_t HeldBytes() const { return copy_.capacity() * sizeof(float); }

 private:
  std::span<float> model_;
  const kernels::Device device_;
  std::vector<float> copy_;  // the host copy on a GPU
};

}  // namespace murmur::gossip
