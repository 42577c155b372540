#include "kernels/ops.h"

#include <string>
#include <type_traits>

#include "base/config.h"
#include "kernels/cpu/cpu_ops.h"
#if MURMUR_WITH_CUDA
#include "kernels/cuda/cuda_ops.h"
#endif

namespace murmur::kernels {
namespace {

std::string Shape(int64_t rows, int64_t cols) {
  return "[" + std::to_string(rows) + " x " + std::to_string(cols) + "]";
}

template <typename T>
Status CheckView(const char* op, const char* name, ConstMatrixView<T> m) {
  if (m.rows < 0 || m.cols < 0 || m.stride < m.cols) {
    return InvalidArgumentError(std::string(op) + ": " + name + " has invalid shape " +
                                Shape(m.rows, m.cols) + " with stride " +
                                std::to_string(m.stride));
  }
  if (m.data == nullptr && m.size() > 0) {
    return InvalidArgumentError(std::string(op) + ": " + name + " is null");
  }
  return OkStatus();
}

template <typename T>
Status CheckSameShape(const char* op, const char* a_name, ConstMatrixView<T> a,
                      const char* b_name, ConstMatrixView<T> b) {
  MURMUR_RETURN_IF_ERROR(CheckView(op, a_name, a));
  MURMUR_RETURN_IF_ERROR(CheckView(op, b_name, b));
  if (a.rows != b.rows || a.cols != b.cols) {
    return InvalidArgumentError(std::string(op) + ": " + a_name + " " + Shape(a.rows, a.cols) +
                                " and " + b_name + " " + Shape(b.rows, b.cols) + " differ");
  }
  return OkStatus();
}

Status CheckLength(const char* op, const char* name, size_t got, int64_t want) {
  if (static_cast<int64_t>(got) != want) {
    return InvalidArgumentError(std::string(op) + ": " + name + " has " + std::to_string(got) +
                                " elements, expected " + std::to_string(want));
  }
  return OkStatus();
}

Status CheckLabels(const char* op, std::span<const int32_t> labels, int64_t classes) {
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0 || labels[i] >= classes) {
      return InvalidArgumentError(std::string(op) + ": label " + std::to_string(labels[i]) +
                                  " at row " + std::to_string(i) + " is outside [0, " +
                                  std::to_string(classes) + ")");
    }
  }
  return OkStatus();
}

template <typename T>
Status CheckOneColumn(const char* op, ConstMatrixView<T> m, size_t targets) {
  MURMUR_RETURN_IF_ERROR(CheckView(op, "input", m));
  if (m.cols != 1) {
    return InvalidArgumentError(std::string(op) + ": expects one column, got " +
                                Shape(m.rows, m.cols));
  }
  return CheckLength(op, "targets", targets, m.rows);
}

// Runs `cpu` (void) on a CPU device and `gpu` (returns Status) on a CUDA device. The CUDA
// backend is fp32 only: double asks on a GPU are kUnimplemented, never a silent host fallback.
template <typename Cpu, typename Gpu>
Status Dispatch(const Device& device, Cpu&& cpu, Gpu&& gpu) {
  if (device.is_cpu()) {
    cpu();
    return OkStatus();
  }
  return gpu();
}

[[maybe_unused]] Status NoCuda(const char* op, const Device& device) {
  return UnimplementedError(std::string(op) + " on " + device.ToString() +
                            ": this build has no CUDA backend (MURMUR_WITH_CUDA=OFF)");
}
[[maybe_unused]] Status DoubleOnCuda(const char* op) {
  return UnimplementedError(std::string(op) + ": double runs on the CPU only");
}

}  // namespace

// The CUDA half of a Dispatch: `call` is a cuda:: function call, made only for float.
#if MURMUR_WITH_CUDA
#define MURMUR_GPU(call)                                      \
  [&]() -> Status {                                           \
    if constexpr (std::is_same_v<T, float>) {                 \
      return cuda::call;                                      \
    } else {                                                  \
      return DoubleOnCuda(kOp);                               \
    }                                                         \
  }
