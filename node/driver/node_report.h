#pragma once
// The report lines a `murmur node` prints with `--report json` (one JSON object per line) and
// what `murmur local` reads back from them: written and parsed here, in one place, so the two
// sides cannot drift apart.
//   membership  SnapshotJson: the node's member table, rejections and traffic;
//   gossip      GossipProgressJson: kind "train" while training, "final" once, with the node's
//               phase by name (gossip::PhaseName); read back whole by ParseGossipReport into the
//               GossipProgress it was written from, so the parent reads fields, not keys;
//   coded modes CodedProgressJson: kind "coded", then "final", with "mode".

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/status.h"
#include "node/driver/gossip_session.h"
#include "node/driver/sync_driver.h"
#include "node/peer/peer_node.h"

namespace murmur::node {

// One line describing `snapshot` (membership mode).
std::string SnapshotJson(const PeerSnapshot& snapshot, double uptime_s);
// One line with a gossip node's progress; `final` marks the last one.
std::string GossipProgressJson(const GossipProgress& progress, bool final);
// One line with a synchronous node's progress (kind "coded", or "final").
std::string CodedProgressJson(const CodedProgress& progress);

// A gossip node's report line, typed: the progress it was written from and whether it is the
// final one. GossipProgressJson(ParseGossipReport(line).progress, final) writes `line` again.
struct GossipReport {
  bool final = false;
  GossipProgress progress;
};
// kInvalidArgument naming the key when `line` is not a gossip report (a key missing or of
// another type).
StatusOr<GossipReport> ParseGossipReport(const nlohmann::json& line);

// A synchronous node's report line, typed. A line other than the final one carries the
// iteration times' mean and 95th percentile only (the final one carries them all).
struct CodedReport {
  bool final = false;
  CodedProgress progress;
  double iteration_ms_mean = 0, iteration_ms_p95 = 0;
};
// kInvalidArgument naming the key when `line` is not a synchronous node's report.
StatusOr<CodedReport> ParseCodedReport(const nlohmann::json& line);

// What `murmur local` keeps of one child's report lines.
struct ChildReport {
  std::map<uint64_t, char> sees;  // membership: member id -> A, S, D, L
  uint64_t heartbeat = 0, alive = 0, rejected = 0;
  std::optional<GossipProgress> gossip;        // gossip: the latest line
  std::optional<GossipProgress> gossip_final;  // ... and the final one
  std::optional<CodedReport> coded;            // synchronous modes: the latest line
  std::optional<CodedReport> coded_final;      // ... and the final one
  bool new_accuracy = false;    // gossip: an evaluation newer than the previous line's
  bool has_final() const { return gossip_final.has_value() || coded_final.has_value(); }
};
// Takes one parsed line; a line of none of the shapes above is ignored.
void Absorb(ChildReport& report, const nlohmann::json& line);

}  // namespace murmur::node
