#pragma once
// Fashion-MNIST from IDX files (gzip-compressed, as Debian's dataset-fashion-mnist ships them
// under /usr/share/datasets/fashion-mnist/). The IDX format: a big-endian magic 0x0000TTDD (TT =
// element type, 0x08 = uint8; DD = number of dimensions), DD big-endian uint32 sizes, then the
// elements. Every header field is validated; a truncated or corrupt file is a kDataLoss Status.

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "node/train/dataset.h"

namespace murmur::node {

inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// A decoded IDX array of unsigned bytes.
struct IdxArray {
  std::vector<uint32_t> dims;
  std::vector<uint8_t> data;
};

// Parses IDX bytes already decompressed. `max_elements` guards against headers that claim
// absurd sizes (kDataLoss).
StatusOr<IdxArray> ParseIdx(const std::vector<uint8_t>& bytes, uint64_t max_elements = 1ull << 31);

// Reads a file, gunzipping when it is gzip (plain IDX files are read as they are).
// kNotFound when the file is missing; kDataLoss when it does not decompress or parse.
StatusOr<IdxArray> ReadIdxFile(const std::string& path);

// Loads train (60000) and test (10000) sets from `dir`, scaling pixels to
// (x / 255 - 0.2860) / 0.3530 (the training set's mean and standard deviation).
// A missing directory or file gives a kNotFound naming the Debian package to install.
StatusOr<TrainTest> LoadFashionMnist(const std::string& dir = kFashionMnistDir);

}  // namespace murmur::node
