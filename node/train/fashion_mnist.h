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

// The data cache's directory: $MURMUR_CACHE_DIR, else $XDG_CACHE_HOME/murmur, else
// $HOME/.cache/murmur, else /tmp/murmur-cache.
std::string DefaultCacheDir();

// Loads train (60000) and test (10000) sets from `dir` as compact datasets (dataset.h) whose
// features are (x / 255 - 0.2860) / 0.3530 (the training set's mean and standard deviation).
// A missing directory or file gives a kNotFound naming the Debian package to install.
//
// The data cache: each split is decoded once per machine into `cache_dir` as
//   "MURMURU8", u32 version 1, u32 rows, u32 cols, u32 0, u64 XXH3-64 of the rest,
//   rows label bytes, rows × cols pixel bytes
// named by the source files' path, size and modification time, and memory-mapped, so node
// processes share one copy of the pixels and start without decompressing. A cache file that
// fails any check (size, header, checksum, a label ≥ 10) is rebuilt; a cache directory that
// cannot be written is logged once and the split is decoded in memory. An empty `cache_dir`
// disables the cache.
// kNotFound, saying what is missing and how to get it, unless `dir` holds the four IDX files
// (train and t10k images and labels). What LoadFashionMnist checks first; a launcher checks it
// before it starts any node.
Status CheckFashionMnistFiles(const std::string& dir);

StatusOr<TrainTest> LoadFashionMnist(const std::string& dir = kFashionMnistDir,
                                     const std::string& cache_dir = DefaultCacheDir());

}  // namespace murmur::node
