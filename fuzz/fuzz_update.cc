// libFuzzer target: the compressed-update decoder (coding/update_codec.h) behind every gossip
// update and snapshot frame. The first 4 bytes choose the model dimension the receiver expects.
// Properties: a decoded update is consistent (indices strictly increasing and below the
// dimension, one value each; dense updates hold exactly `dimension` values) and applies to a
// model of that dimension.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "base/check.h"
#include "coding/update.h"
#include "coding/update_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  uint32_t dimension = 0;
  std::memcpy(&dimension, data, 4);
  dimension %= (1u << 16) + 1;
  const auto bytes = std::as_bytes(std::span(data + 4, size - 4));
  murmur::coding::Update u;
  if (!murmur::coding::DecodeUpdate(bytes, dimension, u).ok()) return 0;
  MURMUR_CHECK_EQ(u.dimension, dimension);
  if (u.dense) {
    MURMUR_CHECK_EQ(u.values.size(), size_t{dimension});
  } else {
    MURMUR_CHECK_EQ(u.indices.size(), u.values.size());
    for (size_t i = 0; i < u.indices.size(); ++i) {
      MURMUR_CHECK_LT(u.indices[i], dimension);
      if (i > 0) MURMUR_CHECK_LT(u.indices[i - 1], u.indices[i]);
    }
  }
  std::vector<float> x(dimension);
  murmur::coding::AddTo(u, 1.0f, std::span<float>(x));
  return 0;
}
