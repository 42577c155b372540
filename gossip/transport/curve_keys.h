#pragma once
// CURVE keys (ZeroMQ RFC 26, CurveZMQ) for authenticated, encrypted peer links, in ZeroMQ's
// Z85 text form (40 characters for 32 bytes).
//
// How a cluster uses them (DESIGN.md "Security"): every node serves with the *cluster* keypair,
// so a node can dial any peer knowing only its address; as a client it presents the cluster
// keypair too, or its own node keypair when the cluster admits an allowlist of node keys. The
// transport's ZAP handler admits a client only if its public key is the cluster's or on the
// allowlist; everything else is refused at the handshake and counted.
//
// A key file (what `murmur keygen` writes, mode 0600):
//   # murmur CURVE keypair
//   public-key = <40 Z85 characters>
//   secret-key = <40 Z85 characters>
// An allowlist file: one Z85 public key per line; blank lines and '#' comments are skipped.

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace murmur::transport {

struct CurveKeyPair {
  std::string public_key;  // Z85
  std::string secret_key;  // Z85
};

// What a transport needs to run CURVE; disabled (plaintext) when server_secret is empty.
struct CurveOptions {
  CurveKeyPair server;  // the cluster keypair
  CurveKeyPair client;  // this node as a client: the cluster keypair or its own
  // Client public keys the ZAP handler admits besides the cluster's; with `only_allowed`, the
  // cluster's own public key is not admitted as a client (node keys only).
  std::vector<std::string> allowed_clients;
  bool only_allowed = false;
  bool enabled() const { return !server.secret_key.empty(); }
};

// A fresh keypair from libsodium's randomness (through ZeroMQ).
StatusOr<CurveKeyPair> GenerateCurveKeyPair();
// The public key of a Z85 secret key; kInvalidArgument when it is not 40 Z85 characters.
StatusOr<std::string> CurvePublicKey(std::string_view secret_key);
// kInvalidArgument unless `key` is 40 characters of Z85 that decode.
Status ValidateCurveKey(std::string_view key, std::string_view what);

// The key file text for `pair`.
std::string FormatKeyFile(const CurveKeyPair& pair);
// Parses a key file; the secret key is required, a public key (if present) must match it.
// kInvalidArgument saying what is wrong (never echoing the secret).
StatusOr<CurveKeyPair> ParseKeyFile(std::string_view text);
// Parses an allowlist file.
StatusOr<std::vector<std::string>> ParseAllowedKeys(std::string_view text);

}  // namespace murmur::transport
