#pragma once
// Dense operators at memory speed (internal to coding/; Compressor::Compress with an `encoded`
// output calls it). `none` and `fp16` build the Update and its EncodeUpdate bytes together:
// one read-only pass for what must be known first (finiteness; fp16's exponent window), then
// one pass that writes the values, the wire codes and, with error feedback, the new residual,
// block by block, hashing each block of codes while it is in L1. The separate copy, quantize,
// encode, checksum and residual passes did the same work in five trips through memory.
// With AVX-512 the writing pass converts fp16 in hardware for every 16 values where that gives
// the definition's bits (Fp16Converter in the .cc says where it does not), and `none` writes each
// vector to the values and the payload from the register.
//
// The results are bit-identical to Compress + EncodeUpdate (DenseCodecTest in
// tests/coding/compressor_test.cc compares them at edge sizes and values).

#include <cstddef>
#include <span>
#include <vector>

#include "coding/update.h"

namespace murmur::coding::internal {

enum class DenseResult {
  kDone,
  // source (input, or residual + input) holds a NaN or infinity: the residual is untouched,
  // `out` and `encoded` hold unspecified contents.
  kNonFinite,
  // fp16 whose exponents span fewer than 32 binades packs fewer than 16 bits per value; the
  // caller takes the general path. Nothing was written.
  kNotHandled,
};

// op is kNone or kFp16. `residual` is empty without error feedback; with it, source =
// residual + input and the residual becomes source - sent. kNone never reads or writes the
// residual: sending every value exactly leaves it zero (source - source), so it stays as
// Create made it, and source = input + 0.0f is the same float as residual + input.
DenseResult CompressEncodeDense(Operator op, std::span<const float> input,
                                std::span<float> residual, Update& out,
                                std::vector<std::byte>& encoded);

// XXH3 of a payload fed block by block (the same digest as wire::Checksum's one-shot call).
class PayloadHash {
 public:
  PayloadHash();
  ~PayloadHash();
  PayloadHash(const PayloadHash&) = delete;
  PayloadHash& operator=(const PayloadHash&) = delete;
  void Add(const std::byte* data, size_t size);
  // Writes the header's checksum field: XXH3 of its first 32 bytes seeded with the payload's.
  void Finish(std::byte* header);

 private:
  void* state_;  // XXH3_state_t, whose header only coding/'s .cc files include
};

// Sizes `encoded` for the dense update `out` with IndexCoding::kAll and writes its header but
// the checksum; returns its first byte (the payload starts kUpdateHeaderBytes later).
std::byte* PrepareBytes(const Update& out, std::vector<std::byte>& encoded);

}  // namespace murmur::coding::internal
