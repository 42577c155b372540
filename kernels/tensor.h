#pragma once
// Non-owning views over memory the caller owns. These are the whole kernel API surface: no Eigen,
// no CUDA types, so every layer can include them. Where the memory lives (host or device)
// is a property of the Device the kernel runs on, not of the view.

#include <cstdint>
#include <span>
#include <type_traits>

namespace murmur::kernels {

// A row-major matrix: element (r, c) is data[r * stride + c]. REQUIRES: stride >= cols.
template <typename T>
struct MatrixView {
  T* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t stride = 0;

  MatrixView() = default;
  MatrixView(T* d, int64_t r, int64_t c) : data(d), rows(r), cols(c), stride(c) {}
  MatrixView(T* d, int64_t r, int64_t c, int64_t s) : data(d), rows(r), cols(c), stride(s) {}
  // A view of mutable data converts to a view of const data.
  template <typename U, typename = std::enable_if_t<std::is_same_v<const U, T> &&
                                                    !std::is_same_v<U, T>>>
  MatrixView(const MatrixView<U>& o)  // NOLINT: implicit by design
      : data(o.data), rows(o.rows), cols(o.cols), stride(o.stride) {}

  int64_t size() const { return rows * cols; }
  T& operator()(int64_t r, int64_t c) const { return data[r * stride + c]; }
  // Rows [begin, begin + count).
  MatrixView RowBlock(int64_t begin, int64_t count) const {
    return MatrixView(data + begin * stride, count, cols, stride);
  }
};

template <typename T>
using ConstMatrixView = MatrixView<const T>;

}  // namespace murmur::kernels
