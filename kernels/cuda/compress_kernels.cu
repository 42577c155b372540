// The compression kernels of kernels/compress_ops.h on the GPU. Selections compact with CUB
// (DeviceSelect keeps input order, so indices come out increasing); exact top-k is a radix
// select over the magnitude bits that never leaves the device between its passes; the rest are
// element-wise or reductions. Each matches the CPU version in kernels/cpu bit for bit.
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>
#include <cuda_fp16.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/tabulate_output_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <string>

#include "kernels/compress_ops.h"
#include "kernels/cuda/cuda_context.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/elementwise.cuh"

namespace murmur::kernels::cuda {
namespace {

__device__ __forceinline__ uint32_t Key(float v) { return __float_as_uint(v) & 0x7fffffffu; }

// Reductions into Scalars: count of non-finite, Σ v² (double), max magnitude key (NaN skipped).
__global__ void ReduceKernel(int64_t n, const float* v, Scalars* out) {
  unsigned long long non_finite = 0;
  double squares = 0;
  uint32_t max_key = 0;
  MURMUR_FOR_EACH(i, n) {
    const float x = v[i];
    const uint32_t key = Key(x);
    non_finite += key >= 0x7f800000u;
    squares += static_cast<double>(x) * x;
    if (key <= 0x7f800000u && key > max_key) max_key = key;
  }
  squares = WarpSum(squares);
  for (int offset = 16; offset > 0; offset /= 2) {
    non_finite += __shfl_down_sync(0xffffffffu, non_finite, offset);
    max_key = max(max_key, __shfl_down_sync(0xffffffffu, max_key, offset));
  }
  if (threadIdx.x % 32 == 0) {
    if (non_finite) atomicAdd(&out->count, non_finite);
    atomicAdd(&out->sum, squares);
    atomicMax(&out->max_key, max_key);
  }
}

StatusOr<Scalars> Reduce(const Device& device, std::span<const float> v, const char* what) {
  MURMUR_ASSIGN_OR_RETURN(Context * context, GetContext(device));
  MURMUR_RETURN_IF_ERROR(ResetScalars(*context));
  const auto n = static_cast<int64_t>(v.size());
  if (n > 0) {
    ReduceKernel<<<ResidentBlocks(*context, n), kThreads>>>(n, v.data(), context->device_scalars);
    MURMUR_RETURN_IF_ERROR(CheckLaunch(what));
  }
  return ReadScalars(*context, what);
}

// Runs a CUB algorithm twice (size query, then the work) with the context's scratch.
template <typename F>
Status RunCub(Context& context, F f, const char* what) {
  size_t bytes = 0;
  MURMUR_RETURN_IF_ERROR(Check(f(nullptr, bytes), what));
  MURMUR_ASSIGN_OR_RETURN(void* temp, Temp(context, bytes));
  return Check(f(temp, bytes), what);
}

// Selected position j of input position i goes to (indices, values)[j] while j < capacity.
struct Emit {
  uint32_t* indices;
  float* values;
  const float* v;
  int64_t capacity;
  __device__ void operator()(int64_t j, uint32_t i) const {
    if (j < capacity) {
      indices[j] = i;
      values[j] = v[i];
    }
  }
};

// Compacts the positions where pred(i) holds, in order; returns how many did.
template <typename Pred>
StatusOr<int64_t> Compact(const Device& device, std::span<const float> v, Pred pred,
                          std::span<uint32_t> indices, std::span<float> values,
                          const char* what) {
  MURMUR_ASSIGN_OR_RETURN(Context * context, GetContext(device));
  MURMUR_RETURN_IF_ERROR(ResetScalars(*context));
  const auto n = static_cast<int64_t>(v.size());
  if (n == 0) return int64_t{0};
  auto out = thrust::make_tabulate_output_iterator(
      Emit{indices.data(), values.data(), v.data(), static_cast<int64_t>(indices.size())});
  auto* selected = &context->device_scalars->count;
  MURMUR_RETURN_IF_ERROR(RunCub(
      *context,
      [&](void* temp, size_t& bytes) {
        return cub::DeviceSelect::If(temp, bytes, thrust::counting_iterator<uint32_t>(0), out,
                                     selected, n, pred);
      },
      what));
  MURMUR_ASSIGN_OR_RETURN(Scalars s, ReadScalars(*context, what));
  return static_cast<int64_t>(s.count);
}

struct AtLeast {
  const float* v;
  float tau;
  __device__ bool operator()(uint32_t i) const { return fabsf(v[i]) >= tau; }
};

// Radix select state, in device memory between the passes.
struct RadixState {
  uint32_t prefix;              // digits of the k-th largest key found so far
  uint32_t mask;                // which bits of prefix are decided
  unsigned long long remaining; // rank of the wanted key among keys matching prefix/mask
  unsigned long long equal;     // after the last pass: how many keys equal the threshold
};

// Whole warps run every iteration (blockDim.x is a multiple of 32 and the loop bound is the
// block's), so the warp-wide votes below see all 32 lanes. Lanes with the same digit add once
// per warp: the top digit of |x| is one or two values for most data (the exponent), and 32 lanes
// adding to one shared counter serialize; ResidentBlocks keeps the grid to the blocks the
// device holds at once, so each adds its warps' counts once.
__global__ void HistogramKernel(int64_t n, const float* v, const RadixState* state, int shift,
                                unsigned long long* histogram) {
  __shared__ unsigned int local[256];
  for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
  __syncthreads();
  const uint32_t prefix = state->prefix, mask = state->mask;
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * blockDim.x; base < n; base += stride) {
    const int64_t i = base + threadIdx.x;
    uint32_t key = 0;
    bool take = false;
    if (i < n) {
      key = Key(v[i]);
      take = (key & mask) == prefix;
    }
    const unsigned voters = __ballot_sync(0xffffffffu, take);
    if (take) {
      const uint32_t digit = (key >> shift) & 0xffu;
      const unsigned peers = __match_any_sync(voters, digit);
      if (__ffs(peers) - 1 == lane) atomicAdd(&local[digit], static_cast<unsigned>(__popc(peers)));
    }
  }
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += blockDim.x) {
    if (local[b]) atomicAdd(&histogram[b], static_cast<unsigned long long>(local[b]));
  }
}

