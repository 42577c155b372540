#include "kernels/reference/reference_ops.h"

#include <algorithm>
#include <cmath>

namespace murmur::kernels::reference {

template <typename T>
void Gemm(Transpose trans_a, Transpose trans_b, T alpha, ConstMatrixView<T> a,
          ConstMatrixView<T> b, T beta, MatrixView<T> c) {
  const int64_t inner = trans_a == Transpose::kNo ? a.cols : a.rows;
  for (int64_t i = 0; i < c.rows; ++i) {
    for (int64_t j = 0; j < c.cols; ++j) {
      double sum = 0;
      for (int64_t k = 0; k < inner; ++k) {
        const T av = trans_a == Transpose::kNo ? a(i, k) : a(k, i);
        const T bv = trans_b == Transpose::kNo ? b(k, j) : b(j, k);
        sum += static_cast<double>(av) * static_cast<double>(bv);
      }
      const double prior = beta == T(0) ? 0.0 : static_cast<double>(beta) * c(i, j);
      c(i, j) = static_cast<T>(static_cast<double>(alpha) * sum + prior);
    }
  }
}

template <typename T>
void BiasAdd(std::span<const T> bias, MatrixView<T> y) {
  for (int64_t i = 0; i < y.rows; ++i)
    for (int64_t j = 0; j < y.cols; ++j) y(i, j) += bias[j];
}

template <typename T>
void BiasGrad(ConstMatrixView<T> dy, std::span<T> db) {
  for (int64_t j = 0; j < dy.cols; ++j) {
    double sum = 0;
    for (int64_t i = 0; i < dy.rows; ++i) sum += dy(i, j);
    db[j] = static_cast<T>(sum);
  }
}

template <typename T>
void ReluForward(ConstMatrixView<T> x, MatrixView<T> y) {
  for (int64_t i = 0; i < x.rows; ++i)
    for (int64_t j = 0; j < x.cols; ++j) y(i, j) = x(i, j) > 0 ? x(i, j) : T(0);
}

template <typename T>
void ReluBackward(ConstMatrixView<T> y, ConstMatrixView<T> dy, MatrixView<T> dx) {
  for (int64_t i = 0; i < y.rows; ++i)
    for (int64_t j = 0; j < y.cols; ++j) dx(i, j) = y(i, j) > 0 ? dy(i, j) : T(0);
}

template <typename T>
void BiasReluForward(std::span<const T> bias, MatrixView<T> y) {
  for (int64_t i = 0; i < y.rows; ++i)
    for (int64_t j = 0; j < y.cols; ++j) y(i, j) = std::max(y(i, j) + bias[j], T(0));
}

template <typename T>
void ReluBackwardBiasGrad(ConstMatrixView<T> y, ConstMatrixView<T> dy, MatrixView<T> dx,
                          std::span<T> db) {
  for (int64_t j = 0; j < y.cols; ++j) {
    double sum = 0;
    for (int64_t i = 0; i < y.rows; ++i) {
      dx(i, j) = y(i, j) > 0 ? dy(i, j) : T(0);
      sum += dx(i, j);
    }
    db[j] = static_cast<T>(sum);
  }
}

template <typename T>
void ScaleRows(std::span<const T> weights, MatrixView<T> m) {
  for (int64_t i = 0; i < m.rows; ++i)
    for (int64_t j = 0; j < m.cols; ++j) m(i, j) *= weights[i];
}

template <typename T>
void SoftmaxCrossEntropyForward(ConstMatrixView<T> logits, std::span<const int32_t> labels,
                                MatrixView<T> probs, T* loss) {
  double total = 0;
  for (int64_t i = 0; i < logits.rows; ++i) {
    double max = logits(i, 0);
    for (int64_t j = 1; j < logits.cols; ++j) max = std::max<double>(max, logits(i, j));
    double sum = 0;
    for (int64_t j = 0; j < logits.cols; ++j) sum += std::exp(logits(i, j) - max);
    total += -(logits(i, labels[i]) - max - std::log(sum));
    for (int64_t j = 0; j < logits.cols; ++j) {
      probs(i, j) = static_cast<T>(std::exp(logits(i, j) - max) / sum);
    }
  }
  *loss = logits.rows == 0 ? T(0) : static_cast<T>(total / logits.rows);
}

template <typename T>
void SoftmaxCrossEntropyBackward(ConstMatrixView<T> probs, std::span<const int32_t> labels,
                                 MatrixView<T> dlogits) {
  for (int64_t i = 0; i < probs.rows; ++i) {
    for (int64_t j = 0; j < probs.cols; ++j) {
      const double onehot = j == labels[i] ? 1.0 : 0.0;
      dlogits(i, j) = static_cast<T>((probs(i, j) - onehot) / probs.rows);
    }
  }
}

template <typename T>
void SigmoidCrossEntropyForward(ConstMatrixView<T> logits, std::span<const T> targets, T* loss) {
  double total = 0;
  for (int64_t i = 0; i < logits.rows; ++i) {
    const double z = logits(i, 0);
    const double p = 1.0 / (1.0 + std::exp(-z));
    total += -(targets[i] * std::log(p) + (1 - targets[i]) * std::log(1 - p));
  }
  *loss = logits.rows == 0 ? T(0) : static_cast<T>(total / logits.rows);
}

template <typename T>
void SigmoidCrossEntropyBackward(ConstMatrixView<T> logits, std::span<const T> targets,
                                 MatrixView<T> dlogits) {
  for (int64_t i = 0; i < logits.rows; ++i) {
    const double p = 1.0 / (1.0 + std::exp(-static_cast<double>(logits(i, 0))));
    dlogits(i, 0) = static_cast<T>((p - targets[i]) / logits.rows);
  }
}

template <typename T>
void MeanSquaredErrorForward(ConstMatrixView<T> predictions, std::span<const T> targets,
                             T* loss) {
  double total = 0;
  for (int64_t i = 0; i < predictions.rows; ++i) {
    const double e = static_cast<double>(predictions(i, 0)) - targets[i];
    total += 0.5 * e * e;
  }
  *loss = predictions.rows == 0 ? T(0) : static_cast<T>(total / predictions.rows);
}

template <typename T>
void MeanSquaredErrorBackward(ConstMatrixView<T> predictions, std::span<const T> targets,
                              MatrixView<T> dpredictions) {
  for (int64_t i = 0; i < predictions.rows; ++i) {
    dpredictions(i, 0) =
        static_cast<T>((static_cast<double>(predictions(i, 0)) - targets[i]) / predictions.rows);
  }
}

template <typename T>
void SgdStep(const SgdOptions& o, std::span<const T> grad, std::span<T> velocity,
             std::span<T> params) {
  for (size_t i = 0; i < params.size(); ++i) {
    double g = static_cast<double>(grad[i]) + o.weight_decay * params[i];
    double step = g;
    if (o.momentum != 0) {
      const double v = o.momentum * velocity[i] + g;
      velocity[i] = static_cast<T>(v);
      step = o.nesterov ? g + o.momentum * v : v;
    }
    params[i] = static_cast<T>(params[i] - o.learning_rate * step);
  }
}

#define MURMUR_KERNEL MURMUR_INSTANTIATE_REFERENCE_KERNEL
#include "kernels/ops.inc"

}  // namespace murmur::kernels::reference
