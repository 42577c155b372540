#include "node/train/fashion_mnist.h"

#include <fmt/format.h>
#include <unistd.h>
#include <xxhash.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <span>

#include "base/file.h"
#include "base/log.h"

namespace murmur::node {
namespace {

constexpr float kMean = 0.2860f;
constexpr float kStd = 0.3530f;

uint32_t ReadBigEndian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

constexpr size_t kMaxFileBytes = size_t{1} << 31;

StatusOr<std::vector<uint8_t>> Gunzip(std::span<const uint8_t> compressed, const std::string& path) {
  z_stream stream{};
  // 15 + 16: zlib window with gzip header decoding.
  if (inflateInit2(&stream, 15 + 16) != Z_OK) return InternalError("zlib inflateInit2 failed");
  std::vector<uint8_t> out;
  // The gzip trailer's ISIZE (the size mod 2^32) is only a hint: the output grows past it if
  // it lies. Reserving it spares the copies of a growing vector (start-up time).
  if (compressed.size() >= 4) {
    const uint8_t* t = compressed.data() + compressed.size() - 4;
    const size_t hint = uint32_t{t[0]} | (uint32_t{t[1]} << 8) | (uint32_t{t[2]} << 16) |
                        (uint32_t{t[3]} << 24);
    out.reserve(std::min(hint, kMaxFileBytes));
  }
  std::vector<uint8_t> chunk(1 << 20);
  stream.next_in = const_cast<Bytef*>(compressed.data());
  stream.avail_in = static_cast<uInt>(compressed.size());
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    stream.next_out = chunk.data();
    stream.avail_out = static_cast<uInt>(chunk.size());
    rc = inflate(&stream, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      const std::string why = rc == Z_BUF_ERROR ? "unexpected end of data"
                                                : (stream.msg ? stream.msg : "inflate error");
      inflateEnd(&stream);
      return DataLossError(path + ": gzip data is corrupt or truncated (" + why + ")");
    }
    out.insert(out.end(), chunk.data(), chunk.data() + (chunk.size() - stream.avail_out));
  }
  inflateEnd(&stream);
  return out;
}

Status MissingData(const std::string& what) {
  return NotFoundError(what +
                       ": Fashion-MNIST is missing; install the Debian package "
                       "dataset-fashion-mnist (ops/install-deps.sh does) or pass --data-dir");
}

}  // namespace

StatusOr<IdxArray> ParseIdx(const std::vector<uint8_t>& bytes, uint64_t max_elements) {
  if (bytes.size() < 4) {
    return DataLossError("IDX data of " + std::to_string(bytes.size()) +
                         " bytes is shorter than its 4-byte magic");
  }
  if (bytes[0] != 0 || bytes[1] != 0) return DataLossError("IDX magic does not start with 0x0000");
  if (bytes[2] != 0x08) {
    return DataLossError(fmt::format("IDX element type {:#04x} is not unsigned byte (0x08)",
                                     bytes[2]));
  }
  const int ndims = bytes[3];
  if (ndims < 1 || ndims > 4) {
    return DataLossError("IDX has " + std::to_string(ndims) + " dimensions (expected 1 to 4)");
  }
  const size_t header = 4 + 4 * static_cast<size_t>(ndims);
  if (bytes.size() < header) return DataLossError("IDX header is truncated");
  IdxArray out;
  uint64_t elements = 1;
  for (int i = 0; i < ndims; ++i) {
    const uint32_t d = ReadBigEndian32(&bytes[4 + 4 * i]);
    out.dims.push_back(d);
    elements *= d;
    if (elements > max_elements) {
      return DataLossError("IDX header claims more than " + std::to_string(max_elements) +
                           " elements");
    }
  }
  if (bytes.size() - header != elements) {
    return DataLossError("IDX header promises " + std::to_string(elements) +
                         " elements but the data holds " + std::to_string(bytes.size() - header));
  }
  out.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
  return out;
}

StatusOr<IdxArray> ReadIdxFile(const std::string& path) {
  auto read = ReadWholeFile(path, kMaxFileBytes);
  if (!read.ok()) return read.status();
  const std::string& file = *read;
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(file.data()), file.size());
  std::vector<uint8_t> raw;
  if (file.size() >= 2 && file[0] == '\x1f' && file[1] == '\x8b') {
    MURMUR_ASSIGN_OR_RETURN(raw, Gunzip(bytes, path));
  } else {
    raw.assign(bytes.begin(), bytes.end());
  }
  auto parsed = ParseIdx(raw);
  if (!parsed.ok()) return parsed.status().WithContext(path);
  return parsed;
}

namespace {

constexpr char kCacheMagic[8] = {'M', 'U', 'R', 'M', 'U', 'R', 'U', '8'};
constexpr uint32_t kCacheVersion = 1;
constexpr size_t kCacheHeader = 32;

template <typename T>
void PutLe(std::vector<std::byte>& out, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<std::byte>(v >> (8 * i)));
}
template <typename T>
T GetLe(const std::byte* p) {
  T v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(std::to_integer<uint8_t>(p[i])) << (8 * i);
  return v;
}

