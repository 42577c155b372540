#pragma once
// The update format's bytes as both sides of update_codec.h see them (internal to coding/): the
// header's magic, little-endian stores and loads, the sizes of the index and value sections, and
// the checksum. The layout itself is documented in update_codec.h.

// XXH3 compiled into coding/ with the build's -march (AVX2 where the machine has it): the
// shared library's generic build hashes at half that speed, and every update is hashed once
// by its sender and once by each receiver. The digests are the same by XXH3's specification.
#define XXH_INLINE_ALL
// GCC 12 warns that its own AVX-512 intrinsics use an uninitialized value (_mm512_undefined_*,
// GCC bug 105593) once xxHash's AVX-512 path is inlined, which -Werror makes fatal on an AVX-512
// machine with -march=native; the AVX2 path hashes the same bits.
#if defined(__AVX512F__) && !defined(XXH_VECTOR)
#define XXH_VECTOR 2  // XXH_AVX2
#endif
#include <xxhash.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "coding/update.h"
#include "coding/update_codec.h"

namespace murmur::coding::wire {

static_assert(std::endian::native == std::endian::little, "the update format is little-endian");

inline constexpr uint16_t kMagic = 0x4D55;

template <typename T>
void Store(std::byte* p, T value) {
  std::memcpy(p, &value, sizeof(T));
}
template <typename T>
T Load(const std::byte* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

inline size_t BitmapBytes(uint32_t dimension) { return (static_cast<size_t>(dimension) + 7) / 8; }

inline size_t ValueBytes(uint64_t count, int bits_per_value) {
  return static_cast<size_t>((count * static_cast<uint64_t>(bits_per_value) + 7) / 8);
}

// The header's 40 bytes (layout in update_codec.h) for `update` with the given index section;
// the checksum field is left for the caller, which writes it last.
void WriteHeader(const Update& update, IndexCoding index_coding, size_t index_bytes, std::byte* p);

inline bool IsRawFloat32(const ValueFormat& f) { return f == ValueFormat::RawFloat32(); }

// XXH3 of the sections after the header, seeded into the XXH3 of the header's first 32 bytes
// (the checksum itself, at byte 32, is not covered).
inline uint64_t Checksum(std::span<const std::byte> encoded) {
  const uint64_t payload = XXH3_64bits(encoded.data() + kUpdateHeaderBytes,
                                       encoded.size() - kUpdateHeaderBytes);
  return XXH3_64bits_withSeed(encoded.data(), 32, payload);
}

}  // namespace murmur::coding::wire
