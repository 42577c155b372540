#include "node/train/checkpoint.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <thread>

namespace murmur::node {
namespace {

std::filesystem::path TempDir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("murmur-checkpoint-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

Checkpoint Sample(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  Checkpoint c;
  c.text["kind"] = "test";
  c.text["empty"] = "";
  c.text["binary"] = std::string("a\0b\xff", 4);
  c.numbers["zero"] = 0;
  c.numbers["max"] = std::numeric_limits<uint64_t>::max();
  c.numbers["seed"] = seed;
  auto& t = c.tensors["values"];
  t.resize(n);
  for (float& v : t) v = normal(rng);
  if (n > 3) {
    t[1] = -0.0f;
    t[2] = std::numeric_limits<float>::denorm_min();
    t[3] = std::numeric_limits<float>::quiet_NaN();
  }
  c.tensors["none"] = {};
  auto& order = c.indices["order"];
  for (size_t i = 0; i < n / 3; ++i) order.push_back(static_cast<int64_t>(rng()));
  return c;
}

void ExpectSame(const Checkpoint& a, const Checkpoint& b) {
  EXPECT_EQ(a.text, b.text);
  EXPECT_EQ(a.numbers, b.numbers);
  EXPECT_EQ(a.indices, b.indices);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (const auto& [name, values] : a.tensors) {
    const auto& other = b.tensors.at(name);
    ASSERT_EQ(values.size(), other.size());
    EXPECT_EQ(std::memcmp(values.data(), other.data(), values.size() * sizeof(float)), 0) << name;
  }
}

TEST(CheckpointTest, RoundTripsBitForBitAtEdgeSizes) {
  const auto dir = TempDir("roundtrip");
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{4096}, size_t{100003}}) {
    const Checkpoint c = Sample(n, 11 + n);  // seed 11 + n
    const std::string path = (dir / ("c" + std::to_string(n))).string();
    ASSERT_TRUE(WriteCheckpoint(path, c).ok());
    auto back = ReadCheckpoint(path);
    ASSERT_TRUE(back.ok()) << back.status();
    ExpectSame(c, *back);
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  }
  std::filesystem::remove_all(dir);
}

TEST(CheckpointTest, EveryTruncationAndEveryFlippedByteIsRefused) {
  const std::vector<std::byte> bytes = EncodeCheckpoint(Sample(9, 3));
  for (size_t size = 0; size < bytes.size(); ++size) {
    auto r = DecodeCheckpoint(std::span(bytes).first(size));
    ASSERT_EQ(r.status().code(), StatusCode::kDataLoss) << "truncated to " << size;
  }
  for (size_t at = 0; at < bytes.size(); ++at) {
    std::vector<std::byte> flipped = bytes;
    flipped[at] ^= std::byte{0x10};
    ASSERT_EQ(DecodeCheckpoint(flipped).status().code(), StatusCode::kDataLoss) << "byte " << at;
  }
  auto appended = bytes;
  appended.push_back(std::byte{0});
  EXPECT_EQ(DecodeCheckpoint(appended).status().code(), StatusCode::kDataLoss);
}

TEST(CheckpointTest, MissingFilesAndUnwritableDirectoriesAreNamed) {
  const auto dir = TempDir("errors");
  EXPECT_EQ(ReadCheckpoint((dir / "none").string()).status().code(), StatusCode::kNotFound);
  std::ofstream((dir / "text")) << "float32 values of an old --save-model";
  EXPECT_EQ(ReadCheckpoint((dir / "text").string()).status().code(), StatusCode::kDataLoss);
  const Status s = WriteCheckpoint((dir / "no-such-dir" / "c").string(), Sample(4, 1));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(std::string(s.message()).find("no-such-dir"), std::string::npos) << s;
  std::filesystem::remove_all(dir);
}

TEST(CheckpointTest, SavedModelsLoadOnlyIntoTheSameModel) {
  const auto dir = TempDir("model");
  const std::string path = (dir / "model").string();
  const std::vector<float> params = {1, -2, 3.5f};
  ASSERT_TRUE(SaveModel(path, "3-1 mse", params).ok());
  auto loaded = LoadModel(path, "3-1 mse", 3);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(*loaded, params);
  EXPECT_EQ(LoadModel(path, "3-2 softmax-ce", 3).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(LoadModel(path, "3-1 mse", 4).status().code(), StatusCode::kFailedPrecondition);
  Checkpoint no_params;
  no_params.text["model"] = "3-1 mse";
  ASSERT_TRUE(WriteCheckpoint(path, no_params).ok());
  EXPECT_EQ(LoadModel(path, "3-1 mse", 3).status().code(), StatusCode::kNotFound);
  std::filesystem::remove_all(dir);
}

// A file's checksum says nothing about its values: a NaN, an infinity or a value beyond
// ±kMaxCheckpointValue is refused by value, at every position of a tensor; the bound itself loads.
TEST(CheckpointTest, ValuesAreCheckedAfterTheChecksum) {
  const auto dir = TempDir("values");
  const std::string path = (dir / "model").string();
  const float bads[] = {std::nanf(""), INFINITY, -INFINITY, 1e30f, -1.0001e8f};
  for (size_t at : {size_t{0}, size_t{4}, size_t{7}}) {
    for (float bad : bads) {
      std::vector<float> params(8, 0.25f);
      params[at] = bad;
      ASSERT_TRUE(SaveModel(path, "8 values", params).ok());
      auto loaded = LoadModel(path, "8 values", 8);
      ASSERT_EQ(loaded.status().code(), StatusCode::kDataLoss) << bad << " at " << at;
      EXPECT_NE(std::string(loaded.status().message()).find("index " + std::to_string(at)),
                std::string::npos)
          << loaded.status();
    }
  }
  std::vector<float> edge(8, kMaxCheckpointValue);
  edge[3] = -kMaxCheckpointValue;
  ASSERT_TRUE(SaveModel(path, "8 values", edge).ok());
  EXPECT_TRUE(LoadModel(path, "8 values", 8).ok());
  std::filesystem::remove_all(dir);
}

// kill -9 at random moments during checkpoint writes never leaves a checkpoint that
// fails to load. A child rewrites a 1 MB checkpoint with a rising counter as fast as it can; the
// parent kills it after a random delay, 200 times, and each time reads what is on disk.
TEST(CheckpointTest, KillNineDuringWritesNeverLeavesAnUnloadableCheckpoint) {
  const auto dir = TempDir("kill");
  const std::string path = (dir / "checkpoint.mck").string();
  std::mt19937_64 rng(20);  // seed 20
  std::printf("seed 20\n");
  uint64_t last = 0;
  int interrupted = 0;
  Checkpoint c = Sample(1 << 18, 1);  // 1 MB  // kills that found a write under way (its temporary file present)
  for (int kill = 0; kill < 200; ++kill) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      for (uint64_t counter = last + 1;; ++counter) {
        c.numbers["counter"] = counter;
        c.tensors["values"][0] = static_cast<float>(counter);
        if (!WriteCheckpoint(path, c).ok()) ::_exit(3);
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 60000)(rng)));
    ASSERT_EQ(::kill(child, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer failed on its own (status " << status << ")";
    interrupted += std::filesystem::exists(path + ".tmp");
    auto read = ReadCheckpoint(path);
    if (read.status().code() == StatusCode::kNotFound && last == 0) continue;  // none written yet
    ASSERT_TRUE(read.ok()) << "after kill " << kill << ": " << read.status();
    const uint64_t counter = read->numbers.at("counter");
    ASSERT_GE(counter, last) << "a kill went back in time";
    ASSERT_EQ(read->tensors.at("values")[0], static_cast<float>(counter));
    last = counter;
  }
  std::printf("200 kills, %d during a write, last counter %llu\n", interrupted,
              static_cast<unsigned long long>(last));
  EXPECT_GT(last, 0u);
  EXPECT_GE(interrupted, 20) << "too few kills landed during a write to show anything";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace murmur::node