#else
#define MURMUR_GPU(call) [&]() -> Status { return NoCuda(kOp, device); }
#endif

template <typename T>
Status Gemm(const Device& device, Transpose trans_a, Transpose trans_b, T alpha,
            ConstMatrixView<T> a, ConstMatrixView<T> b, T beta, MatrixView<T> c) {
  constexpr const char* kOp = "Gemm";
  MURMUR_RETURN_IF_ERROR(CheckView(kOp, "A", a));
  MURMUR_RETURN_IF_ERROR(CheckView(kOp, "B", b));
  MURMUR_RETURN_IF_ERROR(CheckView<T>(kOp, "C", c));
  const int64_t m = trans_a == Transpose::kNo ? a.rows : a.cols;
  const int64_t ka = trans_a == Transpose::kNo ? a.cols : a.rows;
  const int64_t kb = trans_b == Transpose::kNo ? b.rows : b.cols;
  const int64_t n = trans_b == Transpose::kNo ? b.cols : b.rows;
  if (ka != kb || c.rows != m || c.cols != n) {
    return InvalidArgumentError("Gemm: op(A) is " + Shape(m, ka) + ", op(B) is " + Shape(kb, n) +
                                ", C is " + Shape(c.rows, c.cols));
  }
  return Dispatch(device, [&] { cpu::Gemm(trans_a, trans_b, alpha, a, b, beta, c); },
                  MURMUR_GPU(Gemm(device, trans_a, trans_b, alpha, a, b, beta, c)));
}

template <typename T>
Status BiasAdd(const Device& device, std::span<const T> bias, MatrixView<T> y) {
  constexpr const char* kOp = "BiasAdd";
  MURMUR_RETURN_IF_ERROR(CheckView<T>(kOp, "y", y));
  MURMUR_RETURN_IF_ERROR(CheckLength(kOp, "bias", bias.size(), y.cols));
  return Dispatch(device, [&] { cpu::BiasAdd(bias, y); }, MURMUR_GPU(BiasAdd(device, bias, y)));
}

template <typename T>
Status BiasReluForward(const Device& device, std::span<const T> bias, MatrixView<T> y) {
  constexpr const char* kOp = "BiasReluForward";
  MURMUR_RETURN_IF_ERROR(CheckView<T>(kOp, "y", y));
  MURMUR_RETURN_IF_ERROR(CheckLength(kOp, "bias", bias.size(), y.cols));
  return Dispatch(device, [&] { cpu::BiasReluForward(bias, y); },
                  MURMUR_GPU(BiasReluForward(device, bias, y)));
}

template <typename T>
Status BiasGrad(const Device& device, ConstMatrixView<T> dy, std::span<T> db) {
  constexpr const char* kOp = "BiasGrad";
  MURMUR_RETURN_IF_ERROR(CheckView(kOp, "dy", dy));
  MURMUR_RETURN_IF_ERROR(CheckLength(kOp, "db", db.size(), dy.cols));
  return Dispatch(device, [&] { cpu::BiasGrad(dy, db); }, MURMUR_GPU(BiasGrad(device, dy, db)));
}

template <typename T>
Status ReluForward(const Device& device, ConstMatrixView<T> x, MatrixView<T> y) {
  constexpr const char* kOp = "ReluForward";
  MURMUR_RETURN_IF_ERROR(CheckSameShape<T>(kOp, "x", x, "y", y));
  return Dispatch(device, [&] { cpu::ReluForward(x, y); }, MURMUR_GPU(ReluForward(device, x, y)));
}

