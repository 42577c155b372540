#include "node/train/fashion_mnist.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <span>

#include "base/file.h"

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
  // it lies. Reserving it spares the copies of a growing vector (start-up time, issue 20).
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

StatusOr<Dataset> LoadSplit(const std::string& dir, const std::string& prefix) {
  const std::string images_path = dir + "/" + prefix + "-images-idx3-ubyte.gz";
  const std::string labels_path = dir + "/" + prefix + "-labels-idx1-ubyte.gz";
  for (const auto& p : {images_path, labels_path}) {
    if (!std::filesystem::exists(p)) return MissingData(p + " not found");
  }
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
  Dataset d;
  d.name = "fashion-mnist/" + prefix;
  d.task = TaskKind::kMulticlass;
  d.num_classes = 10;
  d.rows = images.dims[0];
  d.cols = int64_t{images.dims[1]} * images.dims[2];
  d.features.resize(images.data.size());
  std::transform(images.data.begin(), images.data.end(), d.features.begin(),
                 [](uint8_t v) { return (static_cast<float>(v) / 255.0f - kMean) / kStd; });
  d.labels.resize(labels.data.size());
  for (size_t i = 0; i < labels.data.size(); ++i) {
    if (labels.data[i] >= 10) {
      return DataLossError(labels_path + ": label " + std::to_string(labels.data[i]) +
                           " at index " + std::to_string(i) + " is not in [0, 10)");
    }
    d.labels[i] = labels.data[i];
  }
  return d;
}

}  // namespace

StatusOr<TrainTest> LoadFashionMnist(const std::string& dir) {
  if (!std::filesystem::is_directory(dir)) return MissingData(dir + " is not a directory");
  TrainTest out;
  MURMUR_ASSIGN_OR_RETURN(out.train, LoadSplit(dir, "train"));
  MURMUR_ASSIGN_OR_RETURN(out.test, LoadSplit(dir, "t10k"));
  if (out.train.cols != out.test.cols) {
    return DataLossError(dir + ": train and test images differ in size");
  }
  return out;
}

}  // namespace murmur::node