// One thread: the bucket holding the remaining-th largest, from the top.
__global__ void PickBucketKernel(RadixState* state, int shift,
                                 const unsigned long long* histogram) {
  unsigned long long above = 0;
  for (int b = 255; b >= 0; --b) {
    if (above + histogram[b] >= state->remaining || b == 0) {
      state->prefix |= static_cast<uint32_t>(b) << shift;
      state->mask |= 0xffu << shift;
      state->remaining -= above;
      state->equal = histogram[b];
      return;
    }
    above += histogram[b];
  }
}

struct TopKPick {
  const float* v;
  uint32_t threshold;
  __device__ bool operator()(uint32_t i) const { return Key(v[i]) >= threshold; }
};

// The slow path when the threshold key is tied beyond what k takes: rank[i] = number of tied
// entries before i (an exclusive scan of the tie flags).
struct TieFlag {
  const float* v;
  uint32_t threshold;
  __device__ uint32_t operator()(int64_t i) const { return Key(v[i]) == threshold ? 1u : 0u; }
};
struct TopKPickTies {
  const float* v;
  const uint32_t* rank;
  uint32_t threshold;
  unsigned long long take;
  __device__ bool operator()(uint32_t i) const {
    const uint32_t key = Key(v[i]);
    return key > threshold || (key == threshold && rank[i] < take);
  }
};

template <typename L>
__global__ void LevelsKernel(int64_t n, const float* v, LevelScale scale, uint32_t levels,
                             uint32_t seed, L* out) {
  MURMUR_FOR_EACH(i, n) {
    const float x = v[i];
    const auto l = static_cast<L>(
        StochasticLevel(fabsf(x), scale, levels, LevelDraw(seed, static_cast<uint32_t>(i))));
    out[i] = signbit(x) ? static_cast<L>(-l) : l;
  }
}

}  // namespace

Status CountNonFinite(const Device& device, std::span<const float> v, int64_t* count) {
  MURMUR_ASSIGN_OR_RETURN(Scalars s, Reduce(device, v, "CountNonFinite"));
  *count = static_cast<int64_t>(s.count);
  return OkStatus();
}

Status SumOfSquares(const Device& device, std::span<const float> v, double* out) {
  MURMUR_ASSIGN_OR_RETURN(Scalars s, Reduce(device, v, "SumOfSquares"));
  *out = s.sum;
  return OkStatus();
}

