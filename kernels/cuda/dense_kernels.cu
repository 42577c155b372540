// The training kernels of kernels/ops.h on the GPU: cuBLAS GEMM (fp32 or TF32) and hand-written
// element-wise, row and column kernels. Row-major views with a stride, 64-bit indexing, double
// accumulation wherever a sum spans a whole batch or column (so the result matches the CPU
// reference to fp32 rounding, whatever the size).
#include <cfloat>
#include <climits>
#include <string>

#include "kernels/cuda/cuda_context.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/elementwise.cuh"

namespace murmur::kernels::cuda {
namespace {

// Element (r, c) of an n = rows * cols grid-stride loop.
template <typename F>
__global__ void MatrixKernel(int64_t rows, int64_t cols, F f) {
  MURMUR_FOR_EACH(i, rows * cols) { f(i / cols, i % cols); }
}

template <typename F>
Status LaunchMatrix(const Device& device, int64_t rows, int64_t cols, F f, const char* what) {
  if (rows * cols == 0) return OkStatus();
  MURMUR_RETURN_IF_ERROR(GetContext(device).status());
  MatrixKernel<<<Blocks(rows * cols), kThreads>>>(rows, cols, f);
  return CheckLaunch(what);
}

// Sum over the block of one double per thread; the result is valid in thread 0.
__device__ double BlockSum(double v) {
  __shared__ double partial[32];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) / 32;
  v = threadIdx.x < warps ? partial[threadIdx.x] : 0.0;
  if (warp == 0) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  }
  return v;
}

// Column sums, optionally through the ReLU mask: dx = relu'(y) * dy is written when `mask`, and
// db[c] = Σ_r dx(r, c) (or dy) is accumulated in double into `acc` (zeroed by the caller).
// Block (32, 8): 32 adjacent columns (coalesced rows), 8 row lanes; grid.y splits the rows.
__global__ void ColumnSumKernel(int64_t rows, int64_t cols, const float* y, int64_t y_stride,
                                const float* dy, int64_t dy_stride, float* dx, int64_t dx_stride,
                                bool mask, double* acc) {
  __shared__ double partial[8][33];
  const int64_t c = blockIdx.x * 32LL + threadIdx.x;
  double sum = 0;
  if (c < cols) {
    for (int64_t r = blockIdx.y * 8LL + threadIdx.y; r < rows; r += gridDim.y * 8LL) {
      float g = dy[r * dy_stride + c];
      if (mask) {
        g = y[r * y_stride + c] > 0.0f ? g : 0.0f;
        dx[r * dx_stride + c] = g;
      }
      sum += g;
    }
  }
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    for (int i = 1; i < 8; ++i) sum += partial[i][threadIdx.x];
    atomicAdd(acc + c, sum);
  }
}

__global__ void DoubleToFloatKernel(int64_t n, const double* in, float* out) {
  MURMUR_FOR_EACH(i, n) { out[i] = static_cast<float>(in[i]); }
}

Status ColumnSum(const Device& device, ConstMatrixView<float> y, ConstMatrixView<float> dy,
                 MatrixView<float> dx, bool mask, std::span<float> db, const char* what) {
  const int64_t rows = dy.rows, cols = dy.cols;
  if (cols == 0) return OkStatus();
  MURMUR_ASSIGN_OR_RETURN(Context * context, GetContext(device));
  MURMUR_ASSIGN_OR_RETURN(void* temp, Temp(*context, sizeof(double) * static_cast<size_t>(cols)));
  auto* acc = static_cast<double*>(temp);
  MURMUR_RETURN_IF_ERROR(Check(cudaMemsetAsync(acc, 0, sizeof(double) * cols), what));
  if (rows > 0) {
    const int64_t column_blocks = (cols + 31) / 32;
    // Enough blocks to fill the GPU (a few thousand), each with >= 64 rows per lane.
    int64_t row_blocks = (rows + 511) / 512;
    const int64_t cap = column_blocks >= 4096 ? 1 : 4096 / column_blocks;
    if (row_blocks > cap) row_blocks = cap;
    if (row_blocks > 65535) row_blocks = 65535;
    if (column_blocks > INT_MAX) return InvalidArgumentError(std::string(what) + ": too many columns");
    dim3 grid(static_cast<unsigned>(column_blocks), static_cast<unsigned>(row_blocks));
    ColumnSumKernel<<<grid, dim3(32, 8)>>>(rows, cols, y.data, y.stride, dy.data, dy.stride,
                                          dx.data, dx.stride, mask, acc);
    MURMUR_RETURN_IF_ERROR(CheckLaunch(what));
  }
  DoubleToFloatKernel<<<Blocks(cols), kThreads>>>(cols, acc, db.data());
  return CheckLaunch(what);
}

