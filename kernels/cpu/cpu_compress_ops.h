#pragma once
// The host versions of kernels/compress_ops.h, `void Op(parameters)` for every entry of
// kernels/compress_ops.inc: plain loops written for obviousness. They are the reference the CUDA
// versions are compared with, so they define every tie and rounding. Shapes are checked by
// kernels/compress_ops.cc.

#include <cstdint>
#include <span>

#include "kernels/compress_ops.h"

namespace murmur::kernels::cpu {

#define MURMUR_KERNEL MURMUR_DECLARE_HOST_KERNEL
#include "kernels/compress_ops.inc"  // IWYU pragma: export

}  // namespace murmur::kernels::cpu
