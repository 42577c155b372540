#pragma once
// The text of a spec, as the command line and config files write them:
//   name[:parameter][,key=value]...      e.g. "topk:0.01,values=fp16", "nesterov:every=20,lr=0.7"
// SplitSpec cuts it into its parts (no meaning attached); ParseNumber reads one number and
// ParseDuration one duration with its unit. Each
// spec's own parser (coding/compressor.h, gossip/outer_optimizer.h, …) gives the parts meaning
// and names the spec in its errors.

#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/status.h"

namespace murmur {

struct SpecParts {
  std::string_view name;                     // before the first ':' or ','
  std::optional<std::string_view> parameter;  // after ':' up to the first ','
  std::vector<std::pair<std::string_view, std::string_view>> options;  // key=value, in order
};

// kInvalidArgument for an option without '=' or an empty key. The views point into `text`.
// With `options_after_colon`, the text after ':' is itself the key=value list
// ("nesterov:every=20,lr=0.7"); otherwise it is one parameter ("topk:0.01,values=fp16").
StatusOr<SpecParts> SplitSpec(std::string_view text, bool options_after_colon = false);

// The whole of `text` as a T (std::from_chars: no sign but '-', no spaces; a floating T finite);
// kInvalidArgument "<what> '<text>' is not a number" otherwise. The one number parser of the
// project: callers add their range and their own words.
template <typename T>
StatusOr<T> ParseNumber(std::string_view text, std::string_view what) {
  T value{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  bool ok = ec == std::errc() && ptr == end && !text.empty();
  if constexpr (std::is_floating_point_v<T>) ok = ok && std::isfinite(value);
  if (!ok) {
    return InvalidArgumentError(std::string(what) + " '" + std::string(text) + "' is not a number");
  }
  return value;
}

// "<number>us", "<number>ms" or "<number>s", from 0 to a day; kInvalidArgument naming `text`
// otherwise ("needs a unit: us, ms or s", "must be between 0 and a day").
StatusOr<Duration> ParseDuration(std::string_view text);

}  // namespace murmur
