#include "api/peer_options.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <set>

#include "base/check.h"
#include "base/suggest.h"
#include "node/config/config_schema.h"
#include "node/config/peer_keys.h"

namespace murmur::api {
namespace {

using KeyMap = std::map<std::string, std::string>;

constexpr const char* kLibraryKeys[] = {"epoch_samples",  "shard_samples", "same_init",
                                        "join_timeout_s", "device",        "language_model"};

// What `murmur local --exec` placed: its node's resolved keys (the document MURMUR_PEER_CONFIG
// names, as `murmur node --config` reads it) and the process's device (MURMUR_DEVICE).
struct Launcher {
  KeyMap keys;
  // Keys of `keys` that are the launcher's own defaults, not flags its user gave
  // (MURMUR_LAUNCHER_DEFAULTS): a program's value for one of them is used.
  std::set<std::string> defaults;
  // Checked against the buffer's own, not merged; auto: the program's own choice, not checked.
  kernels::DeviceSpec device;
};

StatusOr<Launcher> LauncherFromEnvironment() {
  Launcher launcher;
  const char* path = std::getenv("MURMUR_PEER_CONFIG");
  if (path == nullptr) return launcher;
  StatusOr<KeyMap> keys = node::ReadTomlFile(path);
  if (!keys.ok()) {
    return Status(keys.status().code(),
                  "MURMUR_PEER_CONFIG: " + std::string(keys.status().message()));
  }
  launcher.keys = *std::move(keys);
  KeyMap& k = launcher.keys;
  if (auto it = k.find("mode"); it != k.end() && it->second != "gossip") {
    return InvalidArgumentError("MURMUR_PEER_CONFIG: mode " + it->second +
                                ": the library runs gossip");
  }
  if (auto it = k.find("device"); it != k.end()) {
    MURMUR_ASSIGN_OR_RETURN(launcher.device, kernels::ParseDeviceSpec(it->second));
  }
  // What only `murmur node` does with these: the script gets its rank and shard in the
  // environment (MURMUR_RANK, MURMUR_WORLD_SIZE), reports go to MURMUR_REPORT_FD.
  for (const char* key : {"mode", "device", "shard_index", "shard_count", "report"}) k.erase(key);
  if (const char* defaults = std::getenv("MURMUR_LAUNCHER_DEFAULTS"); defaults != nullptr) {
    std::string_view rest = defaults;
    while (!rest.empty()) {
      const size_t comma = std::min(rest.find(','), rest.size());
      if (comma > 0) launcher.defaults.insert(std::string(rest.substr(0, comma)));
      rest.remove_prefix(std::min(comma + 1, rest.size()));
    }
  }
  return launcher;
}

// Where the caller's buffer is: the `device` key (default cpu), which must agree with the
// launcher's placement when `murmur local --exec --device` gave one.
StatusOr<kernels::Device> BufferDevice(const KeyMap& library, const kernels::DeviceSpec& placed) {
  using Kind = kernels::DeviceSpec::Kind;
  const auto it = library.find("device");
  kernels::DeviceSpec spec{Kind::kCpu};
  if (it != library.end()) {
    StatusOr<kernels::DeviceSpec> parsed = kernels::ParseDeviceSpec(it->second);
    if (!parsed.ok())
      return InvalidArgumentError("device: " + std::string(parsed.status().message()));
    spec = *parsed;
  }
  if (spec.kind == Kind::kAuto) {
    return InvalidArgumentError(
        "device: auto: the buffer is where the caller put it; give cpu or cuda:N");
  }
  StatusOr<kernels::Device> device = kernels::ResolveDevice(spec);
  if (!device.ok()) {
    return Status(device.status().code(), "device: " + std::string(device.status().message()));
  }
  if (placed.kind == Kind::kAuto) return device;
  const kernels::Device expected = placed.kind == Kind::kCpu ? kernels::Device::Cpu()
                                   : placed.kind == Kind::kCuda
                                       ? kernels::Device::Cuda(placed.index)
                                       : kernels::Device::Cuda(0);
  if (expected != *device) {
    return InvalidArgumentError(
        "device: murmur local placed this process on " + expected.ToString() +
        " (MURMUR_DEVICE), but the model buffer is on " + device->ToString() +
        (it == library.end() ? " (no device key: host memory)" : ""));
  }
  return device;
}

// The same value in two spellings ("1" and "1.0"): numbers compare as numbers.
bool SameValue(const std::string& a, const std::string& b) {
  if (a == b) return true;
  StatusOr<double> x = node::ParseReal(a, -1e300, 1e300), y = node::ParseReal(b, -1e300, 1e300);
  return x.ok() && y.ok() && *x == *y;
}

// The launcher's keys, then the caller's where the launcher's user gave no flag for that key:
// a flag given to `murmur local --exec` (or `python -m murmur.run`) sets the run, and a caller's
// other value for it is noted in `overridden` (said at Start) and not used.
KeyMap MergeOverLauncher(Launcher launcher, const KeyMap& keys,
                         std::vector<std::string>& overridden) {
  KeyMap merged = std::move(launcher.keys);
  for (const auto& [name, value] : keys) {
    const auto it = merged.find(name);
    if (it == merged.end() || launcher.defaults.count(name) > 0) {
      merged[name] = value;
    } else if (!SameValue(it->second, value)) {
      overridden.push_back(name + ": the launcher's " + it->second + " sets the run; the " +
                           "program's " + value + " is not used");
    }
  }
  return merged;
}

// A library key's value through the schema's own parsers, named in the error.
template <typename T>
StatusOr<T> KeyValue(const std::string& key, const std::string& text, StatusOr<T> parsed) {
  if (parsed.ok()) return parsed;
  return InvalidArgumentError(key + ": '" + text + "': " + std::string(parsed.status().message()));
}

StatusOr<int64_t> PositiveInteger(const std::string& key, const std::string& text) {
  return KeyValue(key, text, node::ParseInteger(text, 1, std::numeric_limits<int64_t>::max()));
}

// The keys only the library has (not `murmur node`'s) into `o`.
Status ApplyLibraryKeys(const KeyMap& library, const kernels::DeviceSpec& placed, PeerOptions& o) {
  if (auto it = library.find("epoch_samples"); it != library.end()) {
    MURMUR_ASSIGN_OR_RETURN(o.gossip.epoch_samples, PositiveInteger("epoch_samples", it->second));
  }
  if (auto it = library.find("shard_samples"); it != library.end()) {
    MURMUR_ASSIGN_OR_RETURN(o.gossip.shard_samples, PositiveInteger("shard_samples", it->second));
  }
  if (auto it = library.find("same_init"); it != library.end()) {
    MURMUR_ASSIGN_OR_RETURN(o.gossip.same_init,
                            KeyValue("same_init", it->second, node::ParseBool(it->second)));
  }
  if (auto it = library.find("language_model"); it != library.end()) {
    MURMUR_ASSIGN_OR_RETURN(o.gossip.language_model,
                            KeyValue("language_model", it->second, node::ParseBool(it->second)));
  }
  if (auto it = library.find("join_timeout_s"); it != library.end()) {
    MURMUR_ASSIGN_OR_RETURN(const double v, KeyValue("join_timeout_s", it->second,
                                                     node::ParseReal(it->second, 0, 86400)));
    o.gossip.join_timeout = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(v));
  }
  MURMUR_ASSIGN_OR_RETURN(o.device, BufferDevice(library, placed));
  return OkStatus();
}

// One of `murmur node`'s keys into `c`, if it applies to a caller's model.
Status ApplyNodeKey(const std::string& name, const std::string& value, const KeyContext& context,
                    node::NodeConfig& c) {
  const auto& schema = node::NodeSchema();
  const auto key = std::find_if(schema.keys().begin(), schema.keys().end(),
                                [&](const auto& k) { return k.name == name; });
  if (key == schema.keys().end()) {
    const std::vector<std::string> keys = PeerKnownKeys();
    std::string known;
    for (const std::string& k : keys) known += (known.empty() ? "" : ", ") + k;
    const std::string closest = Closest(name, keys);
    return InvalidArgumentError("unknown key '" + name + "'" +
                                (closest.empty() ? "" : ": did you mean '" + closest + "'?") +
                                " (known: " + known + ")");
  }
  const bool evaluation_key = name == "eval_every" || name == "target_accuracy";
  const bool checkpoint_key = name == "checkpoint_dir" || name == "checkpoint_every";
  if (node::PeerLibraryKeys().count(name) == 0 && !(evaluation_key && context.evaluate) &&
      !(checkpoint_key && context.state_hooks)) {
    return InvalidArgumentError("key '" + name + "' does not apply to a library peer: " +
                                node::WhyNotAPeerLibraryKey(name));
  }
  if (Status s = key->set(value, c); !s.ok()) {
    return InvalidArgumentError(name + ": '" + value + "': " + std::string(s.message()) +
                                " (allowed: " + key->allowed + ")");
  }
  return OkStatus();
}

}  // namespace

