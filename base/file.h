#pragma once
// Durable whole-file replacement (leveldb's CURRENT-file discipline): the bytes go to a
// temporary file beside the target, which is fsynced, renamed over the target, and the directory
// fsynced, so a reader — or a process restarted after a crash at any instant — sees either the
// old file or the new one, never a mixture or a truncated file.

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"

namespace murmur {

// Replaces `path` with `bytes` (created with `mode`). kUnavailable, naming the step that failed,
// when the directory is missing or not writable or the disk is full; the temporary file is then
// removed and `path` keeps its previous contents.
Status WriteFileAtomically(const std::string& path, std::span<const std::byte> bytes,
                           unsigned mode = 0644);

// Whether WriteFileAtomically(path, ...) can work, asked before hours of work that end in it:
// kInvalidArgument naming `what` (the key that gave the path) when the directory is missing or
// not a directory, `path` is a directory, or a file cannot be created beside it (tried with a
// fresh name of its own, removed again). No existing file is touched.
Status CheckWritableFilePath(const std::string& path, std::string_view what);

// The whole file. kNotFound without one, kUnavailable when it cannot be read, kOutOfRange when it
// is larger than `max_bytes`.
StatusOr<std::string> ReadWholeFile(const std::string& path, size_t max_bytes);

// A whole file mapped read-only and shared (MAP_SHARED): every process that maps it reads the
// same page-cache pages. The mapping lives as long as any copy of `data` (or an aliasing
// pointer into it); the file may be replaced by a rename meanwhile without changing it.
struct MappedFile {
  std::shared_ptr<const std::byte> data;  // null for an empty file
  size_t size = 0;
  // Lets the kernel drop this process's resident pages (MADV_DONTNEED; they stay in the page
  // cache and come back on the next read), e.g. after a checksum pass over the whole file.
  void DropResidentPages() const;
};
// kNotFound without the file, kUnavailable when it cannot be opened or mapped.
StatusOr<MappedFile> MapFile(const std::string& path);

}  // namespace murmur
