// Writes the seed corpora under DIR/<target>/ (run once; the files are in the repository):
// well-formed inputs of every kind a target parses, so the fuzzer starts from the real formats.
// Usage: fuzz_make_corpus DIR
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "coding/compressor.h"
#include "coding/update_codec.h"
#include "gossip/envelope.h"
#include "node/train/checkpoint.h"
#include "proto/envelope_codec.h"

namespace {

using namespace murmur;
namespace fs = std::filesystem;

void Write(const fs::path& dir, const std::string& name, const void* data, size_t size) {
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary).write(static_cast<const char*>(data),
                                                     static_cast<std::streamsize>(size));
}
void WriteText(const fs::path& dir, const std::string& name, const std::string& text) {
  Write(dir, name, text.data(), text.size());
}

gossip::MemberEntry Entry(uint64_t id, gossip::MemberState state) {
  return {id, "tcp://10.0.0." + std::to_string(id) + ":7070", id * 3, state, id * 100, id * 7,
          id * 64, id % 2 == 1};
}

std::vector<std::string> Envelopes() {
  using gossip::MemberState;
  std::vector<gossip::MemberEntry> members = {Entry(2, MemberState::kAlive), Entry(3, MemberState::kSuspect),
                                              Entry(4, MemberState::kDead), Entry(5, MemberState::kLeft)};
  const std::vector<gossip::Payload> payloads = {
      gossip::NoPayload{},
      gossip::Heartbeat{41},
      gossip::Ping{17, members},
      gossip::Ack{18, {members[0]}},
      gossip::PingReq{19, 42, "tcp://10.0.0.9:7070", members},
      gossip::Join{Entry(9, MemberState::kAlive)},
      gossip::Digest{members, true},
      gossip::Leave{},
      gossip::UpdateHeader{5, 6, 7850, true, true, 0.0375f},
      gossip::SnapshotRequest{77, true},
      gossip::SnapshotRequest{12, false, true},
      gossip::SnapshotReply{8, 1000, true},
      gossip::CodedMessage{gossip::CodedMessage::Kind::kPartialGradient, 11, 4, 3000},
      gossip::FinishMessage{gossip::FinishMessage::Kind::kResult, 3000, 7, 5},
      gossip::FinishMessage{gossip::FinishMessage::Kind::kReceipt, 3000, 7, 5}};
  std::vector<std::string> out;
  for (const auto& payload : payloads) {
    gossip::Envelope e;
    e.cluster_id = "murmur";
    e.sender_id = 9;
    e.incarnation = 3;
    e.step_clock = 12345;
    e.sequence = 99;
    e.payload = payload;
    e.payload_frames = gossip::RequiredPayloadFrames(payload);
    out.push_back(proto::EncodeEnvelope(e));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_corpus DIR\n");
    return 2;
  }
  const fs::path root(argv[1]);
  const auto envelopes = Envelopes();
  for (size_t i = 0; i < envelopes.size(); ++i) {
    Write(root / "envelope", "kind-" + std::to_string(i), envelopes[i].data(), envelopes[i].size());
    // Membership: a Join, then the same kind of message twice (2-byte length prefixes).
    std::string seq;
    for (const std::string* m : {&envelopes[5], &envelopes[i], &envelopes[i]}) {
      const uint16_t n = static_cast<uint16_t>(m->size());
      seq.append(reinterpret_cast<const char*>(&n), 2).append(*m);
    }
    WriteText(root / "membership", "join-then-" + std::to_string(i), seq);
  }
  // Updates of every operator at a small dimension (the 4-byte prefix is the dimension).
  std::mt19937_64 rng(1);
  std::normal_distribution<float> normal;
  const uint32_t dimension = 300;
  std::vector<float> x(dimension);
  for (float& v : x) v = normal(rng);
  int n = 0;
  for (const char* spec : {"none", "fp16", "int8", "topk:0.1", "topk:0.1,values=fp16", "dgc:0.1",
                           "threshold:0.5", "onebit:0.5", "qsgd:4", "topk:1"}) {
    auto options = coding::ParseCompressorSpec(spec);
    auto compressor = coding::Compressor::Create(*options, dimension);
    if (!compressor.ok()) continue;
    coding::Update u;
    if (!compressor->Compress(x, u).ok()) continue;
    std::vector<std::byte> bytes;
    coding::EncodeUpdate(u, bytes);
    std::string input(reinterpret_cast<const char*>(&dimension), 4);
    input.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    WriteText(root / "update", "op-" + std::to_string(n++), input);
  }
  // Checkpoints: a saved model and a node's checkpoint in miniature.
  node::Checkpoint model;
  model.text = {{"kind", "model"}, {"model", "4-2 softmax-ce"}};
  model.tensors["params"] = {0.5f, -1, 2, 0, 1e-3f, 7, -0.0f, 3, 1, 1};
  const auto model_bytes = node::EncodeCheckpoint(model);
  Write(root / "checkpoint", "model", model_bytes.data(), model_bytes.size());
  node::Checkpoint c = model;
  c.text["kind"] = "gossip-node";
  c.text["rng"] = "12 34 56";
  c.numbers = {{"step", 120}, {"samples", 7680}, {"node_id", 3}};
  c.tensors["velocity"] = {0, 0, 1, 1};
  c.indices["order"] = {3, 1, 2, 0};
  const auto node_bytes = node::EncodeCheckpoint(c);
  Write(root / "checkpoint", "node", node_bytes.data(), node_bytes.size());
  // Admin bodies, seed lists and configuration files as people write them.
  int k = 0;
  for (const char* body : {R"({"slowdown": 4, "for": "60s"})", R"({"spec": "delay=20ms,drop=0.1"})",
                           R"({"pause": "100..200", "seed": 7})", R"({"exp": "200ms", "exp_slowdown": 3})",
                           R"({"send_delay": 0.02, "drop": 0.5})", R"({})"}) {
    WriteText(root / "admin_json", "body-" + std::to_string(k++), body);
  }
  k = 0;
  for (const char* seeds : {"10.0.0.1:7000", "a:1, b:2", "tcp://host:7000,ipc:///tmp/x.sock",
                            "murmur-0.murmur.default.svc.cluster.local:7000", "[::1]:7000", ""}) {
    WriteText(root / "seeds", "list-" + std::to_string(k++), seeds);
  }
  WriteText(root / "config", "gossip.toml",
            "mode = \"gossip\"\nlisten = \"tcp://0.0.0.0:7000\"\nadvertise = \"tcp://10.0.0.1:7000\"\n"
            "seeds = \"10.0.0.2:7000\"\nepochs = 3.5\ncompress = \"topk:0.01,values=fp16\"\n"
            "hidden = [256, 128]\nlr = 0.05\nnesterov = true\nstraggle = \"slowdown=4\"\n");
  WriteText(root / "config", "coded.toml",
            "mode = \"coded-tree\"\nn = 3\nL = 2\ns = 1\ntask = \"logistic\"\nsamples = 1000\n"
            "features = 10\nstraggle = \"node=2,delay=100ms\"\n");
  std::printf("corpora written under %s\n", root.c_str());
  return 0;
}
