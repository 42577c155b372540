#include "node/config/secrets.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "base/file.h"
#include "base/log.h"

namespace murmur::node {
namespace {

// Whether `gid` is this process's group or one of its supplementary groups: a key readable by
// such a group is how Kubernetes gives a secret to a non-root pod (fsGroup, mode 0440).
bool InOwnGroups(gid_t gid) {
  if (gid == ::getegid()) return true;
  std::array<gid_t, 256> groups{};
  const int n = ::getgroups(static_cast<int>(groups.size()), groups.data());
  const auto end = groups.begin() + std::max(n, 0);
  return std::find(groups.begin(), end, gid) != end;
}

// The keys of an allowlist: the file, or every file of the directory (a mounted Kubernetes
// Secret, one member per file) but those whose name starts with '.', in name order. Public keys:
// no secret, so no permission check. A key listed twice, in one file or two, is refused.
StatusOr<std::vector<transport::AllowedKey>> LoadAllowlist(const std::string& path) {
  std::error_code ec;
  std::vector<std::string> files;
  if (std::filesystem::is_directory(path, ec)) {
    for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
      const std::string name = entry.path().filename().string();
      if (!name.starts_with('.') && std::filesystem::is_regular_file(entry.path(), ec)) {
        files.push_back(entry.path().string());
      }
    }
    if (ec)
      return InvalidArgumentError("allowed_keys_file: cannot list '" + path + "': " + ec.message());
    std::sort(files.begin(), files.end());
  } else {
    files.push_back(path);
  }
  std::vector<transport::AllowedKey> keys;
  for (const std::string& file : files) {
    auto text = ReadWholeFile(file, 1 << 20);
    if (!text.ok()) {
      return InvalidArgumentError("allowed_keys_file: cannot read '" + file + "' (" +
                                  std::string(text.status().message()) + ")");
    }
    auto parsed = transport::ParseAllowedKeys(*text);
    if (!parsed.ok()) {
      return InvalidArgumentError("allowed_keys_file '" + file +
                                  "': " + std::string(parsed.status().message()));
    }
    for (transport::AllowedKey& key : *parsed) {
      for (const transport::AllowedKey& earlier : keys) {
        if (earlier.public_key == key.public_key) {
          return InvalidArgumentError("allowed_keys_file '" + file + "': the key " +
                                      key.public_key +
                                      " is listed twice (a key speaks for one member)");
        }
      }
      keys.push_back(std::move(key));
    }
  }
  if (keys.empty()) return InvalidArgumentError("allowed_keys_file '" + path + "': holds no key");
  return keys;
}

}  // namespace

StatusOr<std::string> ReadSecretFile(const std::string& path, const std::string& what) {
  auto text = ReadWholeFile(path, 64 * 1024);
  if (!text.ok()) {
    return InvalidArgumentError(what + ": cannot read it (" + std::string(text.status().message()) + ")");
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 &&
      ((st.st_mode & S_IRWXO) != 0 || ((st.st_mode & S_IRWXG) != 0 && !InOwnGroups(st.st_gid)))) {
    MURMUR_LOG_WARN("{}: '{}' can be read by other users (chmod 600 it)", what, path);
  }
  return text;
}

Status WriteSecretFile(const std::string& path, const std::string& text, bool overwrite) {
  if (!overwrite && ::access(path.c_str(), F_OK) == 0) {
    return InvalidArgumentError("'" + path + "' exists; refusing to replace a key (--force)");
  }
  return WriteFileAtomically(path, std::as_bytes(std::span(text.data(), text.size())), 0600);
}