// One warp per row: max, Σ exp, probabilities, and the row's -log p(label) into a block sum.
__global__ void SoftmaxKernel(int64_t rows, int64_t cols, const float* logits,
                              int64_t logits_stride, const int32_t* labels, float* probs,
                              int64_t probs_stride, Scalars* scalars) {
  const int lane = threadIdx.x % 32;
  const int64_t row = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) / 32;
  double loss = 0;
  if (row < rows) {
    const float* in = logits + row * logits_stride;
    float* out = probs + row * probs_stride;
    float max = -FLT_MAX;
    for (int64_t c = lane; c < cols; c += 32) max = fmaxf(max, in[c]);
    for (int offset = 16; offset > 0; offset /= 2) {
      max = fmaxf(max, __shfl_xor_sync(0xffffffffu, max, offset));
    }
    float sum = 0;
    for (int64_t c = lane; c < cols; c += 32) sum += expf(in[c] - max);
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    const float inv = 1.0f / sum;
    // The same -log softmax as the CPU: log(sum) - (z_label - max), exact when p underflows.
    // `in` may be `out` (probs may alias logits): read the label's logit before writing.
    const int32_t label = labels[row];
    const bool valid = label >= 0 && label < cols;
    if (lane == 0) {
      if (valid) {
        loss = static_cast<double>(logf(sum)) - (static_cast<double>(in[label]) - max);
      } else {
        atomicAdd(&scalars->bad, 1ULL);
      }
    }
    __syncwarp();
    for (int64_t c = lane; c < cols; c += 32) out[c] = expf(in[c] - max) * inv;
  }
  loss = BlockSum(loss);
  if (threadIdx.x == 0) atomicAdd(&scalars->sum, loss);
}

// The mean over rows of per-row terms f(r), summed in double into scalars->sum.
template <typename F>
__global__ void RowLossKernel(int64_t rows, F f, Scalars* scalars) {
  double loss = 0;
  MURMUR_FOR_EACH(r, rows) { loss += f(r); }
  loss = BlockSum(loss);
  if (threadIdx.x == 0) atomicAdd(&scalars->sum, loss);
}

template <typename F>
Status RowLoss(const Device& device, int64_t rows, F f, float* loss, const char* what) {
  MURMUR_ASSIGN_OR_RETURN(Context * context, GetContext(device));
  MURMUR_RETURN_IF_ERROR(ResetScalars(*context));
  if (rows > 0) {
    RowLossKernel<<<Blocks(rows), kThreads>>>(rows, f, context->device_scalars);
    MURMUR_RETURN_IF_ERROR(CheckLaunch(what));
  }
  MURMUR_ASSIGN_OR_RETURN(Scalars s, ReadScalars(*context, what));
  *loss = rows == 0 ? 0.0f : static_cast<float>(s.sum / static_cast<double>(rows));
  return OkStatus();
}

Status BadCount(Context& context, const char* what, const std::string& message) {
  MURMUR_ASSIGN_OR_RETURN(Scalars s, ReadScalars(context, what));
  if (s.bad > 0) {
    return InvalidArgumentError(std::string(what) + ": " + std::to_string(s.bad) + " " + message);
  }
  return OkStatus();
}

}  // namespace

