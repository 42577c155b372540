#pragma once
// CURVE keys (ZeroMQ RFC 26, CurveZMQ) for authenticated, encrypted peer links, in ZeroMQ's
// Z85 text form (40 characters for 32 bytes).
//
// How a cluster uses them (docs/security.md): every node serves with the *cluster* keypair,
// so a node can dial any peer knowing only its address; as a client it presents the cluster
// keypair too, or its own node keypair when the cluster admits an allowlist of node keys. The
// transport's ZAP handler admits a client only if its public key is the cluster's or on the
// allowlist; everything else is refused at the handshake and counted.
//
// Identity: an allowlist line "ID KEY" binds the key to member ID. The ZAP handler hands the
// bound id to ZeroMQ as the connection's User-Id (RFC 27), and every message received over that
// connection carries it (Message::speaker), so the node above can refuse a message whose
// envelope names another sender. The cluster key, and an allowlist line without an id, speak
// for any member: every holder can pose as every other.
//
// A key file (what `murmur keygen` writes, mode 0600):
//   # murmur CURVE keypair
//   public-key = <40 Z85 characters>
//   secret-key = <40 Z85 characters>
// An allowlist file: one public key per line, "ID KEY" (bound to member ID) or "KEY" (unbound);
// blank lines and '#' comments are skipped.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace murmur::transport {

struct CurveKeyPair {
  std::string public_key;  // Z85
  std::string secret_key;  // Z85
};

// A client key the ZAP handler admits, and the one member it may speak for (none: any).
struct AllowedKey {
  std::string public_key;  // Z85
  std::optional<uint64_t> member;
  bool operator==(const AllowedKey&) const = default;
};

// What a transport needs to run CURVE; disabled (plaintext) when server_secret is empty.
struct CurveOptions {
  CurveKeyPair server;  // the cluster keypair
  CurveKeyPair client;  // this node as a client: the cluster keypair or its own
  // Client public keys the ZAP handler admits besides the cluster's; with `only_allowed`, the
  // cluster's own public key is not admitted as a client (node keys only).
  std::vector<AllowedKey> allowed_clients;
  bool only_allowed = false;
  bool enabled() const { return !server.secret_key.empty(); }
  // True when every admitted client key is bound to one member: no member can speak for
  // another. False for plaintext, the cluster key, or an allowlist line without an id.
  bool identities_bound() const;
  // The admitted client key `public_key` (Z85): nullopt when it is not admitted; otherwise the
  // member it is bound to, or 0 when it speaks for any member.
  std::optional<uint64_t> Admit(std::string_view public_key) const;
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
// Parses an allowlist file. A key listed twice is refused (it would be bound twice); one member
// may have several keys (rotation). Ids start at 1.
StatusOr<std::vector<AllowedKey>> ParseAllowedKeys(std::string_view text);

}  // namespace murmur::transport