StatusOr<transport::CurveOptions> LoadCurveOptions(const std::string& cluster_key_file,
                                                   const std::string& node_key_file,
                                                   const std::string& allowed_keys_file,
                                                   bool plaintext) {
  transport::CurveOptions curve;
  const bool any_key = !cluster_key_file.empty() || !node_key_file.empty() || !allowed_keys_file.empty();
  if (plaintext) {
    if (any_key) {
      return InvalidArgumentError("plaintext: cannot be combined with a key file (choose one)");
    }
    return curve;
  }
  if (cluster_key_file.empty()) {
    return InvalidArgumentError(
        "peer links need the cluster key: --cluster-key-file FILE (make one with `murmur keygen "
        "--out FILE`; env MURMUR_CLUSTER_KEY_FILE), or --plaintext for an unauthenticated "
        "experiment on a network you trust");
  }
  MURMUR_ASSIGN_OR_RETURN(std::string text, ReadSecretFile(cluster_key_file, "cluster_key_file"));
  auto cluster = transport::ParseKeyFile(text);
  if (!cluster.ok()) {
    return InvalidArgumentError("cluster_key_file '" + cluster_key_file +
                                "': " + std::string(cluster.status().message()));
  }
  curve.server = *cluster;
  curve.client = *cluster;
  if (!node_key_file.empty()) {
    MURMUR_ASSIGN_OR_RETURN(std::string node_text, ReadSecretFile(node_key_file, "node_key_file"));
    auto node = transport::ParseKeyFile(node_text);
    if (!node.ok()) {
      return InvalidArgumentError("node_key_file '" + node_key_file +
                                  "': " + std::string(node.status().message()));
    }
    curve.client = *node;
  }
  if (!allowed_keys_file.empty()) {
    MURMUR_ASSIGN_OR_RETURN(curve.allowed_clients, LoadAllowlist(allowed_keys_file));
    curve.only_allowed = true;
  } else if (!node_key_file.empty()) {
    return InvalidArgumentError("node_key_file: a node key is admitted only through an allowlist "
                                "(--allowed-keys-file listing every node's public key)");
  }
  return curve;
}

StatusOr<std::string> LoadAdminToken(const std::string& path) {
  MURMUR_ASSIGN_OR_RETURN(std::string text, ReadSecretFile(path, "admin_token_file"));
  std::string token = text.substr(0, text.find('\n'));
  while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
  if (token.size() < 16) {
    return InvalidArgumentError("admin_token_file '" + path +
                                "': the token must be at least 16 characters");
  }
  for (char c : token) {
    if (c < 0x21 || c > 0x7e) {
      return InvalidArgumentError("admin_token_file '" + path +
                                  "': the token must be printable ASCII without spaces");
    }
  }
  return token;
}

StatusOr<std::string> NewAdminToken() {
  std::array<unsigned char, 16> bytes{};
  std::ifstream random("/dev/urandom", std::ios::binary);
  if (!random.read(reinterpret_cast<char*>(bytes.data()), bytes.size())) {
    return UnavailableError("cannot read /dev/urandom");
  }
  std::string token;
  for (unsigned char b : bytes) {
    static constexpr char kHex[] = "0123456789abcdef";
    token += kHex[b >> 4];
    token += kHex[b & 15];
  }
  return token;
}

StatusOr<uint64_t> OwnIdentity(const transport::CurveOptions& curve, uint64_t id) {
  if (!curve.enabled()) return id;
  const std::optional<uint64_t> bound = curve.Admit(curve.client.public_key);
  if (!bound.has_value()) {
    return InvalidArgumentError("node_key_file: its public key " + curve.client.public_key +
                                " is not on the allowlist, so every peer would refuse this node");
  }
  if (*bound != 0 && id == 0) {
    MURMUR_LOG_INFO("node: member {}, the id the allowlist binds its key to", *bound);
    return *bound;
  }
  if (*bound != 0 && *bound != id) {
    return InvalidArgumentError("node_key_file: the allowlist binds its key to member " +
                                std::to_string(*bound) + ", not to this node's id " +
                                std::to_string(id) +
                                " (give each node the key of its own id, or no --id)");
  }
  if (!curve.identities_bound()) {
    MURMUR_LOG_WARN(
        "peer links: {} speak for any member, so a holder can pose as any other "
        "(bind a key to each member: `murmur keygen --node ID`, and an allowlist of "
        "\"ID KEY\" lines)",
        curve.only_allowed ? "allowlist keys without an id" : "the cluster key's holders");
  }
  return id;
}

}  // namespace murmur::node
