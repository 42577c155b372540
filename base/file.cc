#include "base/file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace murmur {
namespace {

std::string Why(const std::string& what, const std::string& path) {
  return what + " '" + path + "': " + std::strerror(errno);
}

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

Status WriteFileAtomically(const std::string& path, std::span<const std::byte> bytes,
                           unsigned mode) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return UnavailableError(Why("cannot create", tmp));
  const auto* p = reinterpret_cast<const char*>(bytes.data());
  size_t left = bytes.size();
  std::string failed;
  while (left > 0 && failed.empty()) {
    const ssize_t wrote = ::write(fd, p, left);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) {
      failed = Why("cannot write", tmp);
    } else {
      p += wrote;
      left -= static_cast<size_t>(wrote);
    }
  }
  if (failed.empty() && ::fsync(fd) != 0) failed = Why("cannot fsync", tmp);
  if (::close(fd) != 0 && failed.empty()) failed = Why("cannot close", tmp);
  if (failed.empty() && std::rename(tmp.c_str(), path.c_str()) != 0) {
    failed = Why("cannot rename it to", path);
  }
  if (!failed.empty()) {
    ::unlink(tmp.c_str());
    return UnavailableError(failed);
  }
  // The rename is durable only once the directory entry is.
  const std::string dir = DirectoryOf(path);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return UnavailableError(Why("cannot open the directory", dir));
  const bool synced = ::fsync(dfd) == 0;
  ::close(dfd);
  if (!synced) return UnavailableError(Why("cannot fsync the directory", dir));
  return OkStatus();
}

Status CheckWritableFilePath(const std::string& path, std::string_view what) {
  const std::string key(what);
  if (path.empty() || path.back() == '/') {
    return InvalidArgumentError(key + " '" + path + "' names a directory, not a file");
  }
  const std::string dir = DirectoryOf(path);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    return InvalidArgumentError(key + " '" + path + "': " + Why("no directory", dir));
  }
  if (!S_ISDIR(st.st_mode)) {
    return InvalidArgumentError(key + " '" + path + "': '" + dir + "' is not a directory");
  }
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return InvalidArgumentError(key + " '" + path + "' is a directory, not a file");
  }
  // A probe of a name of its own (O_EXCL through mkstemp): a file already there, such as the
  // write's own temporary of another run, is neither truncated nor removed.
  std::string probe = dir + "/.murmur-write-check-XXXXXX";
  const int fd = ::mkostemp(probe.data(), O_CLOEXEC);
  if (fd < 0) {
    return InvalidArgumentError(key + " '" + path + "': " + Why("cannot create a file in", dir));
  }
  ::close(fd);
  ::unlink(probe.c_str());
  return OkStatus();
}

StatusOr<std::string> ReadWholeFile(const std::string& path, size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFoundError("no file '" + path + "'");
    return UnavailableError(Why("cannot open", path));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return UnavailableError("'" + path + "' is not a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    return OutOfRangeError("'" + path + "' is larger than " + std::to_string(max_bytes) + " bytes");
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  if (got != text.size()) return UnavailableError("'" + path + "' changed size while being read");
  return text;
}

StatusOr<MappedFile> MapFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return errno == ENOENT ? NotFoundError(Why("cannot open", path))
                           : UnavailableError(Why("cannot open", path));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const Status s = UnavailableError(Why("cannot stat", path));
    ::close(fd);
    return s;
  }
  MappedFile out;
  out.size = static_cast<size_t>(st.st_size);
  if (out.size == 0) {
    ::close(fd);
    return out;
  }
  void* p = ::mmap(nullptr, out.size, PROT_READ, MAP_SHARED, fd, 0);
  const Status failed = p == MAP_FAILED ? UnavailableError(Why("cannot map", path)) : OkStatus();
  ::close(fd);  // the mapping keeps the file
  if (!failed.ok()) return failed;
  const size_t size = out.size;
  out.data = std::shared_ptr<const std::byte>(
      static_cast<const std::byte*>(p),
      [size](const std::byte* q) { ::munmap(const_cast<std::byte*>(q), size); });
  return out;
}

void MappedFile::DropResidentPages() const {
  if (data != nullptr) ::madvise(const_cast<std::byte*>(data.get()), size, MADV_DONTNEED);
}

}  // namespace murmur
