#pragma once
// What each gossip node held, by buffer, at its largest (GossipProgress::memory): the summary's
// "memory" array and the report's table, grouped by owner, against the model's fp32 bytes and the
// process's resident set. The groups: the model; the trainer's gradient and optimizer state;
// CHOCO's public copy, neighbour copies, initial model, replay log, updates and scratch; the outer
// optimizer's anchor and momentum; the consensus finish; the queues (inbox, training queue,
// deferred messages); the rest (activations, data, a host mirror, a fetched model).

#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

#include "node/driver/gossip_session.h"

namespace murmur::node {

// One object per node with a final report, in node order: {"node", "buffers" {name: bytes},
// "buffers_bytes", "resident_bytes" (at that sample), "peak_resident_bytes", "model_bytes",
// "peak_model_multiple" (peak resident / model bytes)}.
nlohmann::json MemoryJson(const std::vector<const GossipProgress*>& final_reports);

// The table, indented by two spaces, to `out`; nothing when no node reported its memory.
void PrintMemoryTable(const std::vector<const GossipProgress*>& final_reports, std::FILE* out);

}  // namespace murmur::node