// Decodes a split from its IDX files into the cache file's bytes.
StatusOr<std::vector<std::byte>> DecodeSplit(const std::string& images_path,
                                             const std::string& labels_path) {
  MURMUR_ASSIGN_OR_RETURN(IdxArray images, ReadIdxFile(images_path));
  MURMUR_ASSIGN_OR_RETURN(IdxArray labels, ReadIdxFile(labels_path));
  if (images.dims.size() != 3) {
    return DataLossError(images_path + ": expected 3 dimensions (count, rows, cols)");
  }
  if (labels.dims.size() != 1) return DataLossError(labels_path + ": expected 1 dimension");
  if (images.dims[0] != labels.dims[0]) {
    return DataLossError(images_path + " holds " + std::to_string(images.dims[0]) +
                         " images but " + labels_path + " holds " +
                         std::to_string(labels.dims[0]) + " labels");
  }
  for (size_t i = 0; i < labels.data.size(); ++i) {
    if (labels.data[i] >= 10) {
      return DataLossError(labels_path + ": label " + std::to_string(labels.data[i]) +
                           " at index " + std::to_string(i) + " is not in [0, 10)");
    }
  }
  std::vector<std::byte> out;
  out.reserve(kCacheHeader + labels.data.size() + images.data.size());
  for (char c : kCacheMagic) out.push_back(static_cast<std::byte>(c));
  PutLe<uint32_t>(out, kCacheVersion);
  PutLe<uint32_t>(out, images.dims[0]);
  PutLe<uint32_t>(out, images.dims[1] * images.dims[2]);
  PutLe<uint32_t>(out, 0);
  PutLe<uint64_t>(out, 0);  // the checksum, below
  const auto* l = reinterpret_cast<const std::byte*>(labels.data.data());
  const auto* p = reinterpret_cast<const std::byte*>(images.data.data());
  out.insert(out.end(), l, l + labels.data.size());
  out.insert(out.end(), p, p + images.data.size());
  const uint64_t sum = XXH3_64bits(out.data() + kCacheHeader, out.size() - kCacheHeader);
  for (size_t i = 0; i < 8; ++i) out[24 + i] = static_cast<std::byte>(sum >> (8 * i));
  return out;
}

// Why `bytes` is not a valid cache file ("" when it is).
std::string CheckCache(const std::byte* bytes, size_t size) {
  if (size < kCacheHeader) return "shorter than its header";
  if (std::memcmp(bytes, kCacheMagic, sizeof(kCacheMagic)) != 0) return "bad magic";
  if (GetLe<uint32_t>(bytes + 8) != kCacheVersion) return "another version";
  const uint64_t rows = GetLe<uint32_t>(bytes + 12), cols = GetLe<uint32_t>(bytes + 16);
  if (rows == 0 || cols == 0 || size != kCacheHeader + rows + rows * cols) return "wrong size";
  if (XXH3_64bits(bytes + kCacheHeader, size - kCacheHeader) != GetLe<uint64_t>(bytes + 24)) {
    return "checksum mismatch";
  }
  for (uint64_t i = 0; i < rows; ++i) {
    if (std::to_integer<uint8_t>(bytes[kCacheHeader + i]) >= 10) return "label out of range";
  }
  return "";
}

// The cache file's name for a split: its source files' identity.
std::string CacheName(const std::string& prefix, const std::string& images_path,
                      const std::string& labels_path) {
  std::string identity;
  for (const auto& p : {images_path, labels_path}) {
    std::error_code ec;
    const auto canonical = std::filesystem::weakly_canonical(p, ec);
    identity += (ec ? p : canonical.string()) + "\n";
    identity += std::to_string(std::filesystem::file_size(p, ec)) + "\n";
    const auto time = std::filesystem::last_write_time(p, ec);
    identity += std::to_string(time.time_since_epoch().count()) + "\n";
  }
  return fmt::format("fashion-mnist-{}-{:016x}.u8", prefix, XXH3_64bits(identity.data(), identity.size()));
}