template <typename T>
Status ReluBackward(const Device& device, ConstMatrixView<T> y, ConstMatrixView<T> dy,
                    MatrixView<T> dx) {
  constexpr const char* kOp = "ReluBackward";
  MURMUR_RETURN_IF_ERROR(CheckSameShape<T>(kOp, "y", y, "dy", dy));
  MURMUR_RETURN_IF_ERROR(CheckSameShape<T>(kOp, "y", y, "dx", dx));
  return Dispatch(device, [&] { cpu::ReluBackward(y, dy, dx); },
                  MURMUR_GPU(ReluBackward(device, y, dy, dx)));
}

template <typename T>
Status ReluBackwardBiasGrad(const Device& device, ConstMatrixView<T> y, ConstMatrixView<T> dy,
                            MatrixView<T> dx, std::span<T> db) {
  constexpr const char* kOp = "ReluBackwardBiasGrad";
  MURMUR_RETURN_IF_ERROR(CheckSameShape<T>(kOp, "y", y, "dy", dy));
  MURMUR_RETURN_IF_ERROR(CheckSameShape<T>(kOp, "y", y, "dx", dx));
  MURMUR_RETURN_IF_ERROR(CheckLength(kOp, "db", db.size(), y.cols));
  return Dispatch(device, [&] { cpu::ReluBackwardBiasGrad(y, dy, dx, db); },
                  MURMUR_GPU(ReluBackwardBiasGrad(device, y, dy, dx, db)));
}

template <typename T>
Status ScaleRows(const Device& device, std::span<const T> weights, MatrixView<T> m) {
  constexpr const char* kOp = "ScaleRows";
  MURMUR_RETURN_IF_ERROR(CheckView<T>(kOp, "m", m));
  MURMUR_RETURN_IF_ERROR(CheckLength(kOp, "weights", weights.size(), m.rows));
  return Dispatch(device, [&] { cpu::ScaleRows(weights, m); },
                  MURMUR_GPU(ScaleRows(device, weights, m)));
}

template <typename U>
Status GatherRows(const Device& device, ConstMatrixView<U> src, std::span<const int64_t> rows,
                  MatrixView<U> dst) {
  constexpr const char* kOp = "GatherRows";
  MURMUR_RETURN_IF_ERROR(CheckView(kOp, "src", src));
  MURMUR_RETURN_IF_ERROR(CheckView<U>(kOp, "dst", dst));
  MURMUR_RETURN_IF_ERROR(CheckLength(kOp, "rows", rows.size(), dst.rows));
  if (src.cols != dst.cols) {
    return InvalidArgumentError(std::string(kOp) + ": src " + Shape(src.rows, src.cols) +
                                " and dst " + Shape(dst.rows, dst.cols) + " differ in columns");
  }
  if (device.is_cpu()) {
    for (size_t i = 0; i < rows.size(); ++i) {
      if (rows[i] < 0 || rows[i] >= src.rows) {
        return InvalidArgumentError(std::string(kOp) + ": row " + std::to_string(rows[i]) +
                                    " at " + std::to_string(i) + " is outside [0, " +
                                    std::to_string(src.rows) + ")");
      }
    }
    cpu::GatherRows(src, rows, dst);
    return OkStatus();
  }
#if MURMUR_WITH_CUDA
  return cuda::GatherRows<U>(device, src, rows, dst);
#else
  return NoCuda(kOp, device);
#endif
}
template Status GatherRows<float>(const Device&, ConstMatrixView<float>, std::span<const int64_t>,
                                  MatrixView<float>);
template Status GatherRows<int32_t>(const Device&, ConstMatrixView<int32_t>,
                                    std::span<const int64_t>, MatrixView<int32_t>);

