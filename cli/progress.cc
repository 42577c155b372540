#include "cli/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "base/log.h"
#include "cli/summary_json.h"

namespace murmur::node {
namespace {

std::string Duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  const auto s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

// Training samples per second of training time (evaluation excluded).
double Rate(const TrainProgress& p) {
  const double train_seconds = p.elapsed_seconds - p.eval_seconds;
  return train_seconds > 0 ? static_cast<double>(p.samples) / train_seconds : 0;
}

double Eta(const TrainProgress& p) {
  if (p.step == 0) return NAN;
  return p.elapsed_seconds / static_cast<double>(p.step) *
         static_cast<double>(p.total_steps - p.step);
}

std::string Percent(double fraction) {
  return std::isnan(fraction) ? "n/a" : fmt::format("{:.2f}%", 100 * fraction);
}

}  // namespace

ProgressMode ResolveProgressMode(std::string_view name, std::FILE* stream) {
  if (name == "tty") return ProgressMode::kTty;
  if (name == "plain") return ProgressMode::kPlain;
  if (name == "none") return ProgressMode::kNone;
  return isatty(fileno(stream)) ? ProgressMode::kTty : ProgressMode::kPlain;
}

std::string FormatProgress(const TrainProgress& p, int bar_width) {
  const double done =
      p.total_steps > 0 ? static_cast<double>(p.step) / static_cast<double>(p.total_steps) : 0;
  std::string bar;
  if (bar_width > 0) {
    const int filled = static_cast<int>(done * bar_width);
    bar = fmt::format("[{:#<{}}{:.<{}}] ", "", filled, "", bar_width - filled);
  }
  return fmt::format("epoch {}/{} {}{:3.0f}% step {}/{} loss {:.4f} {:.0f} samples/s ETA {}",
                     p.epoch, p.epochs, bar, 100 * done, p.step, p.total_steps, p.recent_loss,
                     Rate(p), Duration(Eta(p)));
}

ProgressReporter::ProgressReporter(ProgressMode mode, std::FILE* out, const Clock& clock)
    : mode_(mode), out_(out), clock_(clock) {}

void ProgressReporter::Update(const TrainProgress& p) {
  if (mode_ == ProgressMode::kNone) return;
  const TimePoint now = clock_.Now();
  if (mode_ == ProgressMode::kTty) {
    if (drawn_ && !p.epoch_done && now - last_draw_ < std::chrono::milliseconds(100)) return;
    std::fprintf(out_, "\r\033[K%s", FormatProgress(p, 24).c_str());
    drawn_ = true;
    if (p.epoch_done && p.test) {
      std::fprintf(out_,
                   "\r\033[Kepoch %d/%d done: train loss %.4f, test loss %.4f, test "
                   "accuracy %s, %.0f samples/s\n",
                   p.epoch, p.epochs, p.recent_loss, p.test->loss,
                   Percent(p.test->accuracy).c_str(), Rate(p));
      drawn_ = false;
    }
    std::fflush(out_);
    last_draw_ = now;
    return;
  }
  if (p.epoch_done) {
    if (p.test) {
      MURMUR_LOG_INFO(
          "epoch {}/{} done: train loss {:.4f}, test loss {:.4f}, test accuracy {}, "
          "{:.0f} samples/s",
          p.epoch, p.epochs, p.recent_loss, p.test->loss, Percent(p.test->accuracy), Rate(p));
    } else {
      MURMUR_LOG_INFO("epoch {}/{} done: train loss {:.4f}", p.epoch, p.epochs, p.recent_loss);
    }
    last_draw_ = now;
  } else if (now - last_draw_ >= std::chrono::seconds(5)) {
    MURMUR_LOG_INFO("{}", FormatProgress(p, 0));
    last_draw_ = now;
  }
}

void ProgressReporter::Finish() {
  if (mode_ == ProgressMode::kTty && drawn_) {
    std::fprintf(out_, "\n");
    std::fflush(out_);
    drawn_ = false;
  }
}

std::string SummaryText(const RunInfo& info, const TrainSummary& s,
                        const CompressionReport* compression) {
  std::string out = fmt::format("murmur train: {} | model {} ({} parameters)\n", info.task,
                                info.model, info.params);
  out += fmt::format("  test accuracy  {}\n", Percent(s.test.accuracy));
  out += fmt::format("  test loss      {:.4f}\n", s.test.loss);
  out += fmt::format("  train loss     {:.4f} (last epoch)\n", s.final_train_loss);
  out += fmt::format("  epochs         {} ({} steps, {} samples of {} train rows)\n", s.epochs,
                     s.steps, s.samples, info.train_rows);
  out += fmt::format("  wall time      {:.2f} s ({:.2f} s evaluating)\n", s.wall_seconds,
                     s.eval_seconds);
  out += fmt::format("  throughput     {:.0f} samples/s\n", s.samples_per_second);
  if (compression != nullptr) {
    const CompressionReport& c = *compression;
    out += fmt::format("  compression    {}\n", c.spec);
    out += fmt::format(
        "                 {:.3f} % of values sent, {:.0f} bytes/step vs {:.0f} dense ({:.1f}x "
        "smaller), {:.2f} bytes per value sent\n",
        100 * c.mean_density, c.bytes_per_step, c.dense_bytes_per_step,
        c.bytes_per_step > 0 ? c.dense_bytes_per_step / c.bytes_per_step : 0.0,
        c.bytes_per_nonzero);
  }
  return out;
}

nlohmann::json SummaryJson(const RunInfo& info, const TrainSummary& s,
                           const CompressionReport* compression) {
  nlohmann::json per_epoch = nlohmann::json::array();
  for (const auto& e : s.test_per_epoch) {
    per_epoch.push_back({{"test_accuracy", Number(e.accuracy)}, {"test_loss", Number(e.loss)}});
  }
  nlohmann::json j = {
      {"task", info.task},
      {"model", info.model},
      {"params", info.params},
      {"train_rows", info.train_rows},
      {"test_rows", info.test_rows},
      {"epochs", s.epochs},
      {"steps", s.steps},
      {"samples", s.samples},
      {"wall_seconds", s.wall_seconds},
      {"eval_seconds", s.eval_seconds},
      {"samples_per_second", s.samples_per_second},
      {"train_loss", Number(s.final_train_loss)},
      {"test_loss", Number(s.test.loss)},
      {"test_accuracy", Number(s.test.accuracy)},
      {"per_epoch", per_epoch},
  };
  if (compression != nullptr) j["compression"] = *compression;
  return j;
}

std::string PlainChanges(const std::string& table, double t, std::vector<std::string>& printed) {
  std::vector<std::string> lines;
  for (size_t begin = 0, end; begin < table.size(); begin = end + 1) {
    end = table.find('\n', begin);
    if (end == std::string::npos) end = table.size();
    lines.push_back(table.substr(begin, end - begin));
  }
  std::string out;
  const bool first = printed.empty();
  if (first) {
    for (size_t i = 0; i < std::min<size_t>(2, lines.size()); ++i) {
      out += (i == 0 ? "" : "        ") + lines[i] + "\n";
    }
  }
  printed.resize(std::max(printed.size(), lines.size()));
  for (size_t i = 2; i < lines.size(); ++i) {
    if (lines[i] == printed[i]) continue;
    printed[i] = lines[i];
    out += fmt::format("{:6.1f} s {}\n", t, lines[i]);
  }
  return out;
}

}  // namespace murmur::node
