#include "coding/stream_store.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace murmur::coding::internal {
namespace {

// The largest cache level the kernel describes for CPU 0 (sysfs: "32768K"); 32 MiB where none
// is readable. Not sysconf(_SC_LEVEL3_CACHE_SIZE): on this project's AMD EPYC VMs glibc reports
// 320 MiB there, ten times what the CPU's one L3 instance holds.
size_t LastLevelCacheBytes() {
  static const size_t bytes = [] {
    size_t largest = 0;
    for (int index = 0; index < 8; ++index) {
      std::ifstream file("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) +
                         "/size");
      size_t size = 0;
      char unit = 0;
      if (!(file >> size)) continue;
      file >> unit;
      if (unit == 'K') size <<= 10;
      if (unit == 'M') size <<= 20;
      largest = std::max(largest, size);
    }
    return largest >= (size_t{1} << 20) ? largest : size_t{32} << 20;
  }();
  return bytes;
}

std::atomic<size_t> threshold_for_testing{0};

}  // namespace

void SetStreamThresholdForTesting(size_t bytes) { threshold_for_testing.store(bytes); }

bool ShouldStream(size_t bytes) {
#if defined(__SSE2__)
  const size_t forced = threshold_for_testing.load(std::memory_order_relaxed);
  return bytes >= (forced != 0 ? forced : LastLevelCacheBytes());
#else
  (void)bytes;
  return false;
#endif
}

void StreamCopy(void* dst, const void* src, size_t bytes) {
#if defined(__SSE2__)
  auto* d = static_cast<std::byte*>(dst);
  const auto* s = static_cast<const std::byte*>(src);
  // Up to the first line boundary with ordinary stores; the line is shared with what the
  // previous block wrote (or lies before dst).
  const size_t head = std::min(bytes, (64 - reinterpret_cast<uintptr_t>(d) % 64) % 64);
  std::memcpy(d, s, head);
  size_t i = head;
  for (; i + 64 <= bytes; i += 64) {
#if defined(__AVX512F__)
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i),
                        _mm512_loadu_si512(reinterpret_cast<const void*>(s + i)));
#elif defined(__AVX__)
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + i),
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i)));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + i + 32),
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 32)));
#else
    for (size_t j = 0; j < 64; j += 16) {
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + j),
                       _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + j)));
    }
#endif
  }
  std::memcpy(d + i, s + i, bytes - i);
#else
  std::memcpy(dst, src, bytes);
#endif
}

void StreamFence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

void PrefetchFloats(const float* p, size_t begin, size_t end) {
  for (size_t j = begin; j < end; j += 64 / sizeof(float)) __builtin_prefetch(p + j, 0, 3);
}

}  // namespace murmur::coding::internal
