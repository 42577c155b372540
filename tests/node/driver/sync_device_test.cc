// The synchronous modes on the CPU device with a real model: every mode's root ends
// on the model of centralized SGD over the same global batches — through the device-resident
// decode, ring and SGD step — also when a straggler is left out of the decode. The synchronous
// parameter server (one server or the model sharded over three) ends on the same model.
#include "tests/testing/sync_training.h"

namespace murmur::node {
namespace {

using gossip::Mode;

TEST(SyncDeviceTest, EveryModeTrainsAsCentralizedSgdOnTheCpuDevice) {
  auto data = LoadFashionMnist();
  if (!data.ok()) GTEST_SKIP() << data.status();
  const testing::SyncTrainingSetup setup(*data);
  const std::vector<float> central = testing::CentralSgd(setup);
  const double before = setup.Accuracy(setup.InitialModel());
  const double after = setup.Accuracy(central);
  std::printf("centralized SGD: test accuracy %.4f -> %.4f\n", before, after);
  EXPECT_GT(after, before + 0.2);  // the steps learn
  struct Case {
    Mode mode;
    int n, layers, s;
    std::optional<size_t> held;
    gossip::PsOptions ps = {};
  };
  const Case cases[] = {
      {Mode::kCodedTree, 2, 2, 1, size_t{4}},  // a leaf under parent 2 never answers
      {Mode::kTree, 2, 2, 0, std::nullopt},
      {Mode::kGc, 3, 1, 1, size_t{2}},
      {Mode::kRing, 4, 1, 0, std::nullopt},
      // Synchronous parameter servers compute the same global step, sharded or not.
      {Mode::kPs, 4, 1, 0, std::nullopt, {.servers = 1}},
      {Mode::kPs, 4, 1, 0, std::nullopt, {.servers = 3}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(gossip::ModeName(c.mode)));
    const auto run = testing::RunSyncTraining(setup, kernels::Device::Cpu(), c.mode, c.n, c.layers,
                                              c.s, c.held, false, c.ps);
    EXPECT_EQ(run.iterations, static_cast<uint64_t>(setup.kIterations));
    if (c.held) {
      EXPECT_GE(run.children_ignored, static_cast<uint64_t>(setup.kIterations));
    }
    const double diff = testing::RelativeMaxDifference(run.model, central);
    std::printf("  relative max difference to centralized SGD: %.3g\n", diff);
    EXPECT_LT(diff, 1e-5);
    EXPECT_EQ(run.transfer_bytes, 0u);  // nothing crosses on the CPU
  }
}

// `--nesterov` reaches the synchronous modes' SGD step (it was accepted and ignored there).
TEST(SyncDeviceTest, NesterovMomentumIsTheCentralizedNesterovStep) {
  auto data = LoadFashionMnist();
  if (!data.ok()) GTEST_SKIP() << data.status();
  const testing::SyncTrainingSetup setup(*data);
  const std::vector<float> nesterov = testing::CentralSgd(setup, true);
  const std::vector<float> heavy_ball = testing::CentralSgd(setup, false);
  ASSERT_GT(testing::RelativeMaxDifference(nesterov, heavy_ball), 1e-3);
  const auto run = testing::RunSyncTraining(setup, kernels::Device::Cpu(), Mode::kRing, 4, 1, 0,
                                            std::nullopt, true);
  EXPECT_EQ(run.iterations, static_cast<uint64_t>(setup.kIterations));
  const double diff = testing::RelativeMaxDifference(run.model, nesterov);
  std::printf("  relative max difference to centralized Nesterov SGD: %.3g\n", diff);
  EXPECT_LT(diff, 1e-5);
}

}  // namespace
}  // namespace murmur::node
