// libFuzzer target: the seed list (node/peer/seeds.h ParseSeedList, from --seeds or MURMUR_SEEDS).
// Property: every accepted seed is an endpoint SeedEndpoint accepts again.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/check.h"
#include "node/peer/seeds.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto seeds = murmur::node::ParseSeedList(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!seeds.ok()) return 0;
  for (const std::string& seed : *seeds) {
    auto endpoint = murmur::node::SeedEndpoint(seed);
    MURMUR_CHECK(endpoint.ok()) << seed;
  }
  return 0;
}
