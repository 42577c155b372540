#include "kernels/cpu/cpu_ops.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>

namespace murmur::kernels::cpu {
namespace {

template <typename T>
using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using Map = Eigen::Map<RowMajor<T>, Eigen::Unaligned, Eigen::OuterStride<>>;
template <typename T>
using ConstMap = Eigen::Map<const RowMajor<T>, Eigen::Unaligned, Eigen::OuterStride<>>;
template <typename T>
using ArrayMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using ConstArrayMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

template <typename T>
Map<T> AsEigen(MatrixView<T> m) {
  return Map<T>(m.data, m.rows, m.cols, Eigen::OuterStride<>(m.stride));
}
template <typename T>
ConstMap<T> AsEigen(ConstMatrixView<T> m) {
  return ConstMap<T>(m.data, m.rows, m.cols, Eigen::OuterStride<>(m.stride));
}

template <typename T, typename A, typename B>
void Assign(T alpha, const A& a, const B& b, T beta, Map<T>& c) {
  if (beta == T(0)) {
    c.noalias() = alpha * (a * b);
  } else {
    if (beta != T(1)) c *= beta;
    c.noalias() += alpha * (a * b);
  }
}

}  // namespace

template <typename T>
void Gemm(Transpose trans_a, Transpose trans_b, T alpha, ConstMatrixView<T> a,
          ConstMatrixView<T> b, T beta, MatrixView<T> c) {
  if (c.size() == 0) return;
  Map<T> cm = AsEigen(c);
  // An empty inner dimension makes op(A) * op(B) the zero matrix.
  const int64_t inner = trans_a == Transpose::kNo ? a.cols : a.rows;
  if (inner == 0) {
    if (beta == T(0)) {
      cm.setZero();
    } else {
      cm *= beta;
    }
    return;
  }
  ConstMap<T> am = AsEigen(a);
  ConstMap<T> bm = AsEigen(b);
  const bool ta = trans_a == Transpose::kYes;
  const bool tb = trans_b == Transpose::kYes;
  if (!ta && !tb) Assign(alpha, am, bm, beta, cm);
  if (!ta && tb) Assign(alpha, am, bm.transpose(), beta, cm);
  if (ta && !tb) Assign(alpha, am.transpose(), bm, beta, cm);
  if (ta && tb) Assign(alpha, am.transpose(), bm.transpose(), beta, cm);
}

template <typename T>
void BiasAdd(std::span<const T> bias, MatrixView<T> y) {
  if (y.size() == 0) return;
  Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>> b(bias.data(), y.cols);
  AsEigen(y).rowwise() += b;
}

template <typename T>
void BiasGrad(ConstMatrixView<T> dy, std::span<T> db) {
  Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>> out(db.data(), dy.cols);
  if (dy.rows == 0) {
    out.setZero();
    return;
  }
  // Accumulated in double: a float column sum over 10^6 rows drifts by ~3e-5 relative.
  out = AsEigen(dy).template cast<double>().colwise().sum().template cast<T>();
}

template <typename T>
void ReluForward(ConstMatrixView<T> x, MatrixView<T> y) {
  if (y.size() == 0) return;
  AsEigen(y).array() = AsEigen(x).array().max(T(0));
}

template <typename T>
void ReluBackward(ConstMatrixView<T> y, ConstMatrixView<T> dy, MatrixView<T> dx) {
  if (dx.size() == 0) return;
  AsEigen(dx).array() = (AsEigen(y).array() > T(0)).select(AsEigen(dy).array(), T(0));
}

template <typename T>
void BiasReluForward(std::span<const T> bias, MatrixView<T> y) {
  if (y.size() == 0) return;
  Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>> b(bias.data(), y.cols);
  Map<T> ym = AsEigen(y);
  for (Eigen::Index r = 0; r < ym.rows(); ++r) {
    ym.row(r) = (ym.row(r) + b).cwiseMax(T(0));
  }
}

template <typename T>
void ReluBackwardBiasGrad(ConstMatrixView<T> y, ConstMatrixView<T> dy, MatrixView<T> dx,
                          std::span<T> db) {
  ReluBackward(y, dy, dx);
  BiasGrad(ConstMatrixView<T>(dx), db);
}

template <typename T>
void ScaleRows(std::span<const T> weights, MatrixView<T> m) {
  if (m.size() == 0) return;
  Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>> w(weights.data(), m.rows);
  AsEigen(m) = w.asDiagonal() * AsEigen(m);
}

template <typename U>
void GatherRows(ConstMatrixView<U> src, std::span<const int64_t> rows, MatrixView<U> dst) {
  for (size_t i = 0; i < rows.size(); ++i) {
    std::copy_n(src.data + rows[i] * src.stride, src.cols, dst.data + static_cast<int64_t>(i) * dst.stride);
  }
}

template <typename T>
void SoftmaxCrossEntropyForward(ConstMatrixView<T> logits, std::span<const int32_t> labels,
                                MatrixView<T> probs, T* loss) {
  // Accumulate in double so the mean over a large batch does not lose digits.
  double total = 0;
  for (int64_t r = 0; r < logits.rows; ++r) {
    const T* in = logits.data + r * logits.stride;
    T* out = probs.data + r * probs.stride;
    const T max = *std::max_element(in, in + logits.cols);
    T sum = 0;
    for (int64_t c = 0; c < logits.cols; ++c) {
      out[c] = std::exp(in[c] - max);
      sum += out[c];
    }
    const T inv = T(1) / sum;
    for (int64_t c = 0; c < logits.cols; ++c) out[c] *= inv;
    // -log softmax(label) = log(sum) - (z_label - max), exact even when the probability underflows.
    total += std::log(sum) - (in[labels[r]] - max);
  }
  *loss = logits.rows == 0 ? T(0) : static_cast<T>(total / static_cast<double>(logits.rows));
}

template <typename T>
void SoftmaxCrossEntropyBackward(ConstMatrixView<T> probs, std::span<const int32_t> labels,
                                 MatrixView<T> dlogits) {
  if (probs.rows == 0) return;
  const T scale = T(1) / static_cast<T>(probs.rows);
  for (int64_t r = 0; r < probs.rows; ++r) {
    const T* p = probs.data + r * probs.stride;
    T* d = dlogits.data + r * dlogits.stride;
    for (int64_t c = 0; c < probs.cols; ++c) d[c] = p[c] * scale;
    d[labels[r]] -= scale;
  }
}

template <typename T>
void SigmoidCrossEntropyForward(ConstMatrixView<T> logits, std::span<const T> targets, T* loss) {
  double total = 0;
  for (int64_t r = 0; r < logits.rows; ++r) {
    const T z = logits(r, 0);
    // log(1 + e^z) = max(z, 0) + log1p(e^-|z|)
    total += std::max(z, T(0)) + std::log1p(std::exp(-std::abs(z))) - targets[r] * z;
  }
  *loss = logits.rows == 0 ? T(0) : static_cast<T>(total / static_cast<double>(logits.rows));
}

template <typename T>
void SigmoidCrossEntropyBackward(ConstMatrixView<T> logits, std::span<const T> targets,
                                 MatrixView<T> dlogits) {
  const T scale = logits.rows == 0 ? T(0) : T(1) / static_cast<T>(logits.rows);
  for (int64_t r = 0; r < logits.rows; ++r) {
    const T z = logits(r, 0);
    const T sigmoid = z >= 0 ? T(1) / (T(1) + std::exp(-z)) : std::exp(z) / (T(1) + std::exp(z));
    dlogits(r, 0) = (sigmoid - targets[r]) * scale;
  }
}

template <typename T>
void MeanSquaredErrorForward(ConstMatrixView<T> predictions, std::span<const T> targets,
                             T* loss) {
  double total = 0;
  for (int64_t r = 0; r < predictions.rows; ++r) {
    const double e = static_cast<double>(predictions(r, 0)) - targets[r];
    total += 0.5 * e * e;
  }
  *loss = predictions.rows == 0 ? T(0)
                                : static_cast<T>(total / static_cast<double>(predictions.rows));
}

template <typename T>
void MeanSquaredErrorBackward(ConstMatrixView<T> predictions, std::span<const T> targets,
                              MatrixView<T> dpredictions) {
  const T scale = predictions.rows == 0 ? T(0) : T(1) / static_cast<T>(predictions.rows);
  for (int64_t r = 0; r < predictions.rows; ++r) {
    dpredictions(r, 0) = (predictions(r, 0) - targets[r]) * scale;
  }
}

template <typename T>
void SgdStep(const SgdOptions& options, std::span<const T> grad, std::span<T> velocity,
             std::span<T> params) {
  const auto n = static_cast<Eigen::Index>(params.size());
  if (n == 0) return;
  ArrayMap<T> p(params.data(), n);
  ConstArrayMap<T> g(grad.data(), n);
  const T lr = static_cast<T>(options.learning_rate);
  const T wd = static_cast<T>(options.weight_decay);
  const T m = static_cast<T>(options.momentum);
  if (options.momentum == 0) {
    if (wd == T(0)) {
      p -= lr * g;
    } else {
      p -= lr * (g + wd * p);
    }
    return;
  }
  // One pass over velocity and parameters together (two Eigen passes read both twice); the same
  // operations in the same order, so the same bits. The weight decay term
  // uses the old parameters, as PyTorch does.
  T* __restrict vs = velocity.data();
  T* __restrict ps = params.data();
  const T* __restrict gs = grad.data();
  auto run = [&]<bool kDecay, bool kNesterov>() {
    for (Eigen::Index k = 0; k < n; ++k) {
      const T gk = kDecay ? gs[k] + wd * ps[k] : gs[k];
      const T vk = m * vs[k] + gk;
      vs[k] = vk;
      ps[k] -= lr * (kNesterov ? gk + m * vk : vk);
    }
  };
  const bool decay = wd != T(0);
  if (decay && options.nesterov) run.template operator()<true, true>();
  if (decay && !options.nesterov) run.template operator()<true, false>();
  if (!decay && options.nesterov) run.template operator()<false, true>();
  if (!decay && !options.nesterov) run.template operator()<false, false>();
}

#define MURMUR_KERNEL MURMUR_INSTANTIATE_HOST_KERNEL
#include "kernels/ops.inc"

}  // namespace murmur::kernels::cpu
