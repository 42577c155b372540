#include "kernels/ops.h"

#include <string>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/op_dispatch.h"

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

// The checks of each op of ops.inc, called with its op name, device and arguments before the
// dispatch. Labels and row indices live in device memory on a GPU: the host checks them only on
// the CPU, the CUDA kernels check them on the device.

template <typename T>
Status CheckGemm(const char* op, const Device&, Transpose trans_a, Transpose trans_b, T,
                 ConstMatrixView<T> a, ConstMatrixView<T> b, T, MatrixView<T> c) {
  MURMUR_RETURN_IF_ERROR(CheckView(op, "A", a));
  MURMUR_RETURN_IF_ERROR(CheckView(op, "B", b));
  MURMUR_RETURN_IF_ERROR(CheckView<T>(op, "C", c));
  const int64_t m = trans_a == Transpose::kNo ? a.rows : a.cols;
  const int64_t ka = trans_a == Transpose::kNo ? a.cols : a.rows;
  const int64_t kb = trans_b == Transpose::kNo ? b.rows : b.cols;
  const int64_t n = trans_b == Transpose::kNo ? b.cols : b.rows;
  if (ka != kb || c.rows != m || c.cols != n) {
    return InvalidArgumentError(std::string(op) + ": op(A) is " + Shape(m, ka) + ", op(B) is " +
                                Shape(kb, n) + ", C is " + Shape(c.rows, c.cols));
  }
  return OkStatus();
}

template <typename T>
Status CheckBiasAdd(const char* op, const Device&, std::span<const T> bias, MatrixView<T> y) {
  MURMUR_RETURN_IF_ERROR(CheckView<T>(op, "y", y));
  return CheckLength(op, "bias", bias.size(), y.cols);
}

template <typename T>
Status CheckBiasReluForward(const char* op, const Device& device, std::span<const T> bias,
                            MatrixView<T> y) {
  return CheckBiasAdd(op, device, bias, y);
}

template <typename T>
Status CheckBiasGrad(const char* op, const Device&, ConstMatrixView<T> dy, std::span<T> db) {
  MURMUR_RETURN_IF_ERROR(CheckView(op, "dy", dy));
  return CheckLength(op, "db", db.size(), dy.cols);
}

template <typename T>
Status CheckReluForward(const char* op, const Device&, ConstMatrixView<T> x, MatrixView<T> y) {
  return CheckSameShape<T>(op, "x", x, "y", y);
}

template <typename T>
Status CheckReluBackward(const char* op, const Device&, ConstMatrixView<T> y, ConstMatrixView<T> dy,
                         MatrixView<T> dx) {
  MURMUR_RETURN_IF_ERROR(CheckSameShape<T>(op, "y", y, "dy", dy));
  return CheckSameShape<T>(op, "y", y, "dx", dx);
}

template <typename T>
Status CheckReluBackwardBiasGrad(const char* op, const Device& device, ConstMatrixView<T> y,
                                 ConstMatrixView<T> dy, MatrixView<T> dx, std::span<T> db) {
  MURMUR_RETURN_IF_ERROR(CheckReluBackward(op, device, y, dy, dx));
  return CheckLength(op, "db", db.size(), y.cols);
}

template <typename T>
Status CheckScaleRows(const char* op, const Device&, std::span<const T> weights, MatrixView<T> m) {
  MURMUR_RETURN_IF_ERROR(CheckView<T>(op, "m", m));
  return CheckLength(op, "weights", weights.size(), m.rows);
}

template <typename T>
Status CheckGatherRows(const char* op, const Device& device, ConstMatrixView<T> src,
                       std::span<const int64_t> rows, MatrixView<T> dst) {
  MURMUR_RETURN_IF_ERROR(CheckView(op, "src", src));
  MURMUR_RETURN_IF_ERROR(CheckView<T>(op, "dst", dst));
  MURMUR_RETURN_IF_ERROR(CheckLength(op, "rows", rows.size(), dst.rows));
  if (src.cols != dst.cols) {
    return InvalidArgumentError(std::string(op) + ": src " + Shape(src.rows, src.cols) +
                                " and dst " + Shape(dst.rows, dst.cols) + " differ in columns");
  }
  if (!device.is_cpu()) return OkStatus();
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] < 0 || rows[i] >= src.rows) {
      return InvalidArgumentError(std::string(op) + ": row " + std::to_string(rows[i]) + " at " +
                                  std::to_string(i) + " is outside [0, " +
                                  std::to_string(src.rows) + ")");
    }
  }
  return OkStatus();
}

