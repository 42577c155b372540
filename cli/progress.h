#pragma once
// What a user sees while training and after it. Progress goes to stderr (stdout is for results):
// on a terminal, one line redrawn at most 10 times a second (epoch, bar, step, loss, samples/s,
// ETA); elsewhere, a log line every few seconds and at each epoch end. The summary goes to
// stdout, as text or as one JSON object.

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "node/train/gradient_compression.h"
#include "node/train/trainer.h"

namespace murmur::node {

enum class ProgressMode { kTty, kPlain, kNone };

// "auto" picks kTty when `stream` is a terminal, else kPlain.
ProgressMode ResolveProgressMode(std::string_view name, std::FILE* stream);

class ProgressReporter {
 public:
  ProgressReporter(ProgressMode mode, std::FILE* out, const Clock& clock);
  void Update(const TrainProgress& progress);
  // Ends a redrawn line so later output starts on a fresh one.
  void Finish();

 private:
  ProgressMode mode_;
  std::FILE* out_;
  const Clock& clock_;
  TimePoint last_draw_{};
  bool drawn_ = false;
};

// The one-line progress text (no escape codes); exposed for tests.
std::string FormatProgress(const TrainProgress& progress, int bar_width);

struct RunInfo {
  std::string task;
  std::string model;
  int64_t params = 0;
  int64_t train_rows = 0;
  int64_t test_rows = 0;
};

// `compression` is null when the run did not compress its gradient.
std::string SummaryText(const RunInfo& info, const TrainSummary& summary,
                        const CompressionReport* compression = nullptr);
nlohmann::json SummaryJson(const RunInfo& info, const TrainSummary& summary,
                           const CompressionReport* compression = nullptr);

// `murmur local`'s plain progress (a log, a pipe): of a live table (title, column header, one row
// per node), the title and header the first time, then each row whose text changed since it was
// last printed, stamped with `t`. `printed` keeps the rows between calls (empty at first).
std::string PlainChanges(const std::string& table, double t, std::vector<std::string>& printed);

}  // namespace murmur::node
