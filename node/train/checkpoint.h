#pragma once
// The checkpoint file: named, typed sections, self-describing and checksummed. One format for
// every saved state — a node's periodic checkpoint (model, optimizer state, public copy, clocks,
// RNG, configuration hash) and `--save-model`'s final parameters — so `murmur train --init-from`
// loads either.
//
// Layout (little-endian):
//   "MURMURCK" | u32 format version (1) | u32 section count
//   per section: u8 kind | u16 name length | name | u64 byte length | bytes
//   u64 XXH3-64 of everything before it
// Kinds: 1 text (UTF-8), 2 number (u64), 3 tensor (f32 array), 4 indices (i64 array).
// Sections are written sorted by kind, then name; a name appears once.
// Thread safety: free functions; a Checkpoint is a plain value.

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace murmur::node {

struct Checkpoint {
  std::map<std::string, std::string> text;
  std::map<std::string, uint64_t> numbers;
  std::map<std::string, std::vector<float>> tensors;
  std::map<std::string, std::vector<int64_t>> indices;

  // kNotFound naming the section when it is absent.
  StatusOr<std::string> Text(const std::string& name) const;
  StatusOr<uint64_t> Number(const std::string& name) const;
  StatusOr<std::vector<float>> Tensor(const std::string& name) const;
  StatusOr<std::vector<int64_t>> Indices(const std::string& name) const;
};

inline constexpr uint32_t kCheckpointVersion = 1;
// Limits a reader enforces before allocating (a hostile or corrupt file costs nothing more).
inline constexpr size_t kMaxCheckpointBytes = size_t{16} << 30;
inline constexpr size_t kMaxCheckpointSections = 1024;
inline constexpr size_t kMaxSectionName = 255;

// A value a tensor section may hold: trained parameters, optimizer moments and CHOCO copies stay
// orders of magnitude below it; a larger or non-finite one is a damaged or forged file (a
// checksum recomputed over it proves nothing).
inline constexpr float kMaxCheckpointValue = 1e8f;
// kDataLoss naming the section, the index and the value of the first tensor value that is not
// finite or beyond ±kMaxCheckpointValue; `path` names the file.
Status CheckTensorValues(const Checkpoint& checkpoint, const std::string& path);

std::vector<std::byte> EncodeCheckpoint(const Checkpoint& checkpoint);
// kDataLoss saying what is wrong: not a checkpoint, another version, truncated, a bad checksum,
// a section that overruns the file or does not divide into its element size, a name repeated.
StatusOr<Checkpoint> DecodeCheckpoint(std::span<const std::byte> bytes);

// Durable replacement (base/file.h); kUnavailable when it cannot be written.
Status WriteCheckpoint(const std::string& path, const Checkpoint& checkpoint);
// kNotFound without a file, kDataLoss for one that does not decode.
StatusOr<Checkpoint> ReadCheckpoint(const std::string& path);

// `--save-model` and `--init-from`: a checkpoint of kind "model" with the model's description
// (ModelSpec::ToString) and its parameters.
Status SaveModel(const std::string& path, const std::string& model, std::span<const float> params);
// The parameters of any checkpoint that holds them (a saved model or a node's checkpoint).
// kFailedPrecondition when it was made for another model (`model` differs) or has another size;
// kDataLoss when a value fails CheckTensorValues.
StatusOr<std::vector<float>> LoadModel(const std::string& path, const std::string& model,
                                       size_t params);

}  // namespace murmur::node
