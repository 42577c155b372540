// One default per setting: `murmur node` with no flags builds the node a C++ caller gets from
// default-constructed options (GossipPeerOptions, gossip::GossipNodeOptions and their parts),
// key by key; and "was this key given" comes from the resolver's given-set, never from a
// comparison with the default. The model and optimizer keys embedded from `murmur train`'s table
// are not the node's (TrainSchema's own defaults, three of them set for clusters in one place).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "coding/compressor.h"
#include "gossip/outer_optimizer.h"
#include "gossip/peer_sampling.h"
#include "node/config/gossip_config.h"
#include "node/config/node_config.h"
#include "node/config/train_config.h"
#include "tests/testing/parse_args.h"

namespace murmur::node {
namespace {

std::string Number(double v) { return fmt::format("{}", v); }
std::string Seconds(Duration d) { return Number(std::chrono::duration<double>(d).count()); }
// An operator's full spec, as CompressorSpec writes it.
std::string Spec(std::string_view text) {
  return coding::CompressorSpec(*coding::ParseCompressorSpec(text));
}

// The options as the node's keys name them: what each key of GossipSchema set, read back from
// the struct it lands in (not from the schema).
std::map<std::string, std::string> KeyTexts(const GossipPeerOptions& o) {
  const gossip::GossipNodeOptions& n = o.node;
  const gossip::SoftSyncOptions& s = n.soft_sync;
  return {
      {"epochs", Number(o.epochs)},
      {"compress", coding::CompressorSpec(n.choco.compressor)},
      {"consensus_target", Number(n.consensus_target)},
      {"consensus_slack", std::to_string(n.consensus_slack)},
      {"outer", gossip::OuterSpec(n.outer)},
      {"gamma", Number(n.choco.gamma)},
      {"clip_fraction", Number(n.choco.clip_fraction)},
      {"topology", gossip::TopologyName(n.choco.sampling.topology)},
      {"random_peers", std::to_string(n.choco.sampling.random_peers)},
      {"local_steps", std::to_string(n.local_steps)},
      {"post_local_epoch", Number(n.post_local_epoch)},
      {"post_local_steps", std::to_string(n.post_local_steps)},
      {"max_lead", std::to_string(s.max_lead)},
      {"max_wait_ms",
       std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(s.max_wait).count())},
      {"max_wait_steps", Number(s.max_wait_steps)},
      {"straggler_hold_s", Seconds(s.straggler_hold)},
      {"staleness_scale", Number(s.staleness_scale)},
      {"target_accuracy", Number(n.target_accuracy)},
      {"time_limit_s", Seconds(n.time_limit)},
      {"finish_wait_s", Seconds(n.finish_wait)},
      {"eval_every", std::to_string(n.eval_every)},
      {"eval_samples", std::to_string(o.eval_samples)},
      {"straggle", StraggleSpec(o.straggler)},
      {"init", o.per_node_init ? "per-node" : "common"},
  };
}

// The keys GossipSchema declares itself (the rest are TrainSchema's).
std::set<std::string> NodeKeys() {
  std::set<std::string> train;
  for (const auto& key : TrainSchema().keys()) train.insert(key.name);
  std::set<std::string> out;
  for (const auto& key : GossipSchema().keys()) {
    if (!train.contains(key.name) || key.name == "epochs" || key.name == "compress") {
      out.insert(key.name);
    }
  }
  return out;
}

// `murmur node ARGS` with `env` as its whole environment.
StatusOr<NodeConfig> ParseNode(const std::vector<std::string>& args,
                               const std::map<std::string, std::string>& env = {}) {
  return murmur::testing::ParseArgs(NodeSchema(), args, env);
}

TEST(GossipDefaultsTest, MurmurNodeWithoutFlagsIsTheDefaultConstructedNode) {
  auto config = ParseNode({});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->gossip.given.empty());
  auto resolved = GossipOptionsFrom(config->gossip);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  const auto from_flags = KeyTexts(*resolved);
  const auto from_struct = KeyTexts(GossipPeerOptions{});
  // Every key of the node's table is read back here: a new key without a struct default fails.
  for (const std::string& key : NodeKeys()) {
    ASSERT_TRUE(from_struct.contains(key)) << key << " is not read back from the options";
    EXPECT_EQ(from_flags.at(key), from_struct.at(key)) << "two defaults for " << key;
  }
  EXPECT_EQ(from_flags.size(), NodeKeys().size());
  // What users run by default (the outer optimizer over int8 CHOCO), stated once.
  EXPECT_EQ(from_struct.at("outer"), "nesterov:every=80,lr=0.9,momentum=0.8,rounds=4");
  EXPECT_EQ(from_struct.at("compress"), Spec("int8"));
  // `--outer nesterov` is the default optimizer, not another one.
  auto bare = gossip::ParseOuterSpec("nesterov");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(gossip::OuterSpec(*bare), from_struct.at("outer"));
}