node::NodeConfig DefaultPeerConfig() {
  node::NodeConfig c;
  for (const auto& key : node::NodeSchema().keys()) MURMUR_CHECK_OK(key.set(key.default_text, c));
  c.listen = "tcp://127.0.0.1:0";
  c.gossip.epochs = 0;      // a budget is the caller's to give
  c.gossip.eval_every = 0;  // only the final evaluation unless eval_every is given
  c.gossip.train.lr_schedule = LrScheduleOptions{};  // constant
  return c;
}

StatusOr<PeerOptions> PeerOptionsFrom(const node::NodeConfig& c) {
  MURMUR_ASSIGN_OR_RETURN(node::PeerNodeOptions peer, node::NodeOptionsFrom(c));
  MURMUR_ASSIGN_OR_RETURN(node::GossipPeerOptions gossip, node::GossipOptionsFrom(c.gossip));
  return PeerOptionsWith(c, std::move(peer), std::move(gossip));
}

PeerOptions PeerOptionsWith(const node::NodeConfig& c, node::PeerNodeOptions peer,
                            node::GossipPeerOptions gossip) {
  PeerOptions o;
  o.gossip = std::move(gossip);
  o.gossip.peer = std::move(peer);
  o.gossip.expect_members = c.expect_members;
  o.gossip.report_interval = std::chrono::milliseconds(c.report_interval_ms);
  o.log_level = c.log_level;
  o.admin = c.admin;
  o.admin_token_file = c.admin_token_file;
  o.save_model = c.save_model;
  o.checkpoint_dir = c.checkpoint_dir;
  o.checkpoint_every = c.checkpoint_every;
  o.cluster = c.cluster;
  return o;
}