Status MaxAbs(const Device& device, std::span<const float> v, float* out) {
  MURMUR_ASSIGN_OR_RETURN(Scalars s, Reduce(device, v, "MaxAbs"));
  uint32_t key = s.max_key;
  static_assert(sizeof(float) == sizeof(uint32_t));
  __builtin_memcpy(out, &key, sizeof(key));
  return OkStatus();
}

Status Axpy(const Device& device, float alpha, std::span<const float> x, std::span<float> y) {
  const float* in = x.data();
  float* out = y.data();
  return ForEach(
      device, static_cast<int64_t>(x.size()), [=] __device__(int64_t i) { out[i] += alpha * in[i]; },
      "Axpy");
}

Status SelectAtLeast(const Device& device, std::span<const float> v, float tau,
                     std::span<uint32_t> indices, std::span<float> values, int64_t* total) {
  MURMUR_ASSIGN_OR_RETURN(*total, Compact(device, v, AtLeast{v.data(), tau}, indices, values,
                                          "SelectAtLeast"));
  return OkStatus();
}

Status TopK(const Device& device, std::span<const float> v, int64_t k,
            std::span<uint32_t> indices, std::span<float> values, int64_t* count) {
  constexpr const char* kOp = "TopK";
  const auto n = static_cast<int64_t>(v.size());
  *count = 0;
  if (k == 0 || n == 0) return OkStatus();
  if (k > n) k = n;
  MURMUR_ASSIGN_OR_RETURN(Context * context, GetContext(device));
  // Scratch layout: the state, then 4 histograms of 256 (the selection reuses the scratch once
  // the threshold has been read back).
  constexpr size_t kHeader = 256 + 4 * 256 * sizeof(unsigned long long);
  MURMUR_ASSIGN_OR_RETURN(void* temp, Temp(*context, kHeader));
  auto* state = static_cast<RadixState*>(temp);
  auto* histograms = reinterpret_cast<unsigned long long*>(static_cast<char*>(temp) + 256);
  const RadixState initial{0, 0, static_cast<unsigned long long>(k), 0};
  MURMUR_RETURN_IF_ERROR(
      Check(cudaMemcpy(state, &initial, sizeof(initial), cudaMemcpyHostToDevice), kOp));
  MURMUR_RETURN_IF_ERROR(
      Check(cudaMemsetAsync(histograms, 0, 4 * 256 * sizeof(unsigned long long)), kOp));
  // Four 8-bit digits from the top; the state stays on the device, so no host round trip until
  // the threshold is known.
  for (int pass = 0; pass < 4; ++pass) {
    const int shift = 24 - 8 * pass;
    HistogramKernel<<<ResidentBlocks(*context, n), kThreads>>>(n, v.data(), state, shift,
                                                               histograms + 256 * pass);
    MURMUR_RETURN_IF_ERROR(CheckLaunch(kOp));
    PickBucketKernel<<<1, 1>>>(state, shift, histograms + 256 * pass);
    MURMUR_RETURN_IF_ERROR(CheckLaunch(kOp));
  }
  RadixState found{};
  MURMUR_RETURN_IF_ERROR(
      Check(cudaMemcpy(&found, state, sizeof(found), cudaMemcpyDeviceToHost), kOp));
  // found.prefix is the k-th largest magnitude key. A zero threshold means fewer than k
  // non-zeros: take them all (zeros are never selected).
  const uint32_t threshold = found.prefix == 0 ? 1u : found.prefix;
  int64_t selected = 0;
  if (found.prefix == 0 || found.remaining == found.equal) {
    MURMUR_ASSIGN_OR_RETURN(selected,
                            Compact(device, v, TopKPick{v.data(), threshold}, indices, values, kOp));
  } else {
    // Only `remaining` of the tied entries fit: rank the ties by index (an exclusive scan of
    // the tie flags into a buffer of its own, since the selection reuses the scratch).
    uint32_t* rank = nullptr;
    MURMUR_RETURN_IF_ERROR(Check(cudaMalloc(&rank, sizeof(uint32_t) * n), kOp));
    auto flags = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0),
                                                 TieFlag{v.data(), threshold});
    Status scanned = RunCub(
        *context,
        [&](void* t, size_t& bytes) {
          return cub::DeviceScan::ExclusiveSum(t, bytes, flags, rank, n);
        },
        kOp);
    if (scanned.ok()) {
      auto picked = Compact(device, v, TopKPickTies{v.data(), rank, threshold, found.remaining},
                            indices, values, kOp);
      scanned = picked.status();
      if (picked.ok()) selected = *picked;
    }
    cudaFree(rank);
    MURMUR_RETURN_IF_ERROR(scanned);
  }
  *count = selected;
  return OkStatus();
}