TEST(GossipDefaultsTest, ResolvedValuesAreTheOnesGiven) {
  // KeyTexts reads the options, not the schema: values away from every default show it.
  auto config = ParseNode({"--outer", "none", "--consensus-slack", "3", "--local-steps", "5",
                           "--finish-wait-s", "7.5", "--max-wait-steps", "9", "--topology",
                           "exponential", "--eval-samples", "123"});
  ASSERT_TRUE(config.ok()) << config.status();
  auto resolved = GossipOptionsFrom(config->gossip);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  const auto texts = KeyTexts(*resolved);
  EXPECT_EQ(texts.at("outer"), "none");
  EXPECT_EQ(texts.at("compress"), Spec("topk:0.01,values=fp16"));  // auto, no outer optimizer
  EXPECT_EQ(texts.at("consensus_slack"), "3");
  EXPECT_EQ(texts.at("local_steps"), "5");
  EXPECT_EQ(texts.at("finish_wait_s"), "7.5");
  EXPECT_EQ(texts.at("max_wait_steps"), "9");
  EXPECT_EQ(texts.at("topology"), "exponential");
  EXPECT_EQ(texts.at("eval_samples"), "123");
  EXPECT_EQ(config->gossip.given,
            (std::set<std::string>{"outer", "consensus_slack", "local_steps", "finish_wait_s",
                                   "max_wait_steps", "topology", "eval_samples"}));
}

TEST(GossipDefaultsTest, AGivenPlainRoundKeyIsRefusedUnderTheOuterOptimizerEvenAtItsDefault) {
  // Under the outer optimizer a round is every H steps: a plain-CHOCO round key has no effect,
  // so giving it is refused, whatever its value (the default's value included), from any source.
  const std::vector<std::pair<std::vector<std::string>, std::map<std::string, std::string>>>
      sources = {
          {{"--local-steps", "0"}, {}},
          {{"--consensus-slack", "8"}, {}},
          {{}, {{"MURMUR_CONSENSUS_TARGET", "0.04"}}},
          {{"--post-local-steps", "4"}, {}},
      };
  for (const auto& [args, env] : sources) {
    auto config = ParseNode(args, env);
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_EQ(config->gossip.given.size(), 1u);
    auto resolved = GossipOptionsFrom(config->gossip);
    ASSERT_FALSE(resolved.ok()) << (args.empty() ? env.begin()->first : args[0]);
    EXPECT_NE(resolved.status().message().find("under --outer"), std::string::npos)
        << resolved.status();
    // Without the outer optimizer the same key is taken.
    std::vector<std::string> plain = args;
    plain.insert(plain.end(), {"--outer", "none"});
    auto without = ParseNode(plain, env);
    ASSERT_TRUE(without.ok()) << without.status();
    EXPECT_TRUE(GossipOptionsFrom(without->gossip).ok());
  }
}

TEST(GossipDefaultsTest, TheBudgetRuleIsOneCheck) {
  auto config = ParseNode({"--epochs", "0"});
  ASSERT_TRUE(config.ok()) << config.status();
  auto resolved = GossipOptionsFrom(config->gossip);
  ASSERT_FALSE(resolved.ok());
  GossipPeerOptions built;
  built.epochs = 0;
  // The resolver and a C++ caller's options are refused by the same rule, in the same words.
  EXPECT_EQ(resolved.status().message(), built.CheckBudget().message());
  EXPECT_EQ(built.Validate().message(), built.CheckBudget().message());
  built.node.time_limit = std::chrono::seconds(5);
  EXPECT_TRUE(built.CheckBudget().ok());
}

}  // namespace
}  // namespace murmur::node
