#pragma once
// What a process holds, buffer by buffer: each component that owns memory in proportion to the
// model (or to what its peers send) adds its buffers under a stable name, and the report's memory
// table and the metric murmur_memory_bytes{buffer=NAME} show them side by side with the
// process's resident set. Names are snake_case and few (a bounded metric label); adding to a name
// twice sums. Bytes are what the buffers hold (a vector's capacity, a device buffer's size), not
// what the allocator reserved around them.
//
// Thread safety: none; a value type.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace murmur {

class MemoryUse {
 public:
  struct Entry {
    std::string buffer;
    uint64_t bytes = 0;
  };

  // Adds `bytes` under `buffer` (kept in first-added order).
  void Add(std::string_view buffer, uint64_t bytes) {
    for (Entry& e : entries_) {
      if (e.buffer == buffer) {
        e.bytes += bytes;
        return;
      }
    }
    entries_.push_back({std::string(buffer), bytes});
  }
  // Every entry of `other`, added.
  void Add(const MemoryUse& other) {
    for (const Entry& e : other.entries_) Add(e.buffer, e.bytes);
  }
  // The bytes under `buffer`; 0 when none was added.
  uint64_t Of(std::string_view buffer) const {
    for (const Entry& e : entries_) {
      if (e.buffer == buffer) return e.bytes;
    }
    return 0;
  }
  uint64_t Total() const {
    uint64_t total = 0;
    for (const Entry& e : entries_) total += e.bytes;
    return total;
  }
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  std::vector<Entry> entries_;
};

// The bytes a vector's storage holds.
template <typename T>
uint64_t CapacityBytes(const std::vector<T>& v) {
  return static_cast<uint64_t>(v.capacity()) * sizeof(T);
}

}  // namespace murmur
