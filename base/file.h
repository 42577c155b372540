#pragma once
// Durable whole-file replacement (leveldb's CURRENT-file discipline): the bytes go to a
// temporary file beside the target, which is fsynced, renamed over the target, and the directory
// fsynced, so a reader — or a process restarted after a crash at any instant — sees either the
// old file or the new one, never a mixture or a truncated file.

#include <cstddef>
#include <span>
#include <string>

#include "base/status.h"

namespace murmur {

// Replaces `path` with `bytes` (created with `mode`). kUnavailable, naming the step that failed,
// when the directory is missing or not writable or the disk is full; the temporary file is then
// removed and `path` keeps its previous contents.
Status WriteFileAtomically(const std::string& path, std::span<const std::byte> bytes,
                           unsigned mode = 0644);

// The whole file. kNotFound without one, kUnavailable when it cannot be read, kOutOfRange when it
// is larger than `max_bytes`.
StatusOr<std::string> ReadWholeFile(const std::string& path, size_t max_bytes);

}  // namespace murmur
