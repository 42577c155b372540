#include "node/driver/memory_table.h"

#include <fmt/format.h>

#include <array>
#include <string>
#include <string_view>

namespace murmur::node {
namespace {

struct Group {
  std::string_view title;
  std::array<std::string_view, 8> buffers;  // empty names unused
};
// The table's columns; a buffer in none of them goes to "other".
constexpr std::array<Group, 6> kGroups{{
    {"model", {"model"}},
    {"grad+opt", {"gradient", "optimizer_state"}},
    {"choco",
     {"choco_public", "choco_copies", "initial_model", "replay_log", "update", "compressor",
      "round_scratch"}},
    {"outer", {"outer_anchor", "outer_momentum", "round_model"}},
    {"finish", {"finish"}},
    {"queues", {"inbox", "training_queue", "deferred"}},
}};

bool Grouped(std::string_view buffer) {
  for (const Group& g : kGroups) {
    for (std::string_view b : g.buffers) {
      if (!b.empty() && b == buffer) return true;
    }
  }
  return false;
}

double Mb(uint64_t bytes) { return static_cast<double>(bytes) / 1e6; }

// The peak resident set over the model's bytes; 0 without a model.
double PeakMultiple(const GossipProgress& p) {
  const uint64_t model = p.memory.Of("model");
  return model > 0 ? static_cast<double>(p.peak_resident_bytes) / static_cast<double>(model) : 0.0;
}

}  // namespace

nlohmann::json MemoryJson(const std::vector<const GossipProgress*>& finals) {
  nlohmann::json nodes = nlohmann::json::array();
  for (size_t i = 0; i < finals.size(); ++i) {
    const GossipProgress* p = finals[i];
    if (p == nullptr || p->memory.entries().empty()) continue;
    nlohmann::json buffers = nlohmann::json::object();
    for (const MemoryUse::Entry& e : p->memory.entries()) buffers[e.buffer] = e.bytes;
    const uint64_t model = p->memory.Of("model");
    nodes.push_back({{"node", i + 1},
                     {"buffers", buffers},
                     {"buffers_bytes", p->memory.Total()},
                     {"resident_bytes", p->memory_resident_bytes},
                     {"peak_resident_bytes", p->peak_resident_bytes},
                     {"model_bytes", model},
                     {"peak_model_multiple", PeakMultiple(*p)}});
  }
  return nodes;
}

void PrintMemoryTable(const std::vector<const GossipProgress*>& finals, std::FILE* out) {
  bool any = false;
  for (const GossipProgress* p : finals)
    any = any || (p != nullptr && !p->memory.entries().empty());
  if (!any) return;
  std::fprintf(out,
               "  memory by node at its largest (MB; the buffers it holds by owner, their sum, "
               "the resident set then and at its peak, and the peak over the model's bytes):\n");
  std::string header = fmt::format("  {:>4}", "node");
  for (const Group& g : kGroups) header += fmt::format(" {:>8}", g.title);
  header += fmt::format(" {:>8} {:>8} {:>8} {:>8} {:>7}", "other", "buffers", "resident", "peak",
                        "x model");
  std::fprintf(out, "%s\n", header.c_str());
  for (size_t i = 0; i < finals.size(); ++i) {
    const GossipProgress* p = finals[i];
    if (p == nullptr || p->memory.entries().empty()) continue;
    std::string row = fmt::format("  {:>4}", i + 1);
    for (const Group& g : kGroups) {
      uint64_t bytes = 0;
      for (std::string_view b : g.buffers) bytes += b.empty() ? 0 : p->memory.Of(b);
      row += fmt::format(" {:>8.1f}", Mb(bytes));
    }
    uint64_t other = 0;
    for (const MemoryUse::Entry& e : p->memory.entries()) {
      if (!Grouped(e.buffer)) other += e.bytes;
    }
    row += fmt::format(" {:>8.1f} {:>8.1f} {:>8.1f} {:>8.1f} {:>7.1f}", Mb(other),
                       Mb(p->memory.Total()), Mb(p->memory_resident_bytes),
                       Mb(p->peak_resident_bytes), PeakMultiple(*p));
    std::fprintf(out, "%s\n", row.c_str());
  }
}

}  // namespace murmur::node
