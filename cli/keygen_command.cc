// `murmur keygen`: a CURVE keypair for a cluster (or for one node of an allowlist).

#include <cstdint>
#include <cstdio>

#include "cli/command.h"
#include "gossip/transport/curve_keys.h"
#include "node/config/secrets.h"

namespace murmur::node {
namespace {

class KeygenCommand : public Command {
 public:
  explicit KeygenCommand(CLI::App& app)
      : Command(app, "keygen",
                "Make a CURVE keypair: the cluster key every node of a cluster is given "
                "(--cluster-key-file), or a node key for an allowlist") {
    subcommand()
        ->add_option("--out", out_, "file to write (mode 0600); the public key is printed")
        ->required();
    subcommand()
        ->add_option("--node", node_,
                     "a key for member ID: prints its allowlist line \"ID KEY\", which binds the "
                     "key to that member (--allowed-keys-file), so it speaks for no other")
        ->check(CLI::Range(uint64_t{1}, UINT64_MAX));
    subcommand()->add_flag("--force", force_, "replace an existing file");
  }

  int Run() override {
    auto pair = transport::GenerateCurveKeyPair();
    if (!pair.ok()) {
      std::fprintf(stderr, "murmur keygen: %s\n", pair.status().ToString().c_str());
      return 1;
    }
    if (Status s = WriteSecretFile(out_, transport::FormatKeyFile(*pair), force_); !s.ok()) {
      std::fprintf(stderr, "murmur keygen: %s\n", std::string(s.message()).c_str());
      return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
    }
    if (node_ != 0) {
      std::printf("%llu %s\n", static_cast<unsigned long long>(node_), pair->public_key.c_str());
      std::fprintf(stderr,
                   "murmur keygen: wrote %s (mode 0600), the key of member %llu (--id %llu "
                   "--node-key-file %s); the line above goes into every node's allowlist\n",
                   out_.c_str(), static_cast<unsigned long long>(node_),
                   static_cast<unsigned long long>(node_), out_.c_str());
      return 0;
    }
    std::printf("%s\n", pair->public_key.c_str());
    std::fprintf(stderr, "murmur keygen: wrote %s (mode 0600); the line above is its public key\n",
                 out_.c_str());
    return 0;
  }

 private:
  std::string out_;
  uint64_t node_ = 0;
  bool force_ = false;
};

}  // namespace

std::unique_ptr<Command> MakeKeygenCommand(CLI::App& app) {
  return std::make_unique<KeygenCommand>(app);
}

}  // namespace murmur::node
