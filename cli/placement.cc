#include "cli/placement.h"

#include <map>

#include "base/spec.h"
#include "fmt/format.h"

namespace murmur::node {
namespace {

StatusOr<int> ParseOrdinal(std::string_view text, std::string_view what) {
  const StatusOr<int> value = ParseNumber<int>(text, what);
  if (!value.ok() || *value < 0) {
    return InvalidArgumentError(
        fmt::format("{}: '{}' is not a GPU ordinal (0, 1, ...)", what, text));
  }
  return *value;
}

Status NotVisible(std::string_view what, int ordinal, int visible) {
  if (visible == 0) {
    return FailedPreconditionError(fmt::format(
        "{}: no CUDA device is visible to this process (no GPU, no driver, a build without CUDA, "
        "or CUDA_VISIBLE_DEVICES hides it); use --device cpu or auto",
        what));
  }
  return FailedPreconditionError(
      fmt::format("{}: GPU {} is not visible (this machine shows {})", what, ordinal, visible));
}

}  // namespace

StatusOr<std::vector<std::string>> PlaceNodes(const kernels::DeviceSpec& device,
                                              std::string_view gpus, int nodes, int visible_gpus,
                                              bool trains) {
  using Kind = kernels::DeviceSpec::Kind;
  const std::string what = fmt::format("--device {}", device.ToString());
  const bool is_auto = device.kind == Kind::kAuto;
  const bool any_cuda = device.kind == Kind::kAnyCuda;
  const bool one_cuda = device.kind == Kind::kCuda;
  const bool wants_gpu = device.wants_gpu();
  if (wants_gpu && !trains) {
    return FailedPreconditionError(
        fmt::format("{}: membership mode trains nothing; --device is for training", what));
  }
  std::vector<int> pool;
  if (!gpus.empty()) {
    if (!is_auto && !any_cuda) {
      return InvalidArgumentError(
          fmt::format("--gpus {} needs --device auto or cuda ({})", gpus, what));
    }
    for (size_t begin = 0; begin <= gpus.size();) {
      const size_t comma = std::min(gpus.find(',', begin), gpus.size());
      MURMUR_ASSIGN_OR_RETURN(int ordinal,
                              ParseOrdinal(gpus.substr(begin, comma - begin), "--gpus"));
      if (ordinal >= visible_gpus) return NotVisible("--gpus", ordinal, visible_gpus);
      pool.push_back(ordinal);
      begin = comma + 1;
    }
  }
  if (one_cuda) {
    if (device.index >= visible_gpus) return NotVisible(what, device.index, visible_gpus);
    pool = {device.index};
  }
  if (wants_gpu && visible_gpus == 0) return NotVisible(what, 0, 0);
  std::vector<std::string> out(static_cast<size_t>(nodes), "cpu");
  if (device.kind == Kind::kCpu || !trains || visible_gpus == 0) return out;
  if (pool.empty()) {
    for (int g = 0; g < visible_gpus; ++g) pool.push_back(g);
  }
  for (size_t i = 0; i < out.size(); ++i) out[i] = fmt::format("cuda:{}", pool[i % pool.size()]);
  return out;
}

std::string PlacementSummary(const std::vector<std::string>& devices) {
  std::map<std::string, int> count;
  for (const auto& d : devices) ++count[d];
  if (count.size() == 1) return count.begin()->first;
  std::string out;
  for (const auto& [d, n] : count) {
    out += fmt::format("{}{} ({} node{})", out.empty() ? "" : ", ", d, n, n == 1 ? "" : "s");
  }
  return out;
}

}  // namespace murmur::node