template <typename T>
Status CheckSoftmaxCrossEntropyForward(const char* op, const Device& device,
                                       ConstMatrixView<T> logits, std::span<const int32_t> labels,
                                       MatrixView<T> probs, T* loss) {
  MURMUR_RETURN_IF_ERROR(CheckSameShape<T>(op, "logits", logits, "probs", probs));
  MURMUR_RETURN_IF_ERROR(CheckLength(op, "labels", labels.size(), logits.rows));
  if (logits.cols == 0 && logits.rows > 0) {
    return InvalidArgumentError(std::string(op) + ": no classes");
  }
  if (device.is_cpu()) MURMUR_RETURN_IF_ERROR(CheckLabels(op, labels, logits.cols));
  if (loss == nullptr) return InvalidArgumentError(std::string(op) + ": loss is null");
  return OkStatus();
}

template <typename T>
Status CheckSoftmaxCrossEntropyBackward(const char* op, const Device& device,
                                        ConstMatrixView<T> probs, std::span<const int32_t> labels,
                                        MatrixView<T> dlogits) {
  MURMUR_RETURN_IF_ERROR(CheckSameShape<T>(op, "probs", probs, "dlogits", dlogits));
  MURMUR_RETURN_IF_ERROR(CheckLength(op, "labels", labels.size(), probs.rows));
  if (device.is_cpu()) MURMUR_RETURN_IF_ERROR(CheckLabels(op, labels, probs.cols));
  return OkStatus();
}

// The losses on one column: sigmoid cross-entropy and mean squared error, forward and backward.
template <typename T>
Status CheckColumnLoss(const char* op, ConstMatrixView<T> input, std::span<const T> targets,
                       T* loss) {
  MURMUR_RETURN_IF_ERROR(CheckOneColumn(op, input, targets.size()));
  if (loss == nullptr) return InvalidArgumentError(std::string(op) + ": loss is null");
  return OkStatus();
}
template <typename T>
Status CheckColumnGrad(const char* op, ConstMatrixView<T> input, std::span<const T> targets,
                       MatrixView<T> grad) {
  MURMUR_RETURN_IF_ERROR(CheckOneColumn(op, input, targets.size()));
  return CheckSameShape<T>(op, "input", input, "gradient", grad);
}

template <typename T>
Status CheckSigmoidCrossEntropyForward(const char* op, const Device&, ConstMatrixView<T> logits,
                                       std::span<const T> targets, T* loss) {
  return CheckColumnLoss(op, logits, targets, loss);
}
template <typename T>
Status CheckSigmoidCrossEntropyBackward(const char* op, const Device&, ConstMatrixView<T> logits,
                                        std::span<const T> targets, MatrixView<T> dlogits) {
  return CheckColumnGrad(op, logits, targets, dlogits);
}
template <typename T>
Status CheckMeanSquaredErrorForward(const char* op, const Device&, ConstMatrixView<T> predictions,
                                    std::span<const T> targets, T* loss) {
  return CheckColumnLoss(op, predictions, targets, loss);
}
template <typename T>
Status CheckMeanSquaredErrorBackward(const char* op, const Device&, ConstMatrixView<T> predictions,
                                     std::span<const T> targets, MatrixView<T> dpredictions) {
  return CheckColumnGrad(op, predictions, targets, dpredictions);
}

template <typename T>
Status CheckSgdStep(const char* op, const Device&, const SgdOptions& options,
                    std::span<const T> grad, std::span<T> velocity, std::span<T> params) {
  MURMUR_RETURN_IF_ERROR(CheckLength(op, "grad", grad.size(), params.size()));
  if (options.momentum != 0) {
    MURMUR_RETURN_IF_ERROR(CheckLength(op, "velocity", velocity.size(), params.size()));
  }
  if (options.nesterov && options.momentum <= 0) {
    return InvalidArgumentError(std::string(op) + ": Nesterov needs momentum > 0");
  }
  if (!(options.learning_rate >= 0) || !(options.momentum >= 0) || !(options.weight_decay >= 0)) {
    return InvalidArgumentError(std::string(op) +
                                ": learning rate, momentum and weight decay must be >= 0");
  }
  return OkStatus();
}

}  // namespace

Status KernelNotOnCuda(const char* op, const Device& device, const char* why) {
  return UnimplementedError(std::string(op) + " on " + device.ToString() + ": " + why);
}

#define MURMUR_KERNEL MURMUR_DISPATCH_KERNEL
#include "kernels/ops.inc"
#define MURMUR_KERNEL MURMUR_INSTANTIATE_HOST_KERNEL
#include "kernels/ops.inc"

}  // namespace murmur::kernels
