#include "kernels/ops.h"

#include <string>

#include "base/config.h"
#include "kernels/cpu/cpu_ops.h"

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

// The CUDA backend is a separate target (kernels/cuda); until a kernel exists there the
// dispatcher says so instead of falling back silently to the host.
Status NoDeviceKernel(const Device& device, const char* op) {
  if (!MURMUR_WITH_CUDA) {
    return UnimplementedError(std::string(op) + " on " + device.ToString() +
                              ": this build has no CUDA backend (MURMUR_WITH_CUDA=OFF)");
  }
  return UnimplementedError(std::string(op) + " has no CUDA kernel yet");
}

// Runs `cpu` on a CPU device; other devices get NoDeviceKernel.
template <typename Fn>
Status Dispatch(const Device& device, const char* op, Fn&& cpu) {
  if (device.kind == DeviceKind::kCpu) {
    cpu();
    return OkStatus();
  }
  return NoDeviceKernel(device, op);
}

}  // namespace

template <typename T>
Status Gemm(const Device& device, Transpose trans_a, Transpose trans_b, T alpha,
            ConstMatrixView<T> a, ConstMatrixView<T> b, T beta, MatrixView<T> c) {
  MURMUR_RETURN_IF_ERROR(CheckView("Gemm", "A", a));
  MURMUR_RETURN_IF_ERROR(CheckView("Gemm", "B", b));
  MURMUR_RETURN_IF_ERROR(CheckView<T>("Gemm", "C", c));
  const int64_t m = trans_a == Transpose::kNo ? a.rows : a.cols;
  const int64_t ka = trans_a == Transpose::kNo ? a.cols : a.rows;
  const int64_t kb = trans_b == Transpose::kNo ? b.rows : b.cols;
  const int64_t n = trans_b == Transpose::kNo ? b.cols : b.rows;
  if (ka != kb || c.rows != m || c.cols != n) {
    return InvalidArgumentError("Gemm: op(A) is " + Shape(m, ka) + ", op(B) is " + Shape(kb, n) +
                                ", C is " + Shape(c.rows, c.cols));
  }
  return Dispatch(device, "Gemm", [&] { cpu::Gemm(trans_a, trans_b, alpha, a, b, beta, c); });
}

template <typename T>
Status BiasAdd(const Device& device, std::span<const T> bias, MatrixView<T> y) {
  MURMUR_RETURN_IF_ERROR(CheckView<T>("BiasAdd", "y", y));
  MURMUR_RETURN_IF_ERROR(CheckLength("BiasAdd", "bias", bias.size(), y.cols));
  return Dispatch(device, "BiasAdd", [&] { cpu::BiasAdd(bias, y); });
}

template <typename T>
Status BiasGrad(const Device& device, ConstMatrixView<T> dy, std::span<T> db) {
  MURMUR_RETURN_IF_ERROR(CheckView("BiasGrad", "dy", dy));
  MURMUR_RETURN_IF_ERROR(CheckLength("BiasGrad", "db", db.size(), dy.cols));
  return Dispatch(device, "BiasGrad", [&] { cpu::BiasGrad(dy, db); });
}

template <typename T>
Status ReluForward(const Device& device, ConstMatrixView<T> x, MatrixView<T> y) {
  MURMUR_RETURN_IF_ERROR(CheckSameShape<T>("ReluForward", "x", x, "y", y));
  return Dispatch(device, "ReluForward", [&] { cpu::ReluForward(x, y); });
}

template <typename T>
Status ReluBackward(const Device& device, ConstMatrixView<T> y, ConstMatrixView<T> dy,
                    MatrixView<T> dx) {
  MURMUR_RETURN_IF_ERROR(CheckSameShape<T>("ReluBackward", "y", y, "dy", dy));
  MURMUR_RETURN_IF_ERROR(CheckSameShape<T>("ReluBackward", "y", y, "dx", dx));
  return Dispatch(device, "ReluBackward", [&] { cpu::ReluBackward(y, dy, dx); });
}