template <typename T>
Status Gemm(const Device& device, Transpose trans_a, Transpose trans_b, T alpha,
            ConstMatrixView<T> a, ConstMatrixView<T> b, T beta, MatrixView<T> c) {
  const int64_t m = c.rows, n = c.cols;
  const int64_t k = trans_a == Transpose::kNo ? a.cols : a.rows;
  if (m == 0 || n == 0) return OkStatus();
  MURMUR_ASSIGN_OR_RETURN(Context * context, GetContext(device));
  if (k == 0) {  // op(A) op(B) is zero: C = beta C, and C is not read when beta == 0
    float* data = c.data;
    const int64_t stride = c.stride;
    return LaunchMatrix(
        device, m, n,
        [=] __device__(int64_t r, int64_t col) {
          float& x = data[r * stride + col];
          x = beta == 0.0f ? 0.0f : beta * x;
        },
        "Gemm(k = 0)");
  }
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX || a.stride > INT_MAX || b.stride > INT_MAX ||
      c.stride > INT_MAX) {
    return InvalidArgumentError("Gemm on " + device.ToString() +
                                ": dimensions and strides must fit cuBLAS's 32-bit ints");
  }
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, and a row-major matrix with
  // stride s is its column-major transpose with leading dimension s: no copies.
  const cublasOperation_t op_b = trans_b == Transpose::kNo ? CUBLAS_OP_N : CUBLAS_OP_T;
  const cublasOperation_t op_a = trans_a == Transpose::kNo ? CUBLAS_OP_N : CUBLAS_OP_T;
  const cublasComputeType_t compute =
      device.allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  return CheckBlas(context->gemm_ex(context->blas, op_b, op_a, static_cast<int>(n),
                                static_cast<int>(m), static_cast<int>(k), &alpha, b.data,
                                CUDA_R_32F, static_cast<int>(b.stride), a.data, CUDA_R_32F,
                                static_cast<int>(a.stride), &beta, c.data, CUDA_R_32F,
                                static_cast<int>(c.stride), compute, CUBLAS_GEMM_DEFAULT),
                   "cublasGemmEx");
}

template <typename T>
Status BiasAdd(const Device& device, std::span<const T> bias, MatrixView<T> y) {
  const float* b = bias.data();
  float* data = y.data;
  const int64_t stride = y.stride;
  return LaunchMatrix(
      device, y.rows, y.cols,
      [=] __device__(int64_t r, int64_t c) { data[r * stride + c] += b[c]; }, "BiasAdd");
}

template <typename T>
Status BiasReluForward(const Device& device, std::span<const T> bias, MatrixView<T> y) {
  const float* b = bias.data();
  float* data = y.data;
  const int64_t stride = y.stride;
  return LaunchMatrix(
      device, y.rows, y.cols,
      [=] __device__(int64_t r, int64_t c) {
        float& x = data[r * stride + c];
        x = fmaxf(x + b[c], 0.0f);
      },
      "BiasReluForward");
}

template <typename T>
Status BiasGrad(const Device& device, ConstMatrixView<T> dy, std::span<T> db) {
  return ColumnSum(device, {}, dy, {}, /*mask=*/false, db, "BiasGrad");
}

template <typename T>
Status ReluForward(const Device& device, ConstMatrixView<T> x, MatrixView<T> y) {
  const float* in = x.data;
  float* out = y.data;
  const int64_t si = x.stride, so = y.stride;
  return LaunchMatrix(
      device, x.rows, x.cols,
      [=] __device__(int64_t r, int64_t c) { out[r * so + c] = fmaxf(in[r * si + c], 0.0f); },
      "ReluForward");
}

template <typename T>
Status ReluBackward(const Device& device, ConstMatrixView<T> y, ConstMatrixView<T> dy,
                    MatrixView<T> dx) {
  const float* yd = y.data;
  const float* g = dy.data;
  float* out = dx.data;
  const int64_t sy = y.stride, sg = dy.stride, so = dx.stride;
  return LaunchMatrix(
      device, y.rows, y.cols,
      [=] __device__(int64_t r, int64_t c) {
        out[r * so + c] = yd[r * sy + c] > 0.0f ? g[r * sg + c] : 0.0f;
      },
      "ReluBackward");
}

template <typename T>
Status ReluBackwardBiasGrad(const Device& device, ConstMatrixView<T> y, ConstMatrixView<T> dy,
                            MatrixView<T> dx, std::span<T> db) {
  return ColumnSum(device, y, dy, dx, /*mask=*/true, db, "ReluBackwardBiasGrad");
}