Status Gather(const Device& device, std::span<const float> v, std::span<const uint32_t> indices,
              std::span<float> values) {
  const float* in = v.data();
  const uint32_t* index = indices.data();
  float* out = values.data();
  return ForEach(
      device, static_cast<int64_t>(indices.size()),
      [=] __device__(int64_t i) { out[i] = in[index[i]]; }, "Gather");
}

Status StridedGather(const Device& device, std::span<const float> v, int64_t start,
                     int64_t stride, std::span<float> out) {
  const float* in = v.data();
  float* o = out.data();
  return ForEach(
      device, static_cast<int64_t>(out.size()),
      [=] __device__(int64_t i) { o[i] = in[start + i * stride]; }, "StridedGather");
}

Status ScatterAdd(const Device& device, std::span<const uint32_t> indices,
                  std::span<const float> values, float alpha, std::span<float> x) {
  const uint32_t* index = indices.data();
  const float* in = values.data();
  float* out = x.data();
  return ForEach(
      device, static_cast<int64_t>(indices.size()),
      [=] __device__(int64_t i) { out[index[i]] += alpha * in[i]; }, "ScatterAdd");
}

Status PackSigns(const Device& device, std::span<const float> v, std::span<uint32_t> words) {
  // One warp per word: each lane contributes its sign bit, __ballot_sync assembles the word.
  const float* in = v.data();
  uint32_t* out = words.data();
  const auto n = static_cast<int64_t>(v.size());
  const auto lanes = static_cast<int64_t>(words.size()) * 32;
  return ForEach(
      device, lanes,
      [=] __device__(int64_t i) {
        const bool negative = i < n && signbit(in[i]);
        const uint32_t word = __ballot_sync(__activemask(), negative);
        if (i % 32 == 0) out[i / 32] = word;
      },
      "PackSigns");
}

Status UnpackSigns(const Device& device, std::span<const uint32_t> words, float magnitude,
                   std::span<float> out) {
  const uint32_t* in = words.data();
  float* o = out.data();
  return ForEach(
      device, static_cast<int64_t>(out.size()),
      [=] __device__(int64_t i) {
        o[i] = (in[i / 32] >> (i % 32)) & 1u ? -magnitude : magnitude;
      },
      "UnpackSigns");
}

template <typename L>
Status StochasticLevels(const Device& device, std::span<const float> v, double per_level,
                        uint32_t levels, uint64_t seed, std::span<L> out) {
  const auto n = static_cast<int64_t>(v.size());
  if (n == 0) return OkStatus();
  MURMUR_RETURN_IF_ERROR(GetContext(device).status());
  LevelsKernel<L><<<Blocks(n), kThreads>>>(n, v.data(), MakeLevelScale(per_level), levels,
                                           LevelSeed(seed), out.data());
  return CheckLaunch("StochasticLevels");
}

template <typename L>
Status LevelsToFloat(const Device& device, std::span<const L> level, float scale,
                     uint32_t levels, std::span<float> out) {
  const L* in = level.data();
  float* o = out.data();
  return ForEach(
      device, static_cast<int64_t>(level.size()),
      [=] __device__(int64_t i) {
        const int l = in[i];
        const auto magnitude =
            static_cast<float>(static_cast<double>(scale) * (l < 0 ? -l : l) / levels);
        o[i] = l < 0 ? -magnitude : magnitude;
      },
      "LevelsToFloat");
}

#define MURMUR_KERNEL MURMUR_INSTANTIATE_CUDA_KERNEL
#include "kernels/compress_ops.inc"

Status FloatToHalf(const Device& device, std::span<const float> v, std::span<uint16_t> out) {
  const float* in = v.data();
  uint16_t* o = out.data();
  return ForEach(
      device, static_cast<int64_t>(v.size()),
      [=] __device__(int64_t i) { o[i] = __half_as_ushort(__float2half_rn(in[i])); },
      "FloatToHalf");
}

Status HalfToFloat(const Device& device, std::span<const uint16_t> h, std::span<float> out) {
  const uint16_t* in = h.data();
  float* o = out.data();
  return ForEach(
      device, static_cast<int64_t>(h.size()),
      [=] __device__(int64_t i) { o[i] = __half2float(__ushort_as_half(in[i])); },
      "HalfToFloat");
}

}  // namespace murmur::kernels::cuda