// The split's cache bytes: mapped from the cache (built first when missing or invalid), or
// decoded in memory without a usable cache directory.
StatusOr<MappedFile> CachedSplit(const std::string& images_path, const std::string& labels_path,
                                 const std::string& prefix, const std::string& cache_dir) {
  std::string path;
  if (!cache_dir.empty()) {
    path = cache_dir + "/" + CacheName(prefix, images_path, labels_path);
    if (auto mapped = MapFile(path); mapped.ok()) {
      const std::string why = CheckCache(mapped->data.get(), mapped->size);
      if (why.empty()) {
        mapped->DropResidentPages();  // the checksum read every page; keep only what is used
        return mapped;
      }
      MURMUR_LOG_WARN("data cache {}: {}; rebuilding it", path, why);
    }
  }
  MURMUR_ASSIGN_OR_RETURN(std::vector<std::byte> bytes, DecodeSplit(images_path, labels_path));
  if (!path.empty()) {
    // A staging name per process: nodes starting together each write a whole file, and the
    // last rename wins (every one holds the same bytes).
    std::error_code ec;
    std::filesystem::create_directories(cache_dir, ec);
    const std::string staging = path + "." + std::to_string(::getpid());
    Status written = WriteFileAtomically(staging, bytes);
    if (written.ok() && std::rename(staging.c_str(), path.c_str()) != 0) {
      written = UnavailableError("cannot rename " + staging + " to " + path);
      std::filesystem::remove(staging, ec);
    }
    if (written.ok()) {
      // Caches of this split built from other files (an older package) are no longer named; a
      // process that still maps one keeps it until it exits.
      const std::string stale_prefix = "fashion-mnist-" + prefix + "-";
      for (const auto& e : std::filesystem::directory_iterator(cache_dir, ec)) {
        const std::string name = e.path().filename().string();
        if (name.starts_with(stale_prefix) && name.ends_with(".u8") && e.path().string() != path) {
          std::filesystem::remove(e.path(), ec);
        }
      }
      if (auto mapped = MapFile(path); mapped.ok() && CheckCache(mapped->data.get(), mapped->size).empty()) {
        mapped->DropResidentPages();
        return mapped;
      }
    } else {
      MURMUR_LOG_WARN("data cache {} not written ({}); decoding in memory each start",
                      cache_dir, written.message());
    }
  }
  auto owned = std::make_shared<std::vector<std::byte>>(std::move(bytes));
  MappedFile in_memory;
  in_memory.size = owned->size();
  in_memory.data = std::shared_ptr<const std::byte>(owned, owned->data());
  return in_memory;
}

std::string SplitPath(const std::string& dir, const std::string& prefix, const char* what) {
  return dir + "/" + prefix + "-" + what + ".gz";
}

StatusOr<Dataset> LoadSplit(const std::string& dir, const std::string& prefix,
                            const std::string& cache_dir) {
  const std::string images_path = SplitPath(dir, prefix, "images-idx3-ubyte");
  const std::string labels_path = SplitPath(dir, prefix, "labels-idx1-ubyte");
  MURMUR_ASSIGN_OR_RETURN(MappedFile file, CachedSplit(images_path, labels_path, prefix, cache_dir));
  const std::byte* bytes = file.data.get();
  Dataset d;
  d.name = "fashion-mnist/" + prefix;
  d.task = TaskKind::kMulticlass;
  d.num_classes = 10;
  d.rows = GetLe<uint32_t>(bytes + 12);
  d.cols = GetLe<uint32_t>(bytes + 16);
  d.labels.resize(static_cast<size_t>(d.rows));
  for (size_t i = 0; i < d.labels.size(); ++i) {
    d.labels[i] = std::to_integer<uint8_t>(bytes[kCacheHeader + i]);
  }
  d.pixels = std::shared_ptr<const uint8_t>(
      file.data, reinterpret_cast<const uint8_t*>(bytes + kCacheHeader + d.labels.size()));
  // (v / 255 - mean) / std as one multiply-add.
  d.pixel_scale = 1.0f / (255.0f * kStd);
  d.pixel_offset = -kMean / kStd;
  return d;
}

}  // namespace

std::string DefaultCacheDir() {
  if (const char* d = std::getenv("MURMUR_CACHE_DIR"); d != nullptr) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0') {
    return std::string(x) + "/murmur";
  }
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') {
    return std::string(h) + "/.cache/murmur";
  }
  return "/tmp/murmur-cache";
}

Status CheckFashionMnistFiles(const std::string& dir) {
  if (!std::filesystem::is_directory(dir)) return MissingData(dir + " is not a directory");
  for (const char* prefix : {"train", "t10k"}) {
    for (const char* what : {"images-idx3-ubyte", "labels-idx1-ubyte"}) {
      const std::string p = SplitPath(dir, prefix, what);
      if (!std::filesystem::exists(p)) return MissingData(p + " not found");
    }
  }
  return OkStatus();
}

StatusOr<TrainTest> LoadFashionMnist(const std::string& dir, const std::string& cache_dir) {
  MURMUR_RETURN_IF_ERROR(CheckFashionMnistFiles(dir));
  TrainTest out;
  MURMUR_ASSIGN_OR_RETURN(out.train, LoadSplit(dir, "train", cache_dir));
  MURMUR_ASSIGN_OR_RETURN(out.test, LoadSplit(dir, "t10k", cache_dir));
  if (out.train.cols != out.test.cols) {
    return DataLossError(dir + ": train and test images differ in size");
  }
  return out;
}

}  // namespace murmur::node
