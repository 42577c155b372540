#include "gossip/transport/curve_keys.h"

#include <zmq.h>

#include <algorithm>
#include <array>
#include <cstdint>

#include "base/spec.h"

namespace murmur::transport {
namespace {

constexpr size_t kZ85KeyLength = 40;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Calls `line(number, text)` for every non-blank, non-comment line; stops at the first error.
template <typename F>
Status ForEachLine(std::string_view text, F line) {
  size_t number = 0;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view l = Trim(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++number;
    if (l.empty() || l.front() == '#') continue;
    MURMUR_RETURN_IF_ERROR(line(number, l));
  }
  return OkStatus();
}

}  // namespace

Status ValidateCurveKey(std::string_view key, std::string_view what) {
  if (key.size() != kZ85KeyLength) {
    return InvalidArgumentError(std::string(what) + " must be 40 Z85 characters (got " +
                                std::to_string(key.size()) + ")");
  }
  std::array<uint8_t, 32> bytes{};
  const std::string copy(key);
  if (zmq_z85_decode(bytes.data(), copy.c_str()) == nullptr) {
    return InvalidArgumentError(std::string(what) + " is not valid Z85");
  }
  return OkStatus();
}

StatusOr<CurveKeyPair> GenerateCurveKeyPair() {
  std::array<char, kZ85KeyLength + 1> pub{}, sec{};
  if (zmq_curve_keypair(pub.data(), sec.data()) != 0) {
    return UnavailableError("CURVE is not available in this ZeroMQ build (needs libsodium)");
  }
  return CurveKeyPair{pub.data(), sec.data()};
}

StatusOr<std::string> CurvePublicKey(std::string_view secret_key) {
  MURMUR_RETURN_IF_ERROR(ValidateCurveKey(secret_key, "the secret key"));
  std::array<char, kZ85KeyLength + 1> pub{};
  const std::string copy(secret_key);
  if (zmq_curve_public(pub.data(), copy.c_str()) != 0) {
    return UnavailableError("CURVE is not available in this ZeroMQ build (needs libsodium)");
  }
  return std::string(pub.data());
}

std::string FormatKeyFile(const CurveKeyPair& pair) {
  return "# murmur CURVE keypair: keep the secret key secret (mode 0600)\n"
         "public-key = " + pair.public_key + "\nsecret-key = " + pair.secret_key + "\n";
}

StatusOr<CurveKeyPair> ParseKeyFile(std::string_view text) {
  CurveKeyPair pair;
  Status s = ForEachLine(text, [&](size_t number, std::string_view l) {
    const size_t eq = l.find('=');
    if (eq == std::string_view::npos) {
      return InvalidArgumentError("line " + std::to_string(number) +
                                  ": expected 'public-key = ...' or 'secret-key = ...'");
    }
    const std::string_view name = Trim(l.substr(0, eq));
    const std::string_view value = Trim(l.substr(eq + 1));
    if (name == "public-key") {
      pair.public_key = value;
    } else if (name == "secret-key") {
      pair.secret_key = value;
    } else {
      return InvalidArgumentError("line " + std::to_string(number) + ": unknown name '" +
                                  std::string(name) + "' (public-key, secret-key)");
    }
    return OkStatus();
  });
  MURMUR_RETURN_IF_ERROR(s);
  if (pair.secret_key.empty()) return InvalidArgumentError("no 'secret-key = ...' line");
  MURMUR_ASSIGN_OR_RETURN(std::string derived, CurvePublicKey(pair.secret_key));
  if (!pair.public_key.empty() && pair.public_key != derived) {
    return InvalidArgumentError("the public key does not belong to the secret key");
  }
  pair.public_key = derived;
  return pair;
}

StatusOr<std::vector<AllowedKey>> ParseAllowedKeys(std::string_view text) {
  std::vector<AllowedKey> keys;
  Status s = ForEachLine(text, [&](size_t number, std::string_view l) {
    const std::string where = "line " + std::to_string(number);
    AllowedKey key;
    std::string_view k = l;
    if (const size_t space = l.find_first_of(" \t"); space != std::string_view::npos) {
      MURMUR_ASSIGN_OR_RETURN(const uint64_t id,
                              ParseNumber<uint64_t>(l.substr(0, space), where + ": the member id"));
      if (id == 0) return InvalidArgumentError(where + ": member ids start at 1");
      key.member = id;
      k = Trim(l.substr(space + 1));
    }
    MURMUR_RETURN_IF_ERROR(ValidateCurveKey(k, where));
    key.public_key = k;
    for (const AllowedKey& earlier : keys) {
      if (earlier.public_key == key.public_key) {
        return InvalidArgumentError(where +
                                    ": the key is listed twice (a key speaks for one member)");
      }
    }
    keys.push_back(std::move(key));
    return OkStatus();
  });
  MURMUR_RETURN_IF_ERROR(s);
  if (keys.empty()) return InvalidArgumentError("the allowlist holds no key");
  return keys;
}

bool CurveOptions::identities_bound() const {
  return enabled() && only_allowed &&
         std::all_of(allowed_clients.begin(), allowed_clients.end(),
                     [](const AllowedKey& k) { return k.member.has_value(); });
}

std::optional<uint64_t> CurveOptions::Admit(std::string_view public_key) const {
  for (const AllowedKey& k : allowed_clients) {
    if (k.public_key == public_key) return k.member.value_or(0);
  }
  if (!only_allowed && public_key == server.public_key) return 0;
  return std::nullopt;
}

}  // namespace murmur::transport
