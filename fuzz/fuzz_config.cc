// libFuzzer target: a `--config` TOML file (node/config/config_schema.h ParseToml) applied key by key
// through the training keys' value parsers (GossipSchema and CodedSchema: the model, optimizer,
// compression, soft-sync, budget, straggler and tree keys), then the gossip and coded cross-key
// checks — what a hostile or mistyped config reaches before a node starts. No files are opened.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/check.h"
#include "node/config/coded_config.h"
#include "node/config/config_schema.h"
#include "node/config/gossip_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace murmur::node;
  auto table = ParseToml(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.toml");
  if (!table.ok()) return 0;
  GossipConfig gossip{};
  CodedConfig coded{};
  auto apply = [&](const auto& schema, auto& config) {
    for (const auto& key : schema.keys()) {
      MURMUR_CHECK(key.set(key.default_text, config).ok()) << key.name;  // defaults always parse
    }
    for (const auto& [name, text] : *table) {
      for (const auto& key : schema.keys()) {
        if (key.name == name) key.set(text, config).IgnoreError();
      }
    }
  };
  apply(GossipSchema(), gossip);
  apply(CodedSchema(), coded);
  GossipOptionsFrom(gossip).status().IgnoreError();
  for (auto mode : {murmur::gossip::Mode::kCodedTree, murmur::gossip::Mode::kRing}) {
    CodedOptionsFrom(mode, coded, gossip).status().IgnoreError();
  }
  return 0;
}
