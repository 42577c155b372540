#include "node/train/model_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

namespace murmur::node {

Status SaveParams(const std::string& path, std::span<const float> params) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return UnavailableError("cannot create '" + tmp + "'");
  const auto* bytes = reinterpret_cast<const char*>(params.data());
  size_t left = params.size_bytes();
  bool ok = true;
  while (left > 0 && ok) {
    const ssize_t wrote = ::write(fd, bytes, left);
    ok = wrote > 0;
    if (ok) bytes += wrote, left -= static_cast<size_t>(wrote);
  }
  ok = ok && ::fsync(fd) == 0;
  ok = (::close(fd) == 0) && ok;
  if (!ok) return UnavailableError("cannot write the model to '" + tmp + "'");
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return UnavailableError("cannot rename '" + tmp + "' to '" + path + "'");
  }
  return OkStatus();
}

StatusOr<std::vector<float>> LoadParams(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return NotFoundError("no saved model at '" + path + "'");
  const std::streamsize size = in.tellg();
  if (size % 4 != 0) return DataLossError("'" + path + "' is not a whole number of float32 values");
  std::vector<float> params(static_cast<size_t>(size / 4));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(params.data()), size);
  if (!in) return DataLossError("cannot read '" + path + "'");
  return params;
}

}  // namespace murmur::node