std::vector<std::string> PeerKnownKeys() {
  std::vector<std::string> keys(node::PeerLibraryKeys().begin(), node::PeerLibraryKeys().end());
  keys.insert(keys.end(), std::begin(kLibraryKeys), std::end(kLibraryKeys));
  std::sort(keys.begin(), keys.end());
  return keys;
}

StatusOr<PeerOptions> PeerOptionsFromKeys(const KeyMap& keys, const KeyContext& context) {
  node::NodeConfig c = DefaultPeerConfig();
  const int64_t default_every = c.checkpoint_every;
  // The launcher's keys first; the caller's own override them.
  Launcher launcher;
  if (context.launcher_environment) {
    MURMUR_ASSIGN_OR_RETURN(launcher, LauncherFromEnvironment());
  }
  std::vector<std::string> overridden;
  KeyMap merged = MergeOverLauncher(launcher, keys, overridden);
  KeyMap library;
  for (const auto& [name, value] : merged) {
    if (std::find(std::begin(kLibraryKeys), std::end(kLibraryKeys), name) !=
        std::end(kLibraryKeys)) {
      library[name] = value;
    } else {
      MURMUR_RETURN_IF_ERROR(ApplyNodeKey(name, value, context, c));
    }
  }
  // A checkpoint period with nowhere to write checkpoints would do nothing.
  if (auto every = merged.find("checkpoint_every");
      every != merged.end() && c.checkpoint_dir.empty() && c.checkpoint_every != default_every) {
    return InvalidArgumentError("checkpoint_every: '" + every->second +
                                "' without checkpoint_dir: there is nowhere to write checkpoints");
  }
  // The rate: the cluster's schedule when one of its keys is given, with its base rate.
  const bool scheduled = merged.count("lr_schedule") > 0 || merged.count("warmup_epochs") > 0 ||
                         merged.count("lr_reference_batch") > 0;
  if (scheduled && merged.count("lr") == 0) {
    return InvalidArgumentError("lr_schedule needs lr: the schedule's base rate");
  }
  if (!scheduled && merged.count("lr") > 0) {
    return InvalidArgumentError(
        "lr is the base rate of lr_schedule; without a schedule the "
        "caller's optimizer keeps its own rate");
  }
  MURMUR_ASSIGN_OR_RETURN(PeerOptions o, PeerOptionsFrom(c));
  MURMUR_RETURN_IF_ERROR(ApplyLibraryKeys(library, launcher.device, o));
  o.gossip.schedule_rate = scheduled;
  o.launcher_overrides = std::move(overridden);
  return o;
}

}  // namespace murmur::api
