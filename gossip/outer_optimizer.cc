#include "gossip/outer_optimizer.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "base/check.h"
#include "base/spec.h"
#include "fmt/format.h"
#include "kernels/compress_ops.h"
#include "kernels/gossip_ops.h"

namespace murmur::gossip {
namespace {

constexpr std::string_view kMethods = "nesterov, momentum or sgd";

const char* MethodName(OuterMethod method) {
  switch (method) {
    case OuterMethod::kNesterov: return "nesterov";
    case OuterMethod::kMomentum: return "momentum";
    case OuterMethod::kSgd: return "sgd";
  }
  return "?";
}

template <typename T>
Status ReadNumber(std::string_view text, std::string_view key, T& out) {
  MURMUR_ASSIGN_OR_RETURN(out, ParseNumber<T>(text, key));
  return OkStatus();
}

}  // namespace

Status OuterOptions::Validate() const {
  if (every < 1) return InvalidArgumentError(fmt::format("outer every={} (at least 1)", every));
  if (!(lr > 0 && lr <= 10)) return InvalidArgumentError(fmt::format("outer lr={} (in (0, 10])", lr));
  if (!(momentum >= 0 && momentum < 1)) {
    return InvalidArgumentError(fmt::format("outer momentum={} (in [0, 1))", momentum));
  }
  if (method == OuterMethod::kSgd && momentum != 0) {
    return InvalidArgumentError("outer sgd takes no momentum (use nesterov or momentum)");
  }
  if (rounds < 0 || rounds > 1000000) {
    return InvalidArgumentError(fmt::format("outer rounds={} (in [0, 1000000])", rounds));
  }
  if (overlap < 0 || overlap > 1000000) {
    return InvalidArgumentError(
        fmt::format("outer overlap={} (inner steps, in [0, 1000000])", overlap));
  }
  if (!(start_epoch >= 0 && std::isfinite(start_epoch))) {
    return InvalidArgumentError(fmt::format("outer start={} (a local epoch, at least 0)", start_epoch));
  }
  return OkStatus();
}

StatusOr<std::optional<OuterOptions>> ParseOuterSpec(std::string_view text) {
  auto error = [text](std::string_view why) {
    return InvalidArgumentError(fmt::format("outer optimizer '{}': {}", text, why));
  };
  if (text == "none") return std::optional<OuterOptions>();
  auto parts = SplitSpec(text, /*options_after_colon=*/true);
  if (!parts.ok()) return error(parts.status().message());
  OuterOptions o;
  if (parts->name == "nesterov") {
    o.method = OuterMethod::kNesterov;
  } else if (parts->name == "momentum") {
    o.method = OuterMethod::kMomentum;
  } else if (parts->name == "sgd") {
    o.method = OuterMethod::kSgd;
    o.momentum = 0;
    o.lr = 1;
  } else {
    return error(fmt::format("unknown method '{}' (none, {})", parts->name, kMethods));
  }
  for (const auto& [key, value] : parts->options) {
    const Status parsed =
        key == "every"      ? ReadNumber(value, key, o.every)
        : key == "lr"       ? ReadNumber(value, key, o.lr)
        : key == "momentum" ? ReadNumber(value, key, o.momentum)
        : key == "start"    ? ReadNumber(value, key, o.start_epoch)
        : key == "rounds"   ? ReadNumber(value, key, o.rounds)
        : key == "overlap"
            ? ReadNumber(value, key, o.overlap)
            : InvalidArgumentError(fmt::format(
                  "unknown key '{}' (every, lr, momentum, start, rounds, overlap)", key));
    if (!parsed.ok()) return error(parsed.message());
  }
  if (Status valid = o.Validate(); !valid.ok()) return error(valid.message());
  return std::optional<OuterOptions>(o);
}

std::string OuterSpec(const std::optional<OuterOptions>& options) {
  if (!options.has_value()) return "none";
  const OuterOptions& o = *options;
  std::string spec = fmt::format("{}:every={},lr={}", MethodName(o.method), o.every, o.lr);
  if (o.method != OuterMethod::kSgd) spec += fmt::format(",momentum={}", o.momentum);
  if (o.start_epoch > 0) spec += fmt::format(",start={}", o.start_epoch);
  spec += fmt::format(",rounds={}", o.rounds);  // always: 0 is not the default
  if (o.overlap > 0) spec += fmt::format(",overlap={}", o.overlap);
  return spec;
}

int OuterEvery(const OuterOptions& options, int64_t steps) {
  if (options.rounds <= 0 || steps <= 0 || steps >= int64_t{options.every} * options.rounds) {
    return options.every;
  }
  const auto most = static_cast<uint64_t>(std::max<int64_t>(steps / options.rounds, 1));
  return static_cast<int>(std::bit_floor(most));
}

StatusOr<OuterOptimizer> OuterOptimizer::Create(const OuterOptions& options,
                                                const kernels::Device& device,
                                                std::span<const float> model) {
  MURMUR_RETURN_IF_ERROR(options.Validate());
  if (model.empty()) return InvalidArgumentError("the outer optimizer needs a model");
  OuterOptimizer outer(options, device);
  MURMUR_ASSIGN_OR_RETURN(outer.anchor_, kernels::Buffer<float>::Uninitialized(device, model.size()));
  MURMUR_RETURN_IF_ERROR(kernels::Copy<float>(device, outer.anchor_.span(), device, model));
  MURMUR_ASSIGN_OR_RETURN(outer.velocity_, kernels::Buffer<float>::Create(device, model.size()));
  return outer;
}

StatusOr<OuterStats> OuterOptimizer::Step(std::span<float> x) {
  if (x.size() != anchor_.size()) {
    return InvalidArgumentError(fmt::format("outer step on a model of {} values, the anchor has {}",
                                            x.size(), anchor_.size()));
  }
  double squares = 0;
  double anchor_squares = 0;
  MURMUR_RETURN_IF_ERROR(kernels::SquaredDistance(device_, anchor_.span(), x, &squares));
  if (!std::isfinite(squares)) {
    return InvalidArgumentError("outer step: the model holds a NaN or infinity");
  }
  MURMUR_RETURN_IF_ERROR(kernels::SumOfSquares(device_, anchor_.span(), &anchor_squares));
  const bool nesterov = options_.method == OuterMethod::kNesterov;
  MURMUR_RETURN_IF_ERROR(kernels::OuterStep(device_, options_.lr, options_.momentum, nesterov,
                                            anchor_.span(), velocity_.span(), x));
  ++steps_;
  OuterStats stats;
  stats.delta_norm = std::sqrt(squares);
  stats.relative = anchor_squares > 0 ? stats.delta_norm / std::sqrt(anchor_squares) : 0;
  return stats;
}

void OuterOptimizer::Restart(std::span<const float> x) {
  MURMUR_CHECK_EQ(x.size(), anchor_.size());
  MURMUR_CHECK_OK(kernels::Copy<float>(device_, anchor_.span(), device_, x));
}

}  // namespace murmur::gossip
