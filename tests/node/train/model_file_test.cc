#include "node/train/model_file.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <random>

namespace murmur::node {
namespace {

std::filesystem::path TempDir() {
  auto dir = std::filesystem::temp_directory_path() /
             ("murmur-model-file-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(ModelFileTest, RoundTripsBitForBitAtEdgeSizes) {
  const auto dir = TempDir();
  std::mt19937_64 rng(7);  // seed 7
  std::normal_distribution<float> normal;
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{4096}, size_t{100003}}) {
    std::vector<float> params(n);
    for (float& v : params) v = normal(rng);
    if (n > 2) params[1] = -0.0f, params[2] = std::numeric_limits<float>::denorm_min();
    const std::string path = (dir / ("m" + std::to_string(n))).string();
    ASSERT_TRUE(SaveParams(path, params).ok());
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
    auto back = LoadParams(path);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    ASSERT_EQ(back->size(), n);
    EXPECT_EQ(0, std::memcmp(back->data(), params.data(), n * sizeof(float))) << "n = " << n;
  }
  std::filesystem::remove_all(dir);
}

TEST(ModelFileTest, RefusesMissingTruncatedAndUnwritable) {
  const auto dir = TempDir();
  EXPECT_EQ(LoadParams((dir / "none").string()).status().code(), StatusCode::kNotFound);
  {
    std::ofstream out(dir / "odd", std::ios::binary);
    out.write("abcdef", 6);
  }
  EXPECT_EQ(LoadParams((dir / "odd").string()).status().code(), StatusCode::kDataLoss);
  const std::vector<float> one = {1.0f};
  EXPECT_EQ(SaveParams((dir / "no-such-dir" / "m").string(), one).code(), StatusCode::kUnavailable);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace murmur::node
