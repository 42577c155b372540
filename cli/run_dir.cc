#include "cli/run_dir.h"

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>

#include "base/file.h"
#include "base/log.h"

namespace murmur::node {

Status MakeRunDir(const std::filesystem::path& dir, std::string_view key) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error || !std::filesystem::is_directory(dir)) {
    return InvalidArgumentError(fmt::format("{}: cannot create the directory '{}'{}", key,
                                            dir.string(), error ? ": " + error.message() : ""));
  }
  return OkStatus();
}

SeriesWriter::~SeriesWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void SeriesWriter::Write(uint64_t id, std::string_view object, std::string_view injection) {
  if (failed_ || object.size() < 2 || object.front() != '{') return;
  if (file_ == nullptr) {
    const std::filesystem::path dir = run_dir_ / "series";
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    const std::string path = (dir / fmt::format("node-{}.jsonl", id)).string();
    file_ = std::fopen(path.c_str(), "a");
    if (file_ == nullptr) {
      failed_ = true;
      MURMUR_LOG_ERROR("run dir: cannot append to '{}': {}; this node's time series is not kept",
                       path, std::strerror(errno));
      return;
    }
  }
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const bool empty = object.size() == 2;
  const std::string line =
      fmt::format("{{\"time\":{:.3f},\"injection\":{}{}{}\n", now, nlohmann::json(injection).dump(),
                  empty ? "" : ",", object.substr(1));
  if (std::fputs(line.c_str(), file_) < 0 || std::fflush(file_) != 0) {
    failed_ = true;
    MURMUR_LOG_ERROR("run dir: writing node {}'s time series failed: {}; no more is kept", id,
                     std::strerror(errno));
  }
}

Status WriteRunFile(const std::filesystem::path& dir, const std::string& name,
                    std::string_view text) {
  return WriteFileAtomically((dir / name).string(),
                             std::as_bytes(std::span<const char>(text.data(), text.size())));
}

}  // namespace murmur::node