template <typename T>
Status SoftmaxCrossEntropyForward(const Device& device, ConstMatrixView<T> logits,
                                  std::span<const int32_t> labels, MatrixView<T> probs, T* loss) {
  constexpr const char* kOp = "SoftmaxCrossEntropyForward";
  MURMUR_RETURN_IF_ERROR(CheckSameShape<T>(kOp, "logits", logits, "probs", probs));
  MURMUR_RETURN_IF_ERROR(CheckLength(kOp, "labels", labels.size(), logits.rows));
  if (logits.cols == 0 && logits.rows > 0) return InvalidArgumentError(std::string(kOp) + ": no classes");
  MURMUR_RETURN_IF_ERROR(CheckLabels(kOp, labels, logits.cols));
  if (loss == nullptr) return InvalidArgumentError(std::string(kOp) + ": loss is null");
  return Dispatch(device, kOp, [&] { cpu::SoftmaxCrossEntropyForward(logits, labels, probs, loss); });
}

template <typename T>
Status SoftmaxCrossEntropyBackward(const Device& device, ConstMatrixView<T> probs,
                                   std::span<const int32_t> labels, MatrixView<T> dlogits) {
  constexpr const char* kOp = "SoftmaxCrossEntropyBackward";
  MURMUR_RETURN_IF_ERROR(CheckSameShape<T>(kOp, "probs", probs, "dlogits", dlogits));
  MURMUR_RETURN_IF_ERROR(CheckLength(kOp, "labels", labels.size(), probs.rows));
  MURMUR_RETURN_IF_ERROR(CheckLabels(kOp, labels, probs.cols));
  return Dispatch(device, kOp, [&] { cpu::SoftmaxCrossEntropyBackward(probs, labels, dlogits); });
}

template <typename T>
Status SigmoidCrossEntropyForward(const Device& device, ConstMatrixView<T> logits,
                                  std::span<const T> targets, T* loss) {
  constexpr const char* kOp = "SigmoidCrossEntropyForward";
  MURMUR_RETURN_IF_ERROR(CheckOneColumn(kOp, logits, targets.size()));
  if (loss == nullptr) return InvalidArgumentError(std::string(kOp) + ": loss is null");
  return Dispatch(device, kOp, [&] { cpu::SigmoidCrossEntropyForward(logits, targets, loss); });
}

template <typename T>
Status SigmoidCrossEntropyBackward(const Device& device, ConstMatrixView<T> logits,
                                   std::span<const T> targets, MatrixView<T> dlogits) {
  constexpr const char* kOp = "SigmoidCrossEntropyBackward";
  MURMUR_RETURN_IF_ERROR(CheckOneColumn(kOp, logits, targets.size()));
  MURMUR_RETURN_IF_ERROR(CheckSameShape<T>(kOp, "logits", logits, "dlogits", dlogits));
  return Dispatch(device, kOp,
                  [&] { cpu::SigmoidCrossEntropyBackward(logits, targets, dlogits); });
}

template <typename T>
Status MeanSquaredErrorForward(const Device& device, ConstMatrixView<T> predictions,
                               std::span<const T> targets, T* loss) {
  constexpr const char* kOp = "MeanSquaredErrorForward";
  MURMUR_RETURN_IF_ERROR(CheckOneColumn(kOp, predictions, targets.size()));
  if (loss == nullptr) return InvalidArgumentError(std::string(kOp) + ": loss is null");
  return Dispatch(device, kOp, [&] { cpu::MeanSquaredErrorForward(predictions, targets, loss); });
}

template <typename T>
Status MeanSquaredErrorBackward(const Device& device, ConstMatrixView<T> predictions,
                                std::span<const T> targets, MatrixView<T> dpredictions) {
  constexpr const char* kOp = "MeanSquaredErrorBackward";
  MURMUR_RETURN_IF_ERROR(CheckOneColumn(kOp, predictions, targets.size()));
  MURMUR_RETURN_IF_ERROR(
      CheckSameShape<T>(kOp, "predictions", predictions, "dpredictions", dpredictions));
  return Dispatch(device, kOp,
                  [&] { cpu::MeanSquaredErrorBackward(predictions, targets, dpredictions); });
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
  return Dispatch(device, kOp, [&] { cpu::SgdStep(options, grad, velocity, params); });
}

#define MURMUR_INSTANTIATE_OPS(T)                                                               \
  template Status Gemm<T>(const Device&, Transpose, Transpose, T, ConstMatrixView<T>,           \
                          ConstMatrixView<T>, T, MatrixView<T>);                                \
  template Status BiasAdd<T>(const Device&, std::span<const T>, MatrixView<T>);                 \
  template Status BiasGrad<T>(const Device&, ConstMatrixView<T>, std::span<T>);                 \
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
