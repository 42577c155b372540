// PeerOptionsFromKeys, the library's one reader of text: every key through `murmur node`'s own
// parsers into typed options, the launcher's document (as `murmur local --exec` writes it) read
// back through the node schema, and the typed Start's own refusals.

#include "api/peer_options.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "api/peer.h"
#include "coding/compressor.h"
#include "node/config/node_config.h"

namespace murmur::api {
namespace {

using Keys = std::map<std::string, std::string>;

const KeyContext kPlain{.evaluate = false, .state_hooks = false, .launcher_environment = false};
const KeyContext kEvaluate{.evaluate = true, .state_hooks = false, .launcher_environment = false};
const KeyContext kStateHooks{.evaluate = false, .state_hooks = true, .launcher_environment = false};

Hooks NoEnvironment() {
  Hooks hooks;
  hooks.launcher_environment = false;
  return hooks;
}

// The launcher's environment for one test, removed after it: the node's keys as the document
// `murmur local --exec` writes (the node schema's writer), or a document's raw text.
class LauncherEnvironment {
 public:
  explicit LauncherEnvironment(const std::map<std::string, std::string>& keys,
                               const char* device = nullptr)
      : LauncherEnvironment(node::NodeSchema().Document(keys), device) {}
  explicit LauncherEnvironment(const std::string& document, const char* device = nullptr)
      : path_(std::filesystem::temp_directory_path() /
              ("murmur-launcher-" + std::to_string(::getpid()) + ".toml")) {
    std::ofstream(path_) << document;
    setenv("MURMUR_PEER_CONFIG", path_.c_str(), 1);
    if (device != nullptr) setenv("MURMUR_DEVICE", device, 1);
  }
  ~LauncherEnvironment() {
    unsetenv("MURMUR_PEER_CONFIG");
    unsetenv("MURMUR_DEVICE");
    std::filesystem::remove(path_);
  }

 private:
  std::filesystem::path path_;
};

// Keys every test peer needs to resolve: plaintext links and a budget (unless given).
Keys With(Keys keys) {
  keys.insert({"plaintext", "true"});
  if (keys.count("epochs") == 0) keys.insert({"time_limit_s", "5"});
  return keys;
}

void ExpectRefused(const StatusOr<PeerOptions>& o, const std::string& words) {
  ASSERT_FALSE(o.ok()) << "accepted; expected a refusal with: " << words;
  EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument) << o.status();
  EXPECT_NE(o.status().message().find(words), std::string_view::npos) << o.status();
}

TEST(PeerOptionsTest, DefaultsAreALibraryPeersAndKeysArriveAsTypes) {
  auto d = PeerOptionsFromKeys(With({}), kPlain);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->gossip.peer.listen, "tcp://127.0.0.1:0");
  EXPECT_FALSE(d->gossip.peer.transport.curve.enabled());
  EXPECT_EQ(d->gossip.epochs, 0);
  EXPECT_EQ(d->gossip.node.eval_every, 0);
  EXPECT_EQ(d->gossip.train.lr_shape.kind, LrScheduleKind::kConstant);
  EXPECT_EQ(d->device, kernels::Device::Cpu());
  EXPECT_FALSE(d->gossip.schedule_rate);
  EXPECT_FALSE(d->gossip.same_init);

  auto o = PeerOptionsFromKeys(With({{"compress", "int8"},
                                     {"epochs", "2"},
                                     {"epoch_samples", "600"},
                                     {"shard_samples", "150"},
                                     {"same_init", "true"},
                                     {"join_timeout_s", "1.5"},
                                     {"lr", "0.1"},
                                     {"lr_schedule", "step:0.5,factor=0.5"},
                                     {"device", "cpu"}}),
                               kPlain);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->gossip.node.choco.compressor.op, coding::Operator::kInt8);
  EXPECT_EQ(o->gossip.epochs, 2);
  EXPECT_EQ(o->gossip.epoch_samples, 600);
  EXPECT_EQ(o->gossip.shard_samples, 150);
  EXPECT_TRUE(o->gossip.same_init);
  EXPECT_EQ(o->gossip.join_timeout, std::chrono::milliseconds(1500));
  EXPECT_TRUE(o->gossip.schedule_rate);
  EXPECT_EQ(o->gossip.train.sgd.learning_rate, 0.1);
  EXPECT_EQ(o->gossip.train.lr_shape.kind, LrScheduleKind::kStep);
  EXPECT_EQ(o->gossip.train.lr_shape.factor, 0.5);
}

