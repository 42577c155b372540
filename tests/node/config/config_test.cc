#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "node/config/coded_config.h"
#include "node/config/gossip_config.h"
#include "node/config/train_config.h"
#include "tests/testing/parse_args.h"

namespace murmur::node {
namespace {

namespace fs = std::filesystem;

using murmur::testing::ParseArgs;

// `murmur train ...`.
class ConfigHarness {
 public:
  StatusOr<TrainConfig> Parse(const std::vector<std::string>& args,
                              const std::map<std::string, std::string>& env = {}) {
    return ParseArgs(TrainSchema(), args, env);
  }
};

std::string WriteToml(const std::string& text) {
  const fs::path path =
      fs::temp_directory_path() / ("murmur-config-" + std::to_string(::getpid()) + ".toml");
  std::ofstream(path) << text;
  return path.string();
}

TEST(ConfigTest, DefaultsAreTheEmbeddedJob) {
  ConfigHarness h;
  auto c = h.Parse({});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->task, "fashion-mnist");
  EXPECT_EQ(c->hidden, (std::vector<int64_t>{256, 128}));
  EXPECT_EQ(c->epochs, 3);
  EXPECT_EQ(c->batch_size, 64);
  EXPECT_FALSE(c->nesterov);
}

TEST(ConfigTest, PrecedenceIsFlagThenEnvThenFileThenDefault) {
  const std::string file =
      WriteToml("epochs = 7\nbatch_size = 16\nlr = 0.125\nhidden = [32, 16]\n");
  ConfigHarness h;
  auto c = h.Parse({"--config", file, "--epochs", "9"},
                   {{"MURMUR_EPOCHS", "8"}, {"MURMUR_BATCH_SIZE", "24"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->epochs, 9);         // flag beats env and file
  EXPECT_EQ(c->batch_size, 24);    // env beats file
  EXPECT_DOUBLE_EQ(c->lr, 0.125);  // file beats default
  EXPECT_EQ(c->hidden, (std::vector<int64_t>{32, 16}));
  EXPECT_DOUBLE_EQ(c->momentum, 0.9);  // default
  // The file can also come from MURMUR_CONFIG.
  auto via_env = h.Parse({}, {{"MURMUR_CONFIG", file}});
  ASSERT_TRUE(via_env.ok());
  EXPECT_EQ(via_env->epochs, 7);
  fs::remove(file);
}

TEST(ConfigTest, BooleanFlagsAcceptBareAndExplicitForms) {
  ConfigHarness h;
  EXPECT_TRUE(h.Parse({"--nesterov"})->nesterov);
  EXPECT_FALSE(h.Parse({"--nesterov=false"}, {{"MURMUR_NESTEROV", "true"}})->nesterov);
  EXPECT_TRUE(h.Parse({}, {{"MURMUR_NESTEROV", "yes"}})->nesterov);
}

TEST(ConfigTest, BadValuesNameKeyValueSourceAndWhatIsAllowed) {
  ConfigHarness h;
  auto flag = h.Parse({"--epochs", "abc"});
  EXPECT_EQ(flag.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(
      flag.status().message(),
      "invalid value 'abc' for epochs (from flag --epochs): expected an integer in [1, 100000]");
  auto env = h.Parse({}, {{"MURMUR_LR", "-1"}});
  EXPECT_NE(env.status().message().find("environment variable MURMUR_LR"), std::string_view::npos);
  auto choice = h.Parse({"--task", "cifar"});
  EXPECT_NE(choice.status().message().find("one of fashion-mnist, linear, logistic"),
            std::string_view::npos)
      << choice.status();
  auto list = h.Parse({"--hidden", "256,x"});
  EXPECT_EQ(list.status().code(), StatusCode::kInvalidArgument);
}

TEST(ConfigTest, FileErrorsAreClear) {
  ConfigHarness h;
  const std::string unknown = WriteToml("epochz = 3\n");
  auto u = h.Parse({"--config", unknown});
  EXPECT_NE(u.status().message().find("unknown key 'epochz'"), std::string_view::npos)
      << u.status();
  const std::string broken = WriteToml("epochs = = 3\n");
  auto b = h.Parse({"--config", broken});
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(b.status().message().find(":1:"), std::string_view::npos) << b.status();
  const std::string typed = WriteToml("epochs = 0\n");
  auto t = h.Parse({"--config", typed});
  EXPECT_NE(t.status().message().find("'epochs' in"), std::string_view::npos) << t.status();
  EXPECT_EQ(h.Parse({"--config", "/nonexistent.toml"}).status().code(), StatusCode::kNotFound);
  fs::remove(typed);
}

TEST(ConfigTest, CrossKeyValidation) {
  ConfigHarness h;
  EXPECT_EQ(ValidateTrainConfig(*h.Parse({"--shard-index", "2", "--shard-count", "2"})).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateTrainConfig(*h.Parse({"--nesterov", "--momentum", "0"})).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(ValidateTrainConfig(*h.Parse({"--shard-index", "1", "--shard-count", "2"})).ok());
  // Learning-rate schedules: a spec that does not parse is refused where it is parsed, naming
  // the key; a warm-up as long as the budget by the cross-key check.
  for (const char* bad : {"linear", "step", "cosine:final=2x", "cosine:", ""}) {
    const Status status = h.Parse({"--lr-schedule", bad}).status();
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(status.message().find("lr_schedule"), std::string_view::npos) << status;
  }
  const Status warmup = ValidateTrainConfig(*h.Parse({"--warmup-epochs", "3", "--epochs", "3"}));
  EXPECT_EQ(warmup.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(warmup.message().find("warmup_epochs"), std::string_view::npos) << warmup;
  // The parsed shape is what the trainer gets, with no text in between.
  const auto step = h.Parse({"--lr-schedule", "step:0.5,0.75,factor=0.2"});
  ASSERT_TRUE(step.ok()) << step.status();
  ASSERT_TRUE(step->lr_schedule.has_value());
  EXPECT_EQ(step->lr_schedule->kind, LrScheduleKind::kStep);
  EXPECT_EQ(step->lr_schedule->milestones, (std::vector<double>{0.5, 0.75}));
  EXPECT_EQ(TrainOptionsFrom(*step).lr_shape.factor, 0.2);
  EXPECT_TRUE(ValidateTrainConfig(
                  *h.Parse({"--lr-schedule", "step:0.5,0.75,factor=0.2", "--warmup-epochs", "0.5"}))
                  .ok());
}

// lr_schedule auto is resolved in one place (ResolveAutoSchedule): cosine with a short warm-up
// for gossip with an epoch budget, constant for gossip without one and for every other mode.
TEST(ConfigTest, AutoScheduleIsCosineForAGossipEpochBudgetAndConstantElsewhere) {
  auto parse = [](const std::vector<std::string>& args) { return ParseArgs(GossipSchema(), args); };
  auto shape = [&](const std::vector<std::string>& args) {
    auto config = parse(args);
    EXPECT_TRUE(config.ok()) << config.status();
    auto options = GossipOptionsFrom(*config);
    EXPECT_TRUE(options.ok()) << options.status();
    return std::make_pair(options->train.lr_shape.kind, options->train.warmup_epochs);
  };
  EXPECT_EQ(shape({}), std::make_pair(LrScheduleKind::kCosine, 0.2));
  EXPECT_EQ(shape({"--epochs", "1.5"}), std::make_pair(LrScheduleKind::kCosine, 0.1));
  EXPECT_EQ(shape({"--warmup-epochs", "0.5"}), std::make_pair(LrScheduleKind::kCosine, 0.5));
  EXPECT_EQ(shape({"--epochs", "0", "--time-limit-s", "5"}),
            std::make_pair(LrScheduleKind::kConstant, 0.0));
  EXPECT_EQ(shape({"--lr-schedule", "constant"}), std::make_pair(LrScheduleKind::kConstant, 0.0));
  // The synchronous modes read the same keys through TrainOptionsFrom: auto is constant there.
  auto defaults = parse({});
  ASSERT_TRUE(defaults.ok());
  EXPECT_FALSE(defaults->train.lr_schedule.has_value());  // auto, as given
  EXPECT_EQ(TrainOptionsFrom(defaults->train).lr_shape.kind, LrScheduleKind::kConstant);
  EXPECT_EQ(TrainOptionsFrom(defaults->train).warmup_epochs, 0);
}

// The cluster modes' optimizer defaults (bench/results/2026-11-28-history.md, "Gossip against exact
// all-reduce"): Nesterov, and consensus control's target 0.04; murmur train keeps heavy ball.
TEST(ConfigTest, ClusterModesDefaultToNesterovAndSayWhatMomentumZeroNeeds) {
  auto parse = [](const std::vector<std::string>& args) { return ParseArgs(GossipSchema(), args); };
  const CodedConfig ring_of_two{.n = 2, .L = 1, .s = 0};
  auto defaults = parse({});
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  auto gossip = GossipOptionsFrom(*defaults);
  ASSERT_TRUE(gossip.ok()) << gossip.status();
  EXPECT_TRUE(gossip->train.sgd.nesterov);
  EXPECT_EQ(gossip->train.sgd.momentum, 0.9);
  EXPECT_EQ(gossip->node.consensus_target, 0.04);
  auto ring = CodedOptionsFrom(gossip::Mode::kRing, ring_of_two, *defaults);
  ASSERT_TRUE(ring.ok()) << ring.status();
  EXPECT_TRUE(ring->node.nesterov);

  auto no_momentum = parse({"--momentum", "0"});
  ASSERT_TRUE(no_momentum.ok());
  const Status refused = GossipOptionsFrom(*no_momentum).status();
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("with --momentum 0 pass --nesterov=false"),
            std::string_view::npos)
      << refused;
  const Status ring_refused =
      CodedOptionsFrom(gossip::Mode::kRing, ring_of_two, *no_momentum).status();
  EXPECT_EQ(ring_refused.code(), StatusCode::kInvalidArgument) << ring_refused;
  EXPECT_EQ(ring_refused.message(), refused.message());

  auto heavy_ball = parse({"--momentum", "0", "--nesterov=false"});
  ASSERT_TRUE(heavy_ball.ok());
  auto plain = GossipOptionsFrom(*heavy_ball);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE(plain->train.sgd.nesterov);

  ConfigHarness h;
  EXPECT_FALSE(h.Parse({})->nesterov);  // murmur train: PyTorch's heavy ball
}

// Gossip's defaults: the outer optimizer over int8 CHOCO rounds; --outer none is CHOCO with
// top-1 %. Under the outer optimizer, a key of CHOCO's own rounds set to anything but its
// default is refused (it would be ignored); the defaults themselves pass.
TEST(ConfigTest, GossipDefaultsToTheOuterOptimizerAndRefusesChocoRoundKeysUnderIt) {
  auto parse = [](const std::vector<std::string>& args) { return ParseArgs(GossipSchema(), args); };
  auto defaults = parse({});
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  auto outer = GossipOptionsFrom(*defaults);
  ASSERT_TRUE(outer.ok()) << outer.status();
  ASSERT_TRUE(outer->node.outer.has_value());
  EXPECT_EQ(outer->node.outer->every, 80);
  EXPECT_DOUBLE_EQ(outer->node.outer->lr, 0.9);
  EXPECT_DOUBLE_EQ(outer->node.outer->momentum, 0.8);
  EXPECT_EQ(outer->node.outer->rounds, 4);
  EXPECT_EQ(coding::CompressorSpec(outer->node.choco.compressor),
            coding::CompressorSpec(*coding::ParseCompressorSpec("int8")));
  auto choco = GossipOptionsFrom(*parse({"--outer", "none"}));
  ASSERT_TRUE(choco.ok()) << choco.status();
  EXPECT_FALSE(choco->node.outer.has_value());
  EXPECT_EQ(coding::CompressorSpec(choco->node.choco.compressor),
            coding::CompressorSpec(*coding::ParseCompressorSpec("topk:0.01,values=fp16")));
  auto given = GossipOptionsFrom(*parse({"--compress", "fp16"}));
  ASSERT_TRUE(given.ok());
  EXPECT_EQ(coding::CompressorSpec(given->node.choco.compressor),
            coding::CompressorSpec(*coding::ParseCompressorSpec("fp16")));
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--local-steps", "4"},
                                               {"--post-local-epoch", "1"},
                                               {"--consensus-target", "0.1"},
                                               {"--consensus-slack", "2"}}) {
    const Status refused = GossipOptionsFrom(*parse(args)).status();
    EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << args[0];
    EXPECT_NE(refused.message().find("(--outer none)"), std::string_view::npos) << refused;
    std::vector<std::string> with_none = args;
    with_none.insert(with_none.end(), {"--outer", "none"});
    EXPECT_TRUE(GossipOptionsFrom(*parse(with_none)).ok()) << args[0];
  }
  auto bad = parse({"--outer", "nesterov:every=0"});
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("every=0 (at least 1)"), std::string_view::npos)
      << bad.status();
}

TEST(ConfigTest, EveryKeyHasAValidDefaultAndHelp) {
  for (const auto& key : TrainSchema().keys()) {
    TrainConfig c;
    EXPECT_TRUE(key.set(key.default_text, c).ok()) << key.name;
    EXPECT_FALSE(key.help.empty()) << key.name;
    EXPECT_EQ(EnvName(key.name).rfind("MURMUR_", 0), 0u);
  }
  EXPECT_EQ(FlagName("batch_size"), "--batch-size");
  EXPECT_EQ(EnvName("batch_size"), "MURMUR_BATCH_SIZE");
}

}  // namespace
}  // namespace murmur::node
