#include "base/lr_schedule.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "base/spec.h"

namespace murmur {
namespace {

StatusOr<double> Number(std::string_view text, std::string_view what) {
  const StatusOr<double> v = ParseNumber<double>(text, what);
  if (!v.ok()) {
    return InvalidArgumentError(fmt::format("lr schedule: {} '{}' is not a number", what, text));
  }
  return *v;
}

std::vector<std::string_view> SplitComma(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    out.push_back(text.substr(0, comma));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace

StatusOr<LrScheduleOptions> LrSchedule::Parse(std::string_view spec, double base_lr) {
  LrScheduleOptions o;
  o.base_lr = base_lr;
  const size_t colon = spec.find(':');
  const std::string_view name = spec.substr(0, colon);
  const std::string_view args = colon == std::string_view::npos ? "" : spec.substr(colon + 1);
  if (colon != std::string_view::npos && args.empty()) {
    return InvalidArgumentError(fmt::format("lr schedule '{}': nothing after ':'", spec));
  }
  if (name == "constant" || name == "cosine") {
    o.kind = name == "constant" ? LrScheduleKind::kConstant : LrScheduleKind::kCosine;
    for (std::string_view arg : SplitComma(args)) {
      if (o.kind == LrScheduleKind::kCosine && arg.starts_with("final=")) {
        auto v = Number(arg.substr(6), "final");
        if (!v.ok()) return v.status();
        o.final_fraction = *v;
      } else {
        return InvalidArgumentError(fmt::format("lr schedule '{}': unknown argument '{}'{}", spec,
                                                arg, o.kind == LrScheduleKind::kCosine
                                                         ? " (cosine takes final=R)"
                                                         : " (constant takes none)"));
      }
    }
  } else if (name == "step") {
    o.kind = LrScheduleKind::kStep;
    for (std::string_view arg : SplitComma(args)) {
      if (arg.starts_with("factor=")) {
        auto v = Number(arg.substr(7), "factor");
        if (!v.ok()) return v.status();
        o.factor = *v;
      } else {
        auto v = Number(arg, "milestone");
        if (!v.ok()) return v.status();
        o.milestones.push_back(*v);
      }
    }
    if (o.milestones.empty()) {
      return InvalidArgumentError(fmt::format(
          "lr schedule '{}': step needs milestones, fractions of the budget (e.g. step:0.5,0.75)",
          spec));
    }
  } else {
    return InvalidArgumentError(fmt::format(
        "lr schedule '{}' is not one of constant, step:F1,F2[,factor=K], cosine[:final=R]", spec));
  }
  return o;
}

StatusOr<LrSchedule> LrSchedule::Create(const LrScheduleOptions& o) {
  if (!(o.base_lr >= 0) || !std::isfinite(o.base_lr)) {
    return InvalidArgumentError(fmt::format("lr schedule: learning rate {} must be >= 0", o.base_lr));
  }
  if (o.warmup_samples < 0) {
    return InvalidArgumentError("lr schedule: warm-up must be >= 0 samples");
  }
  if (o.kind != LrScheduleKind::kConstant) {
    if (o.total_samples <= 0) {
      return InvalidArgumentError(
          "lr schedule: step and cosine schedules need a sample budget (epochs > 0)");
    }
  }
  if (o.total_samples > 0 && o.warmup_samples >= o.total_samples) {
    return InvalidArgumentError(fmt::format(
        "lr schedule: the warm-up ({} samples) must be shorter than the budget ({} samples)",
        o.warmup_samples, o.total_samples));
  }
  for (size_t i = 0; i < o.milestones.size(); ++i) {
    if (!(o.milestones[i] > 0 && o.milestones[i] < 1) ||
        (i > 0 && !(o.milestones[i] > o.milestones[i - 1]))) {
      return InvalidArgumentError(
          "lr schedule: step milestones must be increasing fractions of the budget in (0, 1)");
    }
  }
  if (!(o.factor > 0 && o.factor <= 1)) {
    return InvalidArgumentError(fmt::format("lr schedule: factor {} must be in (0, 1]", o.factor));
  }
  if (!(o.final_fraction >= 0 && o.final_fraction <= 1)) {
    return InvalidArgumentError(
        fmt::format("lr schedule: final {} must be in [0, 1]", o.final_fraction));
  }
  return LrSchedule(o);
}

double LrSchedule::At(int64_t samples) const {
  samples = std::max<int64_t>(samples, 0);
  if (samples < o_.warmup_samples) {
    // Step k of the warm-up: lr × (k + 1) / warm-up length, never 0 (the first step moves).
    return o_.base_lr * static_cast<double>(samples + 1) / static_cast<double>(o_.warmup_samples + 1);
  }
  switch (o_.kind) {
    case LrScheduleKind::kConstant:
      return o_.base_lr;
    case LrScheduleKind::kStep: {
      const double t = static_cast<double>(samples) / static_cast<double>(o_.total_samples);
      double lr = o_.base_lr;
      for (double m : o_.milestones) {
        if (t >= m) lr *= o_.factor;
      }
      return lr;
    }
    case LrScheduleKind::kCosine: {
      const double span = static_cast<double>(o_.total_samples - o_.warmup_samples);
      const double t =
          std::min(1.0, static_cast<double>(samples - o_.warmup_samples) / std::max(span, 1.0));
      return o_.base_lr *
             (o_.final_fraction + (1 - o_.final_fraction) * (1 + std::cos(std::numbers::pi * t)) / 2);
    }
  }
  return o_.base_lr;
}

std::string LrSchedule::ToString() const {
  std::string s;
  switch (o_.kind) {
    case LrScheduleKind::kConstant:
      s = fmt::format("constant {:.4g}", o_.base_lr);
      break;
    case LrScheduleKind::kStep:
      s = fmt::format("step {:.4g} ×{:.3g} at {}", o_.base_lr, o_.factor, fmt::join(o_.milestones, ","));
      break;
    case LrScheduleKind::kCosine:
      s = fmt::format("cosine {:.4g} → {:.4g}", o_.base_lr, o_.base_lr * o_.final_fraction);
      break;
  }
  if (o_.warmup_samples > 0) s += fmt::format(", warm-up {} samples", o_.warmup_samples);
  return s;
}

}  // namespace murmur
