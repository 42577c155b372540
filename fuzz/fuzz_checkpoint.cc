// libFuzzer target: the checkpoint reader (node/train/checkpoint.h), which a restarted node runs
// on whatever is on its disk. The checksum is recomputed over the mutated bytes first (otherwise
// nearly every input stops at it), so the section parser itself is explored. Property: what
// decodes encodes to bytes that decode to the same sections.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include <xxhash.h>

#include "base/check.h"
#include "node/train/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  if (size >= 24) {
    const uint64_t sum = XXH3_64bits(bytes.data(), size - 8);
    std::memcpy(bytes.data() + size - 8, &sum, 8);
  }
  auto c = murmur::node::DecodeCheckpoint(std::as_bytes(std::span(bytes)));
  if (!c.ok()) return 0;
  const auto again = murmur::node::EncodeCheckpoint(*c);
  auto back = murmur::node::DecodeCheckpoint(again);
  MURMUR_CHECK(back.ok()) << back.status().ToString();
  MURMUR_CHECK(back->text == c->text && back->numbers == c->numbers && back->indices == c->indices);
  MURMUR_CHECK_EQ(back->tensors.size(), c->tensors.size());
  return 0;
}
