// The text form of CompressorOptions: ParseCompressorSpec and its inverse, CompressorSpec.
#include <algorithm>
#include <charconv>
#include <string>

#include "base/spec.h"
#include "coding/compressor.h"
#include "coding/operator_traits.h"
#include "fmt/format.h"

namespace murmur::coding {
namespace {

using internal::HasRatio;
using internal::HasTau;
using internal::HasValueChoice;

StatusOr<bool> ParseOnOff(std::string_view text, std::string_view what) {
  if (text == "on" || text == "true" || text == "1") return true;
  if (text == "off" || text == "false" || text == "0") return false;
  return InvalidArgumentError(fmt::format("{} '{}' must be on or off", what, text));
}

constexpr std::string_view kOperatorList = "none, fp16, topk, dgc, threshold, onebit, qsgd, int8";

}  // namespace

namespace {

Status SpecError(std::string_view spec, std::string_view why) {
  return InvalidArgumentError(fmt::format("compression spec '{}': {}", spec, why));
}

// The options of the threshold and DGC selections; false when `key` is not one of them.
StatusOr<bool> ApplySelectionOption(std::string_view spec, std::string_view key,
                                    std::string_view value, CompressorOptions& o) {
  if (key == "adaptive" && HasTau(o.op)) {
    MURMUR_ASSIGN_OR_RETURN(o.adaptive, ParseOnOff(value, "adaptive"));
  } else if (key == "band" && HasTau(o.op)) {
    const size_t dots = value.find("..");
    if (dots == std::string_view::npos) return SpecError(spec, "band must be MIN..MAX");
    MURMUR_ASSIGN_OR_RETURN(o.adaptive_options.min_density,
                            ParseNumber<double>(value.substr(0, dots), "band minimum"));
    MURMUR_ASSIGN_OR_RETURN(o.adaptive_options.max_density,
                            ParseNumber<double>(value.substr(dots + 2), "band maximum"));
  } else if (key == "decay" && HasTau(o.op)) {
    MURMUR_ASSIGN_OR_RETURN(o.adaptive_options.decay, ParseNumber<double>(value, "decay"));
  } else if (key == "sample" && o.op == Operator::kSampledTopK) {
    MURMUR_ASSIGN_OR_RETURN(o.sampled.sample_fraction, ParseNumber<double>(value, "sample"));
  } else if (key == "aim" && o.op == Operator::kSampledTopK) {
    MURMUR_ASSIGN_OR_RETURN(o.sampled.aim, ParseNumber<double>(value, "aim"));
  } else if (key == "lower" && o.op == Operator::kSampledTopK) {
    MURMUR_ASSIGN_OR_RETURN(o.sampled.lower, ParseNumber<double>(value, "lower"));
  } else if (key == "adapt" && o.op == Operator::kSampledTopK) {
    MURMUR_ASSIGN_OR_RETURN(o.sampled.max_adaptations, ParseNumber<int>(value, "adapt"));
  } else {
    return false;
  }
  return true;
}

// One key=value option of the spec onto `o`; false when the key does not apply to the operator.
StatusOr<bool> ApplyOption(std::string_view spec, std::string_view key, std::string_view value,
                           CompressorOptions& o) {
  if (key == "values" && HasValueChoice(o.op)) {
    if (value == "fp32") {
      o.mantissa_bits = 23;
    } else if (value == "fp16") {
      o.mantissa_bits = 10;
    } else {
      return SpecError(spec, fmt::format("values={} (fp32 or fp16)", value));
    }
  } else if (key == "rescale" && o.op == Operator::kQsgd) {
    MURMUR_ASSIGN_OR_RETURN(o.rescale, ParseOnOff(value, "rescale"));
  } else if (key == "ef") {
    MURMUR_ASSIGN_OR_RETURN(o.error_feedback, ParseOnOff(value, "ef"));
  } else if (key == "clip") {
    MURMUR_ASSIGN_OR_RETURN(o.clip_multiple, ParseNumber<double>(value, "clip"));
  } else if (key == "clip_every") {
    MURMUR_ASSIGN_OR_RETURN(o.clip_every, ParseNumber<int>(value, "clip_every"));
  } else if (key == "seed") {
    MURMUR_ASSIGN_OR_RETURN(o.seed, ParseNumber<uint64_t>(value, "seed"));
  } else {
    return ApplySelectionOption(spec, key, value, o);
  }
  return true;
}

// The operator's one positional parameter: top-k's ratio, a threshold, QSGD's levels.
Status ApplyParameter(std::string_view spec, std::string_view parameter, CompressorOptions& o) {
  if (HasRatio(o.op)) {
    MURMUR_ASSIGN_OR_RETURN(o.ratio, ParseNumber<double>(parameter, "ratio"));
  } else if (HasTau(o.op)) {
    MURMUR_ASSIGN_OR_RETURN(o.tau, ParseNumber<float>(parameter, "threshold"));
  } else if (o.op == Operator::kQsgd) {
    MURMUR_ASSIGN_OR_RETURN(o.levels, ParseNumber<uint32_t>(parameter, "levels"));
  } else {
    return SpecError(spec, fmt::format("{} takes no parameter", OperatorName(o.op)));
  }
  return OkStatus();
}

}  // namespace

StatusOr<CompressorOptions> ParseCompressorSpec(std::string_view spec) {
  CompressorOptions o;
  auto split = SplitSpec(spec);
  if (!split.ok()) return SpecError(spec, split.status().message());
  const std::string_view name = split->name;
  static constexpr std::pair<std::string_view, Operator> kNames[] = {
      {"none", Operator::kNone},           {"fp16", Operator::kFp16},
      {"topk", Operator::kTopK},           {"dgc", Operator::kSampledTopK},
      {"threshold", Operator::kThreshold}, {"onebit", Operator::kOneBit},
      {"qsgd", Operator::kQsgd},           {"int8", Operator::kInt8}};
  const auto* found = std::find_if(std::begin(kNames), std::end(kNames),
                                   [&](const auto& entry) { return entry.first == name; });
  if (found == std::end(kNames)) {
    return SpecError(spec, fmt::format("unknown operator '{}' (one of {})", name, kOperatorList));
  }
  o.op = found->second;
  o.error_feedback = o.op != Operator::kQsgd;
  if (split->parameter.has_value()) {
    MURMUR_RETURN_IF_ERROR(ApplyParameter(spec, *split->parameter, o));
  }
  for (const auto& [key, value] : split->options) {
    MURMUR_ASSIGN_OR_RETURN(const bool applied, ApplyOption(spec, key, value, o));
    if (!applied) {
      return SpecError(
          spec,
          fmt::format(
              "key '{}' does not apply to {} (keys: values for topk/dgc/threshold; adaptive, band, "
              "decay for threshold/onebit; sample, aim, lower, adapt for dgc; rescale for qsgd; "
              "ef, "
              "clip, clip_every, seed)",
              key, name));
    }
  }
  return o;
}

std::string CompressorSpec(const CompressorOptions& o) {
  std::string spec(OperatorName(o.op));
  if (HasRatio(o.op)) spec += fmt::format(":{}", o.ratio);
  if (HasTau(o.op)) spec += fmt::format(":{}", o.tau);
  if (o.op == Operator::kQsgd) {
    spec += fmt::format(":{}", o.levels);
    if (o.rescale) spec += ",rescale=on";
  }
  if (HasValueChoice(o.op)) spec += o.mantissa_bits == 10 ? ",values=fp16" : ",values=fp32";
  if (HasTau(o.op) && o.adaptive) {
    spec += fmt::format(",adaptive=on,band={}..{},decay={}", o.adaptive_options.min_density,
                        o.adaptive_options.max_density, o.adaptive_options.decay);
  }
  if (o.op == Operator::kSampledTopK) {
    spec += fmt::format(",sample={},aim={},lower={},adapt={}", o.sampled.sample_fraction,
                        o.sampled.aim, o.sampled.lower, o.sampled.max_adaptations);
  }
  spec += o.error_feedback ? ",ef=on" : ",ef=off";
  if (o.clip_multiple > 0)
    spec += fmt::format(",clip={},clip_every={}", o.clip_multiple, o.clip_every);
  spec += fmt::format(",seed={}", o.seed);
  return spec;
}

}  // namespace murmur::coding