// Labels live in device memory on a GPU: the host checks them only on the CPU, the CUDA kernels
// check them on the device.
template <typename T>
Status SoftmaxCrossEntropyForward(const Device& device, ConstMatrixView<T> logits,
                                  std::span<const int32_t> labels, MatrixView<T> probs, T* loss) {
  constexpr const char* kOp = "SoftmaxCrossEntropyForward";
  MURMUR_RETURN_IF_ERROR(CheckSameShape<T>(kOp, "logits", logits, "probs", probs));
  MURMUR_RETURN_IF_ERROR(CheckLength(kOp, "labels", labels.size(), logits.rows));
  if (logits.cols == 0 && logits.rows > 0) return InvalidArgumentError(std::string(kOp) + ": no classes");
  if (device.is_cpu()) MURMUR_RETURN_IF_ERROR(CheckLabels(kOp, labels, logits.cols));
  if (loss == nullptr) return InvalidArgumentError(std::string(kOp) + ": loss is null");
  return Dispatch(device, [&] { cpu::SoftmaxCrossEntropyForward(logits, labels, probs, loss); },
                  MURMUR_GPU(SoftmaxCrossEntropyForward(device, logits, labels, probs, loss)));
}

template <typename T>
Status SoftmaxCrossEntropyBackward(const Device& device, ConstMatrixView<T> probs,
                                   std::span<const int32_t> labels, MatrixView<T> dlogits) {
  constexpr const char* kOp = "SoftmaxCrossEntropyBackward";
  MURMUR_RETURN_IF_ERROR(CheckSameShape<T>(kOp, "probs", probs, "dlogits", dlogits));
  MURMUR_RETURN_IF_ERROR(CheckLength(kOp, "labels", labels.size(), probs.rows));
  if (device.is_cpu()) MURMUR_RETURN_IF_ERROR(CheckLabels(kOp, labels, probs.cols));
  return Dispatch(device, [&] { cpu::SoftmaxCrossEntropyBackward(probs, labels, dlogits); },
                  MURMUR_GPU(SoftmaxCrossEntropyBackward(device, probs, labels, dlogits)));
}

template <typename T>
Status SigmoidCrossEntropyForward(const Device& device, ConstMatrixView<T> logits,
                                  std::span<const T> targets, T* loss) {
  constexpr const char* kOp = "SigmoidCrossEntropyForward";
  MURMUR_RETURN_IF_ERROR(CheckOneColumn(kOp, logits, targets.size()));
  if (loss == nullptr) return InvalidArgumentError(std::string(kOp) + ": loss is null");
  return Dispatch(device, [&] { cpu::SigmoidCrossEntropyForward(logits, targets, loss); },
                  MURMUR_GPU(SigmoidCrossEntropyForward(device, logits, targets, loss)));
}

template <typename T>
Status SigmoidCrossEntropyBackward(const Device& device, ConstMatrixView<T> logits,
                                   std::span<const T> targets, MatrixView<T> dlogits) {
  constexpr const char* kOp = "SigmoidCrossEntropyBackward";
  MURMUR_RETURN_IF_ERROR(CheckOneColumn(kOp, logits, targets.size()));
  MURMUR_RETURN_IF_ERROR(CheckSameShape<T>(kOp, "logits", logits, "dlogits", dlogits));
  return Dispatch(device, [&] { cpu::SigmoidCrossEntropyBackward(logits, targets, dlogits); },
                  MURMUR_GPU(SigmoidCrossEntropyBackward(device, logits, targets, dlogits)));
}

template <typename T>
Status MeanSquaredErrorForward(const Device& device, ConstMatrixView<T> predictions,
                               std::span<const T> targets, T* loss) {
  constexpr const char* kOp = "MeanSquaredErrorForward";
  MURMUR_RETURN_IF_ERROR(CheckOneColumn(kOp, predictions, targets.size()));
  if (loss == nullptr) return InvalidArgumentError(std::string(kOp) + ": loss is null");
  return Dispatch(device, [&] { cpu::MeanSquaredErrorForward(predictions, targets, loss); },
                  MURMUR_GPU(MeanSquaredErrorForward(device, predictions, targets, loss)));
}

