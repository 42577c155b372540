#include "node/sim/network.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/spec.h"
#include "coding/update_codec.h"

namespace murmur::sim {

uint64_t StretchedFrameBytes(size_t bytes, double scale) {
  if (scale == 1 || bytes < coding::kUpdateHeaderBytes) return bytes;
  return coding::kUpdateHeaderBytes +
         static_cast<uint64_t>(
             std::llround(static_cast<double>(bytes - coding::kUpdateHeaderBytes) * scale));
}

namespace {

constexpr std::string_view kAllowed =
    "a link name (ideal, loopback, 100GbE, 25GbE, 10GbE, 1GbE, wan:LATENCY) then optional "
    "latency=D, bandwidth=B, loss=P, and the faults duplicate=P, jitter=D, corrupt=P (e.g. "
    "'wan:50ms,100Mbit', '1GbE,loss=0.01')";

StatusOr<double> Number(std::string_view text) {
  const StatusOr<double> v = ParseNumber<double>(text, "");
  if (!v.ok()) return InvalidArgumentError(fmt::format("'{}' is not a number", text));
  return *v;
}

// "100Mbit" -> 1e8 bits per second.
StatusOr<double> Bandwidth(std::string_view text) {
  static constexpr std::pair<std::string_view, double> kUnits[] = {
      {"Gbit", 1e9}, {"Mbit", 1e6}, {"Kbit", 1e3}, {"bit", 1}};
  for (const auto& [unit, scale] : kUnits) {
    if (!text.ends_with(unit)) continue;
    auto v = Number(text.substr(0, text.size() - unit.size()));
    if (!v.ok() || *v <= 0 || *v * scale > 1e15) break;
    return *v * scale;
  }
  return InvalidArgumentError(
      fmt::format("bandwidth '{}' must be a positive number with bit, Kbit, Mbit or Gbit", text));
}

std::optional<LinkSpec> Named(std::string_view name) {
  using std::chrono::microseconds;
  if (name == "ideal") return LinkSpec{};
  if (name == "loopback") return LinkSpec{microseconds(5), 40e9, 0};
  if (name == "100GbE") return LinkSpec{microseconds(5), 100e9, 0};
  if (name == "25GbE") return LinkSpec{microseconds(10), 25e9, 0};
  if (name == "10GbE") return LinkSpec{microseconds(20), 10e9, 0};
  if (name == "1GbE") return LinkSpec{microseconds(50), 1e9, 0};
  return std::nullopt;
}

std::string BandwidthText(double bits) {
  if (bits >= 1e9 && std::fmod(bits, 1e9) == 0) return fmt::format("{}Gbit", bits / 1e9);
  if (bits >= 1e6 && std::fmod(bits, 1e6) == 0) return fmt::format("{}Mbit", bits / 1e6);
  if (bits >= 1e3 && std::fmod(bits, 1e3) == 0) return fmt::format("{}Kbit", bits / 1e3);
  return fmt::format("{}bit", bits);
}

}  // namespace

Duration LinkSpec::Transmission(uint64_t bytes) const {
  if (bits_per_s <= 0) return Duration(0);
  return Duration(static_cast<int64_t>(std::ceil(static_cast<double>(bytes) * 8e9 / bits_per_s)));
}

std::string LinkSpec::ToString() const {
  std::string out = fmt::format(
      "latency={}us", std::chrono::duration_cast<std::chrono::microseconds>(latency).count());
  if (bits_per_s > 0) out += ",bandwidth=" + BandwidthText(bits_per_s);
  if (loss > 0) out += fmt::format(",loss={}", loss);
  if (duplicate > 0) out += fmt::format(",duplicate={}", duplicate);
  if (jitter.count() > 0) {
    out += fmt::format(",jitter={}us",
                       std::chrono::duration_cast<std::chrono::microseconds>(jitter).count());
  }
  if (corrupt > 0) out += fmt::format(",corrupt={}", corrupt);
  return out;
}

StatusOr<LinkSpec> ParseLink(std::string_view text) {
  LinkSpec link;
  bool first = true;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    auto fail = [&](std::string_view why) {
      return InvalidArgumentError(
          fmt::format("network: '{}': {}; allowed: {}", item, why, kAllowed));
    };
    if (first) {
      first = false;
      if (auto named = Named(item)) {
        link = *named;
        continue;
      }
      if (item.starts_with("wan:")) {
        auto d = ParseDuration(item.substr(4));
        if (!d.ok()) return fail(d.status().message());
        link = LinkSpec{*d, 100e6, 0};
        continue;
      }
    }
    const size_t eq = item.find('=');
    const std::string_view key = eq == std::string_view::npos ? "" : item.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? item : item.substr(eq + 1);
    if (key == "latency") {
      auto d = ParseDuration(value);
      if (!d.ok()) return fail(d.status().message());
      link.latency = *d;
    } else if (key == "bandwidth" || (key.empty() && value.ends_with("bit"))) {
      auto b = Bandwidth(value);
      if (!b.ok()) return fail(b.status().message());
      link.bits_per_s = *b;
    } else if (key == "loss") {
      auto p = Number(value);
      if (!p.ok() || *p < 0 || *p >= 1) return fail("loss must be a number in [0, 1)");
      link.loss = *p;
    } else if (key == "duplicate" || key == "corrupt") {
      auto p = Number(value);
      if (!p.ok() || *p < 0 || *p >= 1) return fail("the probability must be a number in [0, 1)");
      (key == "duplicate" ? link.duplicate : link.corrupt) = *p;
    } else if (key == "jitter") {
      auto d = ParseDuration(value);
      if (!d.ok()) return fail(d.status().message());
      link.jitter = *d;
    } else {
      return fail("not a link name or a known key");
    }
  }
  if (first) return InvalidArgumentError(fmt::format("network: empty; allowed: {}", kAllowed));
  return link;
}

NetworkModel::NetworkModel(size_t nodes, LinkSpec link, uint64_t seed)
    : link_(link),
      rng_(seed),
      uplink_free_(nodes),
      downlink_free_(nodes),
      group_(nodes, 0),
      down_(nodes, false) {}

std::optional<TimePoint> NetworkModel::Send(size_t from, size_t to, uint64_t bytes, TimePoint now,
                                            Duration hold, bool own_lane) {
  const Duration tx = link_.Transmission(bytes);
  const TimePoint start = own_lane ? now + hold : std::max(now + hold, uplink_free_[from]);
  if (!own_lane) uplink_free_[from] = start + tx;
  if (link_.loss > 0 && Uniform() < link_.loss) return std::nullopt;
  (void)to;
  return start + link_.latency + Jitter();
}

TimePoint NetworkModel::Receive(size_t to, uint64_t bytes, TimePoint at, bool own_lane) {
  if (own_lane) return at + link_.Transmission(bytes);
  const TimePoint start = std::max(at, downlink_free_[to]);
  downlink_free_[to] = start + link_.Transmission(bytes);
  return downlink_free_[to];
}

Duration NetworkModel::Jitter() {
  if (link_.jitter.count() <= 0) return Duration(0);
  return Duration(static_cast<int64_t>(Uniform() * static_cast<double>(link_.jitter.count())));
}

bool NetworkModel::Reachable(size_t from, size_t to) const {
  return !down_[to] && group_[from] == group_[to];
}

void NetworkModel::SetDown(size_t node, bool down) {
  down_[node] = down;
  if (down) {
    uplink_free_[node] = TimePoint{};
    downlink_free_[node] = TimePoint{};
  }
}

}  // namespace murmur::sim