TEST(PeerOptionsTest, EveryRefusalNamesTheKey) {
  ExpectRefused(PeerOptionsFromKeys(With({{"bogus", "1"}}), kPlain), "unknown key 'bogus' (known:");
  // A near miss names the key meant.
  ExpectRefused(PeerOptionsFromKeys(With({{"epoch", "1"}}), kPlain),
                "unknown key 'epoch': did you mean 'epochs'?");
  ExpectRefused(PeerOptionsFromKeys(With({{"compress", "topk:2"}}), kPlain), "compress: 'topk:2'");
  ExpectRefused(PeerOptionsFromKeys(With({{"lr_schedule", "linear"}, {"lr", "0.1"}}), kPlain),
                "lr_schedule: 'linear'");
  ExpectRefused(PeerOptionsFromKeys(With({{"epoch_samples", "0"}}), kPlain), "epoch_samples: '0'");
  ExpectRefused(PeerOptionsFromKeys(With({{"same_init", "maybe"}}), kPlain), "same_init: 'maybe'");
  ExpectRefused(PeerOptionsFromKeys(With({{"join_timeout_s", "-1"}}), kPlain),
                "join_timeout_s: '-1'");
  ExpectRefused(PeerOptionsFromKeys(With({{"device", "gpu"}}), kPlain), "device: device 'gpu'");
  ExpectRefused(PeerOptionsFromKeys(With({{"device", "auto"}}), kPlain), "the buffer is where");
  // Keys of murmur's own model and data, and keys that need what the caller did not give.
  ExpectRefused(PeerOptionsFromKeys(With({{"hidden", "32"}}), kPlain), "does not apply");
  ExpectRefused(PeerOptionsFromKeys(With({{"eval_every", "10"}}), kPlain), "needs an evaluation");
  ExpectRefused(PeerOptionsFromKeys(With({{"checkpoint_dir", "/tmp"}}), kPlain), "save_state");
  EXPECT_TRUE(PeerOptionsFromKeys(With({{"eval_every", "10"}}), kEvaluate).ok());
  ExpectRefused(PeerOptionsFromKeys(With({{"checkpoint_every", "5"}}), kStateHooks),
                "without checkpoint_dir");
  // The rate: a schedule needs its base rate, and a base rate without a schedule does nothing.
  ExpectRefused(PeerOptionsFromKeys(With({{"lr_schedule", "cosine"}}), kPlain), "needs lr");
  ExpectRefused(PeerOptionsFromKeys(With({{"lr", "0.1"}}), kPlain), "keeps its own rate");
}

TEST(PeerOptionsTest, TheLaunchersDocumentGoesThroughTheNodesParsersAndItsFlagsWin) {
  {
    LauncherEnvironment env(Keys{{"mode", "gossip"},
                                 {"max_lead", "4"},
                                 {"compress", "topk:0.05"},
                                 {"plaintext", "true"},
                                 {"seeds", "tcp://127.0.0.1:7070"},
                                 {"shard_index", "1"},
                                 {"report", "json"}});
    // No plaintext key of the caller's: the launcher's is what allows it.
    auto o = PeerOptionsFromKeys({{"compress", "int8"}, {"time_limit_s", "5"}}, KeyContext{});
    ASSERT_TRUE(o.ok()) << o.status();
    EXPECT_EQ(o->gossip.node.soft_sync.max_lead, 4);
    EXPECT_FALSE(
        o->gossip.peer.transport.curve.enabled());  // plaintext = true, a bare TOML boolean
    EXPECT_EQ(o->gossip.peer.seeds, std::vector<std::string>{"tcp://127.0.0.1:7070"});
    // A flag given to the launcher sets the run over the caller's own value, which is named.
    EXPECT_EQ(o->gossip.node.choco.compressor.op, coding::Operator::kTopK);
    ASSERT_EQ(o->launcher_overrides.size(), 1u);
    EXPECT_EQ(o->launcher_overrides[0],
              "compress: the launcher's topk:0.05 sets the run; the program's int8 is not used");
    // One the launcher only defaulted (MURMUR_LAUNCHER_DEFAULTS) is the caller's to set.
    ::setenv("MURMUR_LAUNCHER_DEFAULTS", "epochs,compress", 1);
    auto defaulted =
        PeerOptionsFromKeys({{"compress", "int8"}, {"time_limit_s", "5"}}, KeyContext{});
    ::unsetenv("MURMUR_LAUNCHER_DEFAULTS");
    ASSERT_TRUE(defaulted.ok()) << defaulted.status();
    EXPECT_EQ(defaulted->gossip.node.choco.compressor.op, coding::Operator::kInt8);
    EXPECT_TRUE(defaulted->launcher_overrides.empty());
    // The same value in another spelling is no override.
    auto same = PeerOptionsFromKeys({{"max_lead", "4.0"}, {"time_limit_s", "5"}}, KeyContext{});
    ASSERT_TRUE(same.ok()) << same.status();
    EXPECT_TRUE(same->launcher_overrides.empty());
    // Read only where the context says so.
    auto own = PeerOptionsFromKeys(With({}), kPlain);
    ASSERT_TRUE(own.ok()) << own.status();
    EXPECT_NE(own->gossip.node.soft_sync.max_lead, 4);
  }
  {
    LauncherEnvironment env(Keys{{"max_lead", "four"}});
    ExpectRefused(PeerOptionsFromKeys(With({}), KeyContext{}), "max_lead");
  }
  {
    LauncherEnvironment env(std::string("no_such_key = 1\n"));
    ExpectRefused(PeerOptionsFromKeys(With({}), KeyContext{}), "unknown key 'no_such_key'");
  }
  {
    LauncherEnvironment env(std::string("max_lead = [1, {]\n"));
    ExpectRefused(PeerOptionsFromKeys(With({}), KeyContext{}), "MURMUR_PEER_CONFIG");
  }
  {
    LauncherEnvironment env(Keys{{"mode", "ring"}});
    ExpectRefused(PeerOptionsFromKeys(With({}), KeyContext{}), "the library runs gossip");
  }
}