template <typename T>
Status MeanSquaredErrorBackward(const Device& device, ConstMatrixView<T> predictions,
                                std::span<const T> targets, MatrixView<T> dpredictions) {
  constexpr const char* kOp = "MeanSquaredErrorBackward";
  MURMUR_RETURN_IF_ERROR(CheckOneColumn(kOp, predictions, targets.size()));
  MURMUR_RETURN_IF_ERROR(
      CheckSameShape<T>(kOp, "predictions", predictions, "dpredictions", dpredictions));
  return Dispatch(
      device, [&] { cpu::MeanSquaredErrorBackward(predictions, targets, dpredictions); },
      MURMUR_GPU(MeanSquaredErrorBackward(device, predictions, targets, dpredictions)));
}

template <typename T>
Status SgdStep(const Device& device, const SgdOptions& options, std::span<const T> grad,
               std::span<T> velocity, std::span<T> params) {
  constexpr const char* kOp = "SgdStep";
  MURMUR_RETURN_IF_ERROR(CheckLength(kOp, "grad", grad.size(), params.size()));
  if (options.momentum != 0) {
    MURMUR_RETURN_IF_ERROR(CheckLength(kOp, "velocity", velocity.size(), params.size()));
  }
  if (options.nesterov && options.momentum <= 0) {
    return InvalidArgumentError("SgdStep: Nesterov needs momentum > 0");
  }
  if (!(options.learning_rate >= 0) || !(options.momentum >= 0) || !(options.weight_decay >= 0)) {
    return InvalidArgumentError("SgdStep: learning rate, momentum and weight decay must be >= 0");
  }
  return Dispatch(device, [&] { cpu::SgdStep(options, grad, velocity, params); },
                  MURMUR_GPU(SgdStep(device, options, grad, velocity, params)));
}

#define MURMUR_INSTANTIATE_OPS(T)                                                               \
  template Status Gemm<T>(const Device&, Transpose, Transpose, T, ConstMatrixView<T>,           \
                          ConstMatrixView<T>, T, MatrixView<T>);                                \
  template Status BiasAdd<T>(const Device&, std::span<const T>, MatrixView<T>);                 \
  template Status BiasGrad<T>(const Device&, ConstMatrixView<T>, std::span<T>);                 \
  template Status BiasReluForward<T>(const Device&, std::span<const T>, MatrixView<T>);         \
  template Status ReluBackwardBiasGrad<T>(const Device&, ConstMatrixView<T>, ConstMatrixView<T>, \
                                          MatrixView<T>, std::span<T>);                         \
  template Status ScaleRows<T>(const Device&, std::span<const T>, MatrixView<T>);               \
  template Status ReluForward<T>(const Device&, ConstMatrixView<T>, MatrixView<T>);             \
  template Status ReluBackward<T>(const Device&, ConstMatrixView<T>, ConstMatrixView<T>,        \
                                  MatrixView<T>);                                               \
  template Status SoftmaxCrossEntropyForward<T>(const Device&, ConstMatrixView<T>,              \
                                                std::span<const int32_t>, MatrixView<T>, T*);   \
  template Status SoftmaxCrossEntropyBackward<T>(const Device&, ConstMatrixView<T>,             \
                                                 std::span<const int32_t>, MatrixView<T>);      \
  template Status SigmoidCrossEntropyForward<T>(const Device&, ConstMatrixView<T>,              \
                                                std::span<const T>, T*);                        \
  template Status SigmoidCrossEntropyBackward<T>(const Device&, ConstMatrixView<T>,             \
                                                 std::span<const T>, MatrixView<T>);            \
  template Status MeanSquaredErrorForward<T>(const Device&, ConstMatrixView<T>,                 \
                                             std::span<const T>, T*);                           \
  template Status MeanSquaredErrorBackward<T>(const Device&, ConstMatrixView<T>,                \
                                              std::span<const T>, MatrixView<T>);               \
  template Status SgdStep<T>(const Device&, const SgdOptions&, std::span<const T>,              \
                             std::span<T>, std::span<T>);

MURMUR_INSTANTIATE_OPS(float)
MURMUR_INSTANTIATE_OPS(double)

}  // namespace murmur::kernels
