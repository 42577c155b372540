#include "node/train/fashion_mnist.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

namespace murmur::node {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() : path_(fs::temp_directory_path() / ("murmur-idx-" + std::to_string(::getpid()))) {
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

std::vector<uint8_t> IdxBytes(std::vector<uint32_t> dims, size_t drop_tail = 0) {
  std::vector<uint8_t> out = {0, 0, 0x08, static_cast<uint8_t>(dims.size())};
  size_t n = 1;
  for (uint32_t d : dims) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(d >> s));
    n *= d;
  }
  for (size_t i = 0; i < n; ++i) out.push_back(static_cast<uint8_t>(i % 10));
  out.resize(out.size() - drop_tail);
  return out;
}

void WriteGzip(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  gzclose(f);
}

TEST(FashionMnistTest, LoadsTheRealDebianFiles) {
  auto data = LoadFashionMnist();
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->train.rows, 60000);
  EXPECT_EQ(data->test.rows, 10000);
  EXPECT_EQ(data->train.cols, 784);
  std::array<int, 10> counts{};
  for (int32_t l : data->train.labels) counts[static_cast<size_t>(l)]++;
  for (int c : counts) EXPECT_EQ(c, 6000);  // Fashion-MNIST is balanced
  EXPECT_TRUE(data->train.compact());
  double mean = 0;
  std::vector<float> rows(1000 * 784);
  for (int64_t begin = 0; begin < data->train.rows; begin += 1000) {
    data->train.RowsInto(begin, 1000, rows);
    for (float v : rows) mean += v;
  }
  mean /= 60000.0 * 784;
  EXPECT_NEAR(mean, 0.0, 0.01);  // standardized with the training set's statistics
}

// A small Fashion-MNIST-shaped directory: `rows` training and 3 test images.
void WriteSplits(const TempDir& dir, uint32_t rows) {
  WriteGzip(dir.File("train-images-idx3-ubyte.gz"), IdxBytes({rows, 28, 28}));
  WriteGzip(dir.File("train-labels-idx1-ubyte.gz"), IdxBytes({rows}));
  WriteGzip(dir.File("t10k-images-idx3-ubyte.gz"), IdxBytes({3, 28, 28}));
  WriteGzip(dir.File("t10k-labels-idx1-ubyte.gz"), IdxBytes({3}));
}

// Every feature is the formula applied to the IDX byte (IdxBytes writes i % 10): (v / 255 - mean)
// / std, as the set's multiply-add (bit for bit, the vectorized rows against PixelValue), within
// a few ulp of the formula rounded step by step.
void ExpectDecoded(const Dataset& d) {
  std::vector<float> row(static_cast<size_t>(d.cols));
  for (int64_t r = 0; r < d.rows; ++r) {
    d.RowInto(r, row);
    for (int64_t c = 0; c < d.cols; ++c) {
      const auto byte = static_cast<uint8_t>((r * d.cols + c) % 10);
      const float got = row[static_cast<size_t>(c)];
      ASSERT_EQ(got, d.PixelValue(byte)) << "row " << r << " col " << c;
      const float stepwise = (static_cast<float>(byte) / 255.0f - 0.2860f) / 0.3530f;
      ASSERT_NEAR(got, stepwise, 4 * std::numeric_limits<float>::epsilon() * std::abs(stepwise))
          << "row " << r << " col " << c;
    }
    ASSERT_EQ(d.labels[static_cast<size_t>(r)], r % 10);
  }
}

std::vector<fs::path> CacheFiles(const std::string& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(FashionMnistCacheTest, BuiltOnceThenMappedWithTheDecodedValues) {
  TempDir dir;
  WriteSplits(dir, 17);
  const std::string cache = dir.File("cache");
  auto first = LoadFashionMnist(dir.File(""), cache);
  ASSERT_TRUE(first.ok()) << first.status();
  const auto files = CacheFiles(cache);
  ASSERT_EQ(files.size(), 2u);  // one per split, no staging file left behind
  const auto written = fs::last_write_time(files[1]);
  auto second = LoadFashionMnist(dir.File(""), cache);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(CacheFiles(cache), files);
  EXPECT_EQ(fs::last_write_time(files[1]), written);  // mapped, not rebuilt
  for (const TrainTest* t : {&*first, &*second}) {
    EXPECT_EQ(t->train.rows, 17);
    EXPECT_EQ(t->test.rows, 3);
    ExpectDecoded(t->train);
    ExpectDecoded(t->test);
  }
  // A truncated copy shares the mapping and reads the same rows.
  Dataset cut = second->train;
  cut.Truncate(5);
  EXPECT_EQ(cut.pixels.get(), second->train.pixels.get());
  ExpectDecoded(cut);
  // Densified (a periodic evaluation subset): the same values as dense floats.
  cut.Densify();
  EXPECT_FALSE(cut.compact());
  EXPECT_EQ(cut.features.size(), 5u * 784);
  ExpectDecoded(cut);
}

TEST(FashionMnistCacheTest, EveryDamagedCacheFileIsRebuilt) {
  TempDir dir;
  WriteSplits(dir, 9);
  const std::string cache = dir.File("cache");
  ASSERT_TRUE(LoadFashionMnist(dir.File(""), cache).ok());
  const fs::path train = CacheFiles(cache)[1];
  ASSERT_NE(train.filename().string().find("train"), std::string::npos);
  std::ifstream in(train, std::ios::binary);
  const std::string good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // A flipped byte in the header, a label and a pixel; a truncation; an empty file.
  std::vector<std::string> damaged;
  for (size_t at : {size_t{0}, size_t{12}, size_t{24}, size_t{32}, size_t{32 + 9 + 100}}) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ 0x40);
    damaged.push_back(bad);
  }
  damaged.push_back(good.substr(0, good.size() - 1));
  damaged.push_back("");
  for (size_t i = 0; i < damaged.size(); ++i) {
    SCOPED_TRACE("damage " + std::to_string(i));
    std::ofstream(train, std::ios::binary | std::ios::trunc) << damaged[i];
    auto data = LoadFashionMnist(dir.File(""), cache);
    ASSERT_TRUE(data.ok()) << data.status();
    ExpectDecoded(data->train);
    std::ifstream again(train, std::ios::binary);
    EXPECT_EQ(std::string((std::istreambuf_iterator<char>(again)), std::istreambuf_iterator<char>()), good);
  }
}