TEST(PeerOptionsTest, ABufferElsewhereThanTheLaunchersPlacementIsRefused) {
  {
    LauncherEnvironment env(Keys{{"device", "cuda:1"}}, "cuda:1");
    ExpectRefused(PeerOptionsFromKeys(With({}), KeyContext{}),
                  "placed this process on cuda:1 (MURMUR_DEVICE), but the model buffer is on cpu "
                  "(no device key: host memory)");
  }
  {
    LauncherEnvironment env(Keys{{"device", "cpu"}}, "cpu");
    auto o = PeerOptionsFromKeys(With({{"device", "cpu"}}), KeyContext{});
    ASSERT_TRUE(o.ok()) << o.status();
    EXPECT_EQ(o->device, kernels::Device::Cpu());
  }
  {
    LauncherEnvironment env(Keys{{"device", "auto"}});  // the program's own choice: not checked
    EXPECT_TRUE(PeerOptionsFromKeys(With({}), KeyContext{}).ok());
  }
}

TEST(PeerOptionsTest, TheTypedStartRefusesWhatItsHooksCannotServe) {
  std::vector<float> params(16, 0.0f);
  node::NodeConfig c = DefaultPeerConfig();
  c.plaintext = true;
  c.gossip.time_limit_s = 1;
  auto resolved = PeerOptionsFrom(c);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  PeerOptions o = *resolved;
  o.gossip.node.target_accuracy = 0.5;
  auto no_evaluation = Peer::Start(o, params, EvaluateFn{}, NoEnvironment());
  ASSERT_FALSE(no_evaluation.ok());
  EXPECT_NE(no_evaluation.status().message().find("need an evaluation"), std::string_view::npos)
      << no_evaluation.status();
  o.gossip.node.target_accuracy = 0;
  o.checkpoint_dir = "/tmp";
  auto no_state = Peer::Start(o, params, EvaluateFn{}, NoEnvironment());
  ASSERT_FALSE(no_state.ok());
  EXPECT_NE(no_state.status().message().find("save_state"), std::string_view::npos)
      << no_state.status();
  o.checkpoint_dir.clear();
  o.gossip.epoch_samples = 0;
  o.gossip.epochs = 1;
  auto no_epoch = Peer::Start(o, params, EvaluateFn{}, NoEnvironment());
  ASSERT_FALSE(no_epoch.ok());
  EXPECT_NE(no_epoch.status().message().find("epochs needs epoch_samples"), std::string_view::npos)
      << no_epoch.status();
  o.gossip.epochs = 0;
  o.log_level = "loud";
  EXPECT_FALSE(Peer::Start(o, params, EvaluateFn{}, NoEnvironment()).ok());  // not a CHECK
}

}  // namespace
}  // namespace murmur::api
