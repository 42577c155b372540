#pragma once
// Writing a large output past the caches (internal to coding/; the dense passes of `none` and
// fp16 in dense_codec.cc and of int8 and QSGD in level_codec.cc, and the error-feedback
// selections' sums in selection.cc use it).
//
// A pass that writes a vector larger than the last-level cache gains nothing from caching what
// it writes: the lines are evicted before anyone reads them, and each ordinary store first
// reads its line from memory (read for ownership). Non-temporal stores write whole lines
// without reading them, as glibc's memcpy does above a similar size.
// - `none` computes a block (4096 values) into an L1-resident stage (ordinary stores, hashed
//   there while hot) and StreamCopies it into both outputs.
// - fp16, int8 and QSGD store their values from the register (_mm512_stream_ps), each block's
//   first entries up to a 64-byte line taking the scalar loop: through the stage, their compute
//   and the block's burst of streaming stores would take turns instead of overlapping. Their
//   codes alone do go through a stage, hashed there and StreamCopied out.
// - The *OfSum selections (selection.h) store residual + input the same way as they collect.

#include <cstddef>
#include <cstdint>

namespace murmur::coding::internal {

// Whether a pass whose outputs total `bytes` should bypass the caches: at least the size of
// the last-level cache (as sysfs gives it for CPU 0, or 32 MiB) and a CPU with non-temporal
// stores.
bool ShouldStream(size_t bytes);

// Tests and benchmarks: stream from `bytes` on instead (0: the cache size again).
void SetStreamThresholdForTesting(size_t bytes);

// SetStreamThresholdForTesting for a scope: the cache size again when it ends, also when a failed
// assertion leaves the test early (the next test would otherwise stream too).
class ScopedStreamThresholdForTesting {
 public:
  explicit ScopedStreamThresholdForTesting(size_t bytes) { SetStreamThresholdForTesting(bytes); }
  ~ScopedStreamThresholdForTesting() { SetStreamThresholdForTesting(0); }
  ScopedStreamThresholdForTesting(const ScopedStreamThresholdForTesting&) = delete;
  ScopedStreamThresholdForTesting& operator=(const ScopedStreamThresholdForTesting&) = delete;
};

// memcpy(dst, src, bytes) where dst's whole 64-byte lines are written with non-temporal stores
// (src is read with ordinary loads; it is meant to be in L1). The stores are weakly ordered:
// call StreamFence before the output is handed to another thread.
void StreamCopy(void* dst, const void* src, size_t bytes);

// Orders every earlier StreamCopy before the stores after it.
void StreamFence();

// Fetches floats [begin, end) of `p` into the caches (a hint). `none` asks for its next block's
// input before it copies this block out, so that the loads and the burst of non-temporal stores
// overlap instead of taking turns. fp16 does not: its values leave from the register within the
// loop, which already overlaps.
void PrefetchFloats(const float* p, size_t begin, size_t end);

// The floats from p up to its next 64-byte line (0 on a line): the entries a pass stores the
// ordinary way before its non-temporal stores from registers (_mm512_stream_ps) can start.
inline size_t FloatsToLine(const float* p) {
  return ((64 - (reinterpret_cast<uintptr_t>(p) & 63)) & 63) / sizeof(float);
}

}  // namespace murmur::coding::internal
