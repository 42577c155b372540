#pragma once
// The one writer of a command's summary JSON (murmur train, murmur sim, every mode of murmur
// local): WriteSummary puts the object where the run asked (stdout with --json, the run
// directory's result.json), and the summary structs that several reports share become JSON
// through their to_json below (their members' names are the keys), so no report copies them
// field by field.

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "node/sim/simulator.h"
#include "node/train/gradient_compression.h"

namespace murmur::node {

// A measurement as JSON: null when it is NaN or infinite (JSON has neither).
nlohmann::json Number(double v);
// A measurement that may be missing: null for none, and for a negative value where -1 means
// "never measured".
nlohmann::json Measured(std::optional<double> v);
nlohmann::json MeasuredOrNegative(double v);

struct SummaryTarget {
  const char* command = "murmur";  // names the program in an error message
  bool print = false;              // --json: one line on stdout
  std::filesystem::path run_dir;   // result.json goes here; empty: nowhere
};

// Writes `summary` where `target` says: result.json in the run directory (a failure to write it
// is reported on stderr, the run's result stands) and one line on stdout when `print`. Returns
// `print`: whether the text report is left out.
bool WriteSummary(const nlohmann::json& summary, const SummaryTarget& target);

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(CompressionReport, spec, steps, mean_density, bytes_per_step,
                                   dense_bytes_per_step, bytes_per_nonzero)

}  // namespace murmur::node

namespace murmur::sim {

// Every member by its name; accuracy (-1: never evaluated) and optimum_distance (none) as null
// when missing.
void to_json(nlohmann::json& j, const SimNodeResult& n);

}  // namespace murmur::sim
