#include "node/train/checkpoint.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <cmath>
#include <cstring>

#include "base/file.h"

namespace murmur::node {
namespace {

constexpr char kMagic[8] = {'M', 'U', 'R', 'M', 'U', 'R', 'C', 'K'};
enum Kind : uint8_t { kText = 1, kNumber = 2, kTensor = 3, kIndices = 4 };

void Append(std::vector<std::byte>& out, const void* data, size_t bytes) {
  if (bytes == 0) return;
  const size_t at = out.size();
  out.resize(at + bytes);
  std::memcpy(out.data() + at, data, bytes);
}

template <typename T>
void Put(std::vector<std::byte>& out, T value) {
  Append(out, &value, sizeof(T));
}

void PutSection(std::vector<std::byte>& out, Kind kind, const std::string& name, const void* data,
                size_t bytes) {
  Put<uint8_t>(out, kind);
  Put<uint16_t>(out, static_cast<uint16_t>(name.size()));
  Append(out, name.data(), name.size());
  Put<uint64_t>(out, bytes);
  Append(out, data, bytes);
}

// Bounds-checked reads over the file.
class Reader {
 public:
  explicit Reader(std::span<const std::byte> bytes) : bytes_(bytes) {}
  template <typename T>
  bool Get(T& value) {
    if (bytes_.size() - at_ < sizeof(T)) return false;
    std::memcpy(&value, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return true;
  }
  bool Take(uint64_t n, std::span<const std::byte>& out) {
    if (bytes_.size() - at_ < n) return false;
    out = bytes_.subspan(at_, static_cast<size_t>(n));
    at_ += static_cast<size_t>(n);
    return true;
  }
  bool done() const { return at_ == bytes_.size(); }

 private:
  std::span<const std::byte> bytes_;
  size_t at_ = 0;
};

template <typename T>
std::vector<T> ArrayOf(std::span<const std::byte> data) {
  std::vector<T> values(data.size() / sizeof(T));
  if (!data.empty()) std::memcpy(values.data(), data.data(), data.size());
  return values;
}

template <typename Map>
auto Find(const Map& map, const std::string& name, const char* kind)
    -> StatusOr<typename Map::mapped_type> {
  auto it = map.find(name);
  if (it == map.end()) return NotFoundError(std::string("the checkpoint has no ") + kind + " '" + name + "'");
  return it->second;
}

}  // namespace

StatusOr<std::string> Checkpoint::Text(const std::string& name) const { return Find(text, name, "text"); }
StatusOr<uint64_t> Checkpoint::Number(const std::string& name) const {
  return Find(numbers, name, "number");
}
StatusOr<std::vector<float>> Checkpoint::Tensor(const std::string& name) const {
  return Find(tensors, name, "tensor");
}
StatusOr<std::vector<int64_t>> Checkpoint::Indices(const std::string& name) const {
  return Find(indices, name, "index array");
}

std::vector<std::byte> EncodeCheckpoint(const Checkpoint& c) {
  std::vector<std::byte> out;
  size_t payload = 0;
  for (const auto& [name, v] : c.tensors) payload += v.size() * sizeof(float) + name.size() + 11;
  for (const auto& [name, v] : c.indices) payload += v.size() * sizeof(int64_t) + name.size() + 11;
  out.reserve(payload + 4096);
  Append(out, kMagic, sizeof(kMagic));
  Put<uint32_t>(out, kCheckpointVersion);
  Put<uint32_t>(out, static_cast<uint32_t>(c.text.size() + c.numbers.size() + c.tensors.size() +
                                           c.indices.size()));
  for (const auto& [name, v] : c.text) PutSection(out, kText, name, v.data(), v.size());
  for (const auto& [name, v] : c.numbers) PutSection(out, kNumber, name, &v, sizeof(v));
  for (const auto& [name, v] : c.tensors) PutSection(out, kTensor, name, v.data(), v.size() * sizeof(float));
  for (const auto& [name, v] : c.indices) {
    PutSection(out, kIndices, name, v.data(), v.size() * sizeof(int64_t));
  }
  Put<uint64_t>(out, XXH3_64bits(out.data(), out.size()));
  return out;
}

StatusOr<Checkpoint> DecodeCheckpoint(std::span<const std::byte> bytes) {
  if (bytes.size() < sizeof(kMagic) + 16 || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return DataLossError("not a murmur checkpoint (no MURMURCK header)");
  }
  uint64_t stored = 0;
  std::memcpy(&stored, bytes.data() + bytes.size() - 8, 8);
  const std::span<const std::byte> body = bytes.first(bytes.size() - 8);
  if (XXH3_64bits(body.data(), body.size()) != stored) {
    return DataLossError("the checkpoint's checksum does not match (a torn or corrupted file)");
  }
  Reader in(body.subspan(sizeof(kMagic)));
  uint32_t version = 0;
  uint32_t sections = 0;
  in.Get(version);
  in.Get(sections);
  if (version != kCheckpointVersion) {
    return DataLossError("checkpoint format version " + std::to_string(version) + " (this build reads " +
                         std::to_string(kCheckpointVersion) + ")");
  }
  if (sections > kMaxCheckpointSections) return DataLossError("too many checkpoint sections");
  Checkpoint c;
  for (uint32_t i = 0; i < sections; ++i) {
    uint8_t kind = 0;
    uint16_t name_length = 0;
    uint64_t length = 0;
    std::span<const std::byte> name_bytes;
    std::span<const std::byte> data;
    if (!in.Get(kind) || !in.Get(name_length) || name_length > kMaxSectionName ||
        !in.Take(name_length, name_bytes) || !in.Get(length) || !in.Take(length, data)) {
      return DataLossError("checkpoint section " + std::to_string(i) + " overruns the file");
    }
    std::string name(reinterpret_cast<const char*>(name_bytes.data()), name_bytes.size());
    bool fresh = false;
    switch (kind) {
      case kText:
        fresh = c.text.emplace(name, std::string(reinterpret_cast<const char*>(data.data()), data.size())).second;
        break;
      case kNumber: {
        if (data.size() != sizeof(uint64_t)) return DataLossError("number '" + name + "' is not 8 bytes");
        uint64_t v = 0;
        std::memcpy(&v, data.data(), sizeof(v));
        fresh = c.numbers.emplace(name, v).second;
        break;
      }
      case kTensor:
        if (data.size() % sizeof(float) != 0) return DataLossError("tensor '" + name + "' is not whole floats");
        fresh = c.tensors.emplace(name, ArrayOf<float>(data)).second;
        break;
      case kIndices:
        if (data.size() % sizeof(int64_t) != 0) return DataLossError("indices '" + name + "' are not whole int64s");
        fresh = c.indices.emplace(name, ArrayOf<int64_t>(data)).second;
        break;
      default:
        return DataLossError("checkpoint section '" + name + "' has unknown kind " + std::to_string(kind));
    }
    if (!fresh) return DataLossError("checkpoint section '" + name + "' appears twice");
  }
  if (!in.done()) return DataLossError("bytes after the checkpoint's last section");
  return c;
}

Status WriteCheckpoint(const std::string& path, const Checkpoint& checkpoint) {
  return WriteFileAtomically(path, EncodeCheckpoint(checkpoint));
}

StatusOr<Checkpoint> ReadCheckpoint(const std::string& path) {
  MURMUR_ASSIGN_OR_RETURN(const std::string bytes, ReadWholeFile(path, kMaxCheckpointBytes));
  auto decoded = DecodeCheckpoint(std::as_bytes(std::span(bytes.data(), bytes.size())));
  if (!decoded.ok()) return DataLossError("'" + path + "': " + std::string(decoded.status().message()));
  return decoded;
}

Status SaveModel(const std::string& path, const std::string& model, std::span<const float> params) {
  Checkpoint c;
  c.text["kind"] = "model";
  c.text["model"] = model;
  c.tensors["params"].assign(params.begin(), params.end());
  return WriteCheckpoint(path, c);
}

Status CheckTensorValues(const Checkpoint& checkpoint, const std::string& path) {
  for (const auto& [name, values] : checkpoint.tensors) {
    for (size_t i = 0; i < values.size(); ++i) {
      if (std::isfinite(values[i]) && std::fabs(values[i]) <= kMaxCheckpointValue) continue;
      return DataLossError(fmt::format("'{}': section '{}' holds {} at index {} (a value must be "
                                       "finite and within ±{:g})",
                                       path, name, values[i], i, kMaxCheckpointValue));
    }
  }
  return OkStatus();
}

StatusOr<std::vector<float>> LoadModel(const std::string& path, const std::string& model,
                                       size_t params) {
  MURMUR_ASSIGN_OR_RETURN(Checkpoint c, ReadCheckpoint(path));
  MURMUR_RETURN_IF_ERROR(CheckTensorValues(c, path));
  MURMUR_ASSIGN_OR_RETURN(const std::string saved, c.Text("model"));
  if (saved != model) {
    return FailedPreconditionError("'" + path + "' holds a " + saved + " model, not " + model);
  }
  MURMUR_ASSIGN_OR_RETURN(std::vector<float> values, c.Tensor("params"));
  if (values.size() != params) {
    return FailedPreconditionError("'" + path + "' holds " + std::to_string(values.size()) +
                                   " parameters, the model has " + std::to_string(params));
  }
  return values;
}

}  // namespace murmur::node
