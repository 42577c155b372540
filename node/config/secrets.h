#pragma once
// Secrets a node reads at start: the CURVE keys of its peer links
// (gossip/transport/curve_keys.h) and the bearer token of its admin port. Each comes from a
// file — a path on the command line, in the environment (MURMUR_CLUSTER_KEY_FILE, ...) or in
// the TOML config; in Kubernetes a mounted Secret — never from the secret on the command line,
// where `ps` would show it. A file that cannot be read, or holds no valid secret, is a bad
// configuration (exit 2): a node never falls back to plaintext or to an open admin port.

#include <string>

#include "base/status.h"
#include "gossip/transport/curve_keys.h"

namespace murmur::node {

// The text of a secret file (at most 64 KiB). kInvalidArgument naming `what` and the path.
StatusOr<std::string> ReadSecretFile(const std::string& path, const std::string& what);
// Writes `text` to `path` with mode 0600 (no other user can read it), through a temporary file
// renamed into place. Refuses to replace an existing file unless `overwrite`.
Status WriteSecretFile(const std::string& path, const std::string& text, bool overwrite);

// The peer links' security from the three files (empty paths: not given). Plaintext (curve
// disabled) only when `plaintext` and no file is given; no file and no `plaintext` is refused
// with what to do, as is `plaintext` with a key.
StatusOr<transport::CurveOptions> LoadCurveOptions(const std::string& cluster_key_file,
                                                   const std::string& node_key_file,
                                                   const std::string& allowed_keys_file,
                                                   bool plaintext);

// `allowed_keys_file` is a file or a directory of files (a mounted Kubernetes Secret), each
// with "ID KEY" or "KEY" lines (transport::ParseAllowedKeys).
//
// This node's member id: `id`, or, when `id` is 0 (none given), the member the allowlist binds
// its key to (so a pod given its own key needs no id of its own); 0 when neither says.
// kInvalidArgument when this node's own client key would be refused by its peers (not on the
// allowlist) or is bound to another member than `id`. Logs a warning when members can speak for
// each other (the cluster key, or an allowlist line without an id). `id` for plaintext.
StatusOr<uint64_t> OwnIdentity(const transport::CurveOptions& curve, uint64_t id);

// The admin bearer token: the file's first line, at least 16 characters, printable ASCII.
StatusOr<std::string> LoadAdminToken(const std::string& path);
// A fresh random token (32 hex characters from /dev/urandom).
StatusOr<std::string> NewAdminToken();

}  // namespace murmur::node
