#include "node/net/network_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "base/spec.h"

namespace murmur::node::net {
namespace {

constexpr uint64_t kMinRate = 8'000;            // 8 kbit/s
constexpr uint64_t kMaxRate = 100'000'000'000;  // 100 Gbit/s
constexpr uint64_t kMinBurst = 1'600;           // one full-size frame
constexpr uint64_t kMaxBurst = 64ull << 20;
constexpr auto kMaxLatency = std::chrono::seconds(10);

StatusOr<double> Number(std::string_view text, std::string_view what) {
  const StatusOr<double> v = ParseNumber<double>(text, what);
  if (!v.ok() || *v <= 0) {
    return InvalidArgumentError(fmt::format("{} '{}' is not a positive number", what, text));
  }
  return *v;
}

// `text` split into its number and its unit suffix (lower case).
std::pair<std::string_view, std::string> SplitUnit(std::string_view text) {
  size_t at = text.size();
  while (at > 0 && std::isalpha(static_cast<unsigned char>(text[at - 1]))) --at;
  std::string unit(text.substr(at));
  std::transform(unit.begin(), unit.end(), unit.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return {text.substr(0, at), unit};
}

// `text` as a number times one of `units` (their names lower case, matched in any case), within
// [lo, hi]; `what` and `range` name it in errors.
StatusOr<double> WithUnit(std::string_view text,
                          const std::vector<std::pair<std::string, double>>& units,
                          std::string_view what, double lo, double hi, std::string_view range) {
  const auto [digits, unit] = SplitUnit(text);
  const auto u =
      std::find_if(units.begin(), units.end(), [&](const auto& n) { return n.first == unit; });
  if (u == units.end()) {
    std::string names;
    for (size_t i = 0; i < units.size(); ++i) {
      names += (i == 0 ? "" : i + 1 == units.size() ? " or " : ", ") + units[i].first;
    }
    return InvalidArgumentError(fmt::format("{} '{}' needs a unit: {}", what, text, names));
  }
  MURMUR_ASSIGN_OR_RETURN(double v, Number(digits, what));
  const double value = v * u->second;
  if (value < lo || value > hi) {
    return InvalidArgumentError(fmt::format("{} '{}' must be between {}", what, text, range));
  }
  return value;
}

// tc's byte units: kb = 1024 bytes.
StatusOr<uint64_t> ParseBurst(std::string_view text) {
  MURMUR_ASSIGN_OR_RETURN(double bytes,
                          WithUnit(text, {{"b", 1}, {"kb", 1024}, {"mb", 1024.0 * 1024}}, "burst",
                                   kMinBurst, kMaxBurst, "1600 bytes and 64 mb"));
  return static_cast<uint64_t>(bytes);
}

Status SetKey(NetworkSpec& spec, std::string_view key, std::string_view value) {
  if (key == "rate") {
    MURMUR_ASSIGN_OR_RETURN(spec.rate_bps, ParseRate(value));
  } else if (key == "burst") {
    MURMUR_ASSIGN_OR_RETURN(spec.burst_bytes, ParseBurst(value));
  } else if (key == "uplink") {
    MURMUR_ASSIGN_OR_RETURN(spec.uplink_bps, ParseRate(value));
  } else if (key == "topology") {
    if (value == "star") {
      spec.topology = Topology::kStar;
    } else if (value == "two-racks") {
      spec.topology = Topology::kTwoRacks;
    } else {
      return InvalidArgumentError(fmt::format("topology '{}' is not star or two-racks", value));
    }
  } else if (key == "latency") {
    MURMUR_ASSIGN_OR_RETURN(spec.latency, ParseDuration(value));
    if (spec.latency > kMaxLatency) return InvalidArgumentError("latency above 10 s");
  } else if (key.starts_with("node")) {
    const StatusOr<int> id = ParseNumber<int>(key.substr(4), "node");
    if (!id.ok() || *id < 1 || *id > 256) {
      return InvalidArgumentError(
          fmt::format("'{}': a node's own rate is nodeK=RATE, K in 1..256", key));
    }
    MURMUR_ASSIGN_OR_RETURN(spec.node_rate_bps[*id], ParseRate(value));
  } else {
    return InvalidArgumentError(fmt::format(
        "unknown part '{}' (known: rate, burst, topology, uplink, latency, nodeK)", key));
  }
  return OkStatus();
}

}  // namespace

StatusOr<uint64_t> ParseRate(std::string_view text) {
  MURMUR_ASSIGN_OR_RETURN(
      double bps, WithUnit(text, {{"bit", 1}, {"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9}}, "rate",
                           kMinRate, kMaxRate, "8kbit and 100gbit"));
  return static_cast<uint64_t>(std::llround(bps));
}

std::string RateText(uint64_t bps) {
  if (bps >= 1'000'000'000) return fmt::format("{:g} Gbit/s", bps / 1e9);
  if (bps >= 1'000'000) return fmt::format("{:g} Mbit/s", bps / 1e6);
  return fmt::format("{:g} kbit/s", bps / 1e3);
}

uint64_t BurstFor(uint64_t bps) { return std::max<uint64_t>(32 * 1024, bps / 8 / 100); }

uint64_t NetworkSpec::RateOf(int id) const {
  const auto it = node_rate_bps.find(id);
  return it == node_rate_bps.end() ? rate_bps : it->second;
}

std::string NetworkSpec::Describe() const {
  if (!netns) return "loopback";
  std::string out = "network namespaces, " + RateText(rate_bps) + " per node each way";
  for (const auto& [id, bps] : node_rate_bps)
    out += fmt::format(", node {} at {}", id, RateText(bps));
  if (topology == Topology::kTwoRacks) {
    out += ", two racks joined by " + RateText(uplink_bps > 0 ? uplink_bps : rate_bps);
  }
  if (latency.count() > 0) {
    out += fmt::format(", {:g} ms send delay per message (latency)",
                       std::chrono::duration<double, std::milli>(latency).count());
  }
  return out;
}

StatusOr<NetworkSpec> ParseNetworkSpec(std::string_view text) {
  NetworkSpec spec;
  if (text.empty() || text == "loopback") return spec;
  if (!text.starts_with("netns:")) {
    return InvalidArgumentError(
        fmt::format("'{}' is not loopback or netns:rate=R[,...] (e.g. netns:rate=100mbit)", text));
  }
  spec.netns = true;
  std::string_view rest = text.substr(6);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view part = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t eq = part.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == part.size()) {
      return InvalidArgumentError(fmt::format("'{}' is not key=value", part));
    }
    MURMUR_RETURN_IF_ERROR(SetKey(spec, part.substr(0, eq), part.substr(eq + 1)));
  }
  if (spec.rate_bps == 0) return InvalidArgumentError("netns needs rate=R (e.g. rate=100mbit)");
  if (spec.uplink_bps > 0 && spec.topology != Topology::kTwoRacks) {
    return InvalidArgumentError(
        "uplink is the link between two racks: it needs topology=two-racks");
  }
  return spec;
}

}  // namespace murmur::node::net
