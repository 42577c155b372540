#pragma once
// A run directory (`--run-dir` of `murmur local` and `murmur node`; `murmur report` and
// `murmur experiment` read it):
//   config.toml         every key of the run as resolved (flag > env > file > default), loadable
//                       with --config to repeat it (local)
//   result.json         the JSON summary `--json` prints, written once the run ended (local)
//   logs/node-K.log     each node's log (local)
//   series/node-K.jsonl each node's time series: its report lines (node_report.h), one JSON
//                       object per line, each with `time` (Unix seconds) and `injection` (the
//                       straggler injection in force, canonical spec, "" for none). K is the
//                       node's id, the number the table, the logs and /status show.
// Lines are appended and flushed one by one, so a run stopped at any moment leaves whole lines
// (a reader skips a torn last line).

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

#include "base/status.h"

namespace murmur::node {

// Creates `dir` (and parents) if needed; kInvalidArgument naming `key` when that fails or it is
// not a directory.
Status MakeRunDir(const std::filesystem::path& dir, std::string_view key);

// Appends a node's report lines to series/node-<id>.jsonl under a run directory; the file is
// opened on the first line (once the node knows its id). Not thread-safe: one reporting thread.
class SeriesWriter {
 public:
  explicit SeriesWriter(std::filesystem::path run_dir) : run_dir_(std::move(run_dir)) {}
  ~SeriesWriter();
  SeriesWriter(const SeriesWriter&) = delete;
  SeriesWriter& operator=(const SeriesWriter&) = delete;

  // `object` is one JSON object ("{...}"); written with `time` and `injection` first. A write
  // that fails is logged once and the run goes on (the series is a record, not the training).
  void Write(uint64_t id, std::string_view object, std::string_view injection);

 private:
  std::filesystem::path run_dir_;
  std::FILE* file_ = nullptr;
  bool failed_ = false;
};

// Replaces `dir/name` with `text` atomically.
Status WriteRunFile(const std::filesystem::path& dir, const std::string& name,
                    std::string_view text);

}  // namespace murmur::node