template <typename T>
Status ScaleRows(const Device& device, std::span<const T> weights, MatrixView<T> m) {
  const float* w = weights.data();
  float* data = m.data;
  const int64_t stride = m.stride;
  return LaunchMatrix(
      device, m.rows, m.cols,
      [=] __device__(int64_t r, int64_t c) { data[r * stride + c] *= w[r]; }, "ScaleRows");
}

template <typename U>
Status GatherRows(const Device& device, ConstMatrixView<U> src, std::span<const int64_t> rows,
                  MatrixView<U> dst) {
  if (dst.size() == 0) return OkStatus();
  MURMUR_ASSIGN_OR_RETURN(Context * context, GetContext(device));
  MURMUR_RETURN_IF_ERROR(ResetScalars(*context));
  const U* in = src.data;
  U* out = dst.data;
  const int64_t* index = rows.data();
  const int64_t si = src.stride, so = dst.stride, limit = src.rows;
  Scalars* scalars = context->device_scalars;
  MURMUR_RETURN_IF_ERROR(LaunchMatrix(
      device, dst.rows, dst.cols,
      [=] __device__(int64_t r, int64_t c) {
        const int64_t from = index[r];
        if (from < 0 || from >= limit) {
          if (c == 0) atomicAdd(&scalars->bad, 1ULL);
          return;
        }
        out[r * so + c] = in[from * si + c];
      },
      "GatherRows"));
  return BadCount(*context, "GatherRows", "row indices outside the source");
}

template <typename T>
Status SoftmaxCrossEntropyForward(const Device& device, ConstMatrixView<T> logits,
                                  std::span<const int32_t> labels, MatrixView<T> probs, T* loss) {
  constexpr const char* kOp = "SoftmaxCrossEntropyForward";
  MURMUR_ASSIGN_OR_RETURN(Context * context, GetContext(device));
  MURMUR_RETURN_IF_ERROR(ResetScalars(*context));
  const int64_t rows = logits.rows;
  if (rows > 0) {
    const int64_t warps_per_block = kThreads / 32;
    const int64_t blocks = (rows + warps_per_block - 1) / warps_per_block;
    if (blocks > INT_MAX) return InvalidArgumentError(std::string(kOp) + ": too many rows");
    SoftmaxKernel<<<static_cast<unsigned>(blocks), kThreads>>>(
        rows, logits.cols, logits.data, logits.stride, labels.data(), probs.data, probs.stride,
        context->device_scalars);
    MURMUR_RETURN_IF_ERROR(CheckLaunch(kOp));
  }
  MURMUR_ASSIGN_OR_RETURN(Scalars s, ReadScalars(*context, kOp));
  if (s.bad > 0) {
    return InvalidArgumentError(std::string(kOp) + ": " + std::to_string(s.bad) +
                                " labels outside [0, " + std::to_string(logits.cols) + ")");
  }
  *loss = rows == 0 ? 0.0f : static_cast<float>(s.sum / static_cast<double>(rows));
  return OkStatus();
}

template <typename T>
Status SoftmaxCrossEntropyBackward(const Device& device, ConstMatrixView<T> probs,
                                   std::span<const int32_t> labels, MatrixView<T> dlogits) {
  constexpr const char* kOp = "SoftmaxCrossEntropyBackward";
  if (probs.rows == 0) return OkStatus();
  MURMUR_ASSIGN_OR_RETURN(Context * context, GetContext(device));
  MURMUR_RETURN_IF_ERROR(ResetScalars(*context));
  const float* p = probs.data;
  float* d = dlogits.data;
  const int32_t* label = labels.data();
  const int64_t sp = probs.stride, sd = dlogits.stride, cols = probs.cols;
  const float scale = 1.0f / static_cast<float>(probs.rows);
  Scalars* scalars = context->device_scalars;
  MURMUR_RETURN_IF_ERROR(LaunchMatrix(
      device, probs.rows, cols,
      [=] __device__(int64_t r, int64_t c) {
        const int32_t l = label[r];
        if (c == 0 && (l < 0 || l >= cols)) atomicAdd(&scalars->bad, 1ULL);
        const float g = p[r * sp + c] * scale;
        d[r * sd + c] = c == l ? g - scale : g;
      },
      kOp));
  return BadCount(*context, kOp, "labels outside the classes");
}

