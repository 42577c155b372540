#pragma once
// Dense operators at memory speed (internal to coding/; Compressor::Compress with an `encoded`
// output calls it). `none` and `fp16` build the Update and its EncodeUpdate bytes together:
// one read-only pass for what must be known first (finiteness; fp16's exponent window), then
// one pass that writes the values, the wire codes and, with error feedback, the new residual,
// block by block, hashing each block of codes while it is in L1. The separate copy, quantize,
// encode, checksum and residual passes did the same work in five trips through memory.
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

// `encoded` = EncodeUpdate(update) for a dense level-coded update of one byte per value, from
// the codes the quantizer wrote in its own pass (level | sign << 7). REQUIRES codes to encode
// update's values exactly.
void EncodeByteCodes(const Update& update, std::span<const uint8_t> codes,
                     std::vector<std::byte>& encoded);

}  // namespace murmur::coding::internal
