#include "base/spec.h"

namespace murmur {

StatusOr<SpecParts> SplitSpec(std::string_view text, bool options_after_colon) {
  SpecParts parts;
  const size_t colon = text.find(':');
  const size_t comma = text.find(',');
  const size_t name_end = std::min(colon, comma);
  parts.name = text.substr(0, name_end);
  std::string_view rest;
  bool listed = false;  // a ',' (or, with options_after_colon, a ':') opened an options list
  if (colon != std::string_view::npos && colon < comma) {
    std::string_view after = text.substr(colon + 1);
    if (options_after_colon) {
      rest = after;
      listed = !after.empty();
    } else {
      const size_t next = after.find(',');
      parts.parameter = after.substr(0, next);
      if (next != std::string_view::npos) {
        rest = after.substr(next + 1);
        listed = true;
      }
    }
  } else if (comma != std::string_view::npos) {
    rest = text.substr(comma + 1);
    listed = true;
  }
  if (!listed) return parts;
  for (size_t begin = 0;;) {
    const size_t end = rest.find(',', begin);
    std::string_view item = rest.substr(begin, end == std::string_view::npos ? end : end - begin);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return InvalidArgumentError("'" + std::string(item) + "' is not key=value");
    }
    parts.options.emplace_back(item.substr(0, eq), item.substr(eq + 1));
    if (end == std::string_view::npos) break;
    begin = end + 1;
  }
  return parts;
}

StatusOr<Duration> ParseDuration(std::string_view text) {
  double scale = 0;
  std::string_view number = text;
  if (text.ends_with("us")) {
    scale = 1e3, number.remove_suffix(2);
  } else if (text.ends_with("ms")) {
    scale = 1e6, number.remove_suffix(2);
  } else if (text.ends_with("s")) {
    scale = 1e9, number.remove_suffix(1);
  } else {
    return InvalidArgumentError("duration '" + std::string(text) + "' needs a unit: us, ms or s");
  }
  MURMUR_ASSIGN_OR_RETURN(double v, ParseNumber<double>(number, "duration"));
  if (!(v >= 0 && v <= 86400.0 * 1e9 / scale)) {
    return InvalidArgumentError("duration '" + std::string(text) + "' must be between 0 and a day");
  }
  return Duration(static_cast<int64_t>(v * scale));
}

}  // namespace murmur
