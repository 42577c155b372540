#pragma once
// The saved-model format: the parameters as raw little-endian float32, nothing else (what
// `--save-model` writes and `murmur local` reads back for the consensus distance).

#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace murmur::node {

// Writes a temporary file, fsyncs it and renames it over `path`: a reader never sees half a
// model. kUnavailable when the file cannot be written.
Status SaveParams(const std::string& path, std::span<const float> params);
// kNotFound without a file, kDataLoss for a size that is not a whole number of floats.
StatusOr<std::vector<float>> LoadParams(const std::string& path);

}  // namespace murmur::node