TEST(FashionMnistCacheTest, WithoutAWritableCacheTheSetIsDecodedInMemory) {
  TempDir dir;
  WriteSplits(dir, 4);
  for (const std::string& cache : {std::string("/dev/null/murmur-cache"), std::string()}) {
    auto data = LoadFashionMnist(dir.File(""), cache);
    ASSERT_TRUE(data.ok()) << data.status();
    ExpectDecoded(data->train);
    ExpectDecoded(data->test);
  }
}

TEST(FashionMnistTest, MissingFilesNameTheDebianPackage) {
  auto data = LoadFashionMnist("/nonexistent/fashion");
  EXPECT_EQ(data.status().code(), StatusCode::kNotFound);
  EXPECT_NE(data.status().message().find("dataset-fashion-mnist"), std::string_view::npos);
}

TEST(IdxTest, ParsesValidHeadersOfAnyRank) {
  for (auto dims : std::vector<std::vector<uint32_t>>{{0}, {1}, {7}, {3, 2, 5}, {2, 1, 1, 3}}) {
    auto parsed = ParseIdx(IdxBytes(dims));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(parsed->dims, dims);
  }
}

TEST(IdxTest, RejectsCorruptHeaders) {
  auto bad_magic = IdxBytes({4});
  bad_magic[0] = 1;
  EXPECT_EQ(ParseIdx(bad_magic).status().code(), StatusCode::kDataLoss);
  auto bad_type = IdxBytes({4});
  bad_type[2] = 0x0D;  // float
  EXPECT_EQ(ParseIdx(bad_type).status().code(), StatusCode::kDataLoss);
  auto zero_dims = IdxBytes({4});
  zero_dims[3] = 0;
  EXPECT_EQ(ParseIdx(zero_dims).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(ParseIdx({0, 0}).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(ParseIdx(IdxBytes({3, 4}, 1)).status().code(), StatusCode::kDataLoss);  // truncated
  auto extra = IdxBytes({3, 4});
  extra.push_back(0);
  EXPECT_EQ(ParseIdx(extra).status().code(), StatusCode::kDataLoss);
  // A header that claims 2^32 * 2^32 elements must be refused before allocating.
  std::vector<uint8_t> huge = {0, 0, 8, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  EXPECT_EQ(ParseIdx(huge).status().code(), StatusCode::kDataLoss);
}

TEST(IdxTest, ReadsGzipAndRejectsTruncatedGzip) {
  TempDir dir;
  const auto bytes = IdxBytes({100, 28, 28});
  WriteGzip(dir.File("ok.gz"), bytes);
  auto ok = ReadIdxFile(dir.File("ok.gz"));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->data.size(), 100u * 28 * 28);

  std::ifstream in(dir.File("ok.gz"), std::ios::binary);
  std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream(dir.File("cut.gz"), std::ios::binary) << gz.substr(0, gz.size() / 2);
  auto cut = ReadIdxFile(dir.File("cut.gz"));
  EXPECT_EQ(cut.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(cut.status().message().find("cut.gz"), std::string_view::npos) << cut.status();
}

TEST(IdxTest, MismatchedImageAndLabelCountsAreRejected) {
  TempDir dir;
  for (const std::string split : {"train", "t10k"}) {
    WriteGzip(dir.File(split + "-images-idx3-ubyte.gz"), IdxBytes({5, 28, 28}));
    WriteGzip(dir.File(split + "-labels-idx1-ubyte.gz"), IdxBytes({4}));
  }
  auto data = LoadFashionMnist(dir.File(""));
  EXPECT_EQ(data.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(data.status().message().find("4 labels"), std::string_view::npos) << data.status();
}

}  // namespace
}  // namespace murmur::node