template <typename T>
Status SigmoidCrossEntropyForward(const Device& device, ConstMatrixView<T> logits,
                                  std::span<const T> targets, T* loss) {
  const float* z = logits.data;
  const float* t = targets.data();
  const int64_t stride = logits.stride;
  return RowLoss(
      device, logits.rows,
      [=] __device__(int64_t r) {
        const float x = z[r * stride];
        return static_cast<double>(fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x))) - t[r] * x);
      },
      loss, "SigmoidCrossEntropyForward");
}

template <typename T>
Status SigmoidCrossEntropyBackward(const Device& device, ConstMatrixView<T> logits,
                                   std::span<const T> targets, MatrixView<T> dlogits) {
  const float* z = logits.data;
  const float* t = targets.data();
  float* d = dlogits.data;
  const int64_t sz = logits.stride, sd = dlogits.stride;
  const float scale = logits.rows == 0 ? 0.0f : 1.0f / static_cast<float>(logits.rows);
  return LaunchMatrix(
      device, logits.rows, 1,
      [=] __device__(int64_t r, int64_t) {
        const float x = z[r * sz];
        const float s = x >= 0 ? 1.0f / (1.0f + expf(-x)) : expf(x) / (1.0f + expf(x));
        d[r * sd] = (s - t[r]) * scale;
      },
      "SigmoidCrossEntropyBackward");
}

template <typename T>
Status MeanSquaredErrorForward(const Device& device, ConstMatrixView<T> predictions,
                               std::span<const T> targets, T* loss) {
  const float* y = predictions.data;
  const float* t = targets.data();
  const int64_t stride = predictions.stride;
  return RowLoss(
      device, predictions.rows,
      [=] __device__(int64_t r) {
        const double e = static_cast<double>(y[r * stride]) - t[r];
        return 0.5 * e * e;
      },
      loss, "MeanSquaredErrorForward");
}

template <typename T>
Status MeanSquaredErrorBackward(const Device& device, ConstMatrixView<T> predictions,
                                std::span<const T> targets, MatrixView<T> dpredictions) {
  const float* y = predictions.data;
  const float* t = targets.data();
  float* d = dpredictions.data;
  const int64_t sy = predictions.stride, sd = dpredictions.stride;
  const float scale = predictions.rows == 0 ? 0.0f : 1.0f / static_cast<float>(predictions.rows);
  return LaunchMatrix(
      device, predictions.rows, 1,
      [=] __device__(int64_t r, int64_t) { d[r * sd] = (y[r * sy] - t[r]) * scale; },
      "MeanSquaredErrorBackward");
}

template <typename T>
Status SgdStep(const Device& device, const SgdOptions& options, std::span<const T> grad,
               std::span<T> velocity, std::span<T> params) {
  const auto n = static_cast<int64_t>(params.size());
  const float* g = grad.data();
  float* v = velocity.data();
  float* p = params.data();
  const auto lr = static_cast<float>(options.learning_rate);
  const auto wd = static_cast<float>(options.weight_decay);
  const auto m = static_cast<float>(options.momentum);
  const bool momentum = options.momentum != 0, nesterov = options.nesterov;
  // The CPU backend's arithmetic, term for term (PyTorch's SGD).
  return LaunchMatrix(
      device, n, 1,
      [=] __device__(int64_t i, int64_t) {
        const float d = wd == 0.0f ? g[i] : g[i] + wd * p[i];
        if (!momentum) {
          p[i] -= lr * d;
          return;
        }
        const float vel = m * v[i] + d;
        v[i] = vel;
        p[i] -= nesterov ? lr * (d + m * vel) : lr * vel;
      },
      "SgdStep");
}

#define MURMUR_KERNEL MURMUR_INSTANTIATE_CUDA_KERNEL
#include "kernels/ops.inc"

}  // namespace murmur::kernels::cuda
