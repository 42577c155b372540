#pragma once
// Status and StatusOr<T>: the one error type of murmur (modeled on absl::Status).
//
// An OK Status holds no allocation, so returning it costs a null pointer. Codes are a closed
// subset of abseil's canonical codes; choose by what the caller can do about it:
//   kInvalidArgument   bad input from outside the process (flag, config, API argument)
//   kNotFound          a named thing (file, key, peer) does not exist
//   kFailedPrecondition the system is not in a state where this can run
//   kOutOfRange        a value outside a valid range that a caller could iterate past
//   kDataLoss          bytes that fail to decode, are truncated or fail a checksum
//   kUnavailable       transient: retry with backoff
//   kDeadlineExceeded  a deadline passed before the work finished
//   kResourceExhausted memory, queue or quota exhausted
//   kUnimplemented     not supported by this build or backend
//   kInternal          an invariant of a library we call was broken
// A straggler or a stale message is not an error: return a value for it instead.

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace murmur {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
};

// Stable lower_snake name of a code ("invalid_argument"), usable as a metric label.
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status final {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string_view message);
  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  // Empty for OK.
  std::string_view message() const { return rep_ ? std::string_view(rep_->message) : ""; }
  // "OK" or "invalid_argument: <message>".
  std::string ToString() const;

  // Returns a status with the same code whose message is "<prefix>: <message>". OK stays OK.
  Status WithContext(std::string_view prefix) const;

  // Explicitly drops a status where ignoring it is correct; says so at the call site.
  void IgnoreError() const {}

 private:
  struct Rep {
    StatusCode code;
    std::string message;
  };
  std::unique_ptr<Rep> rep_;
};

inline Status OkStatus() { return Status(); }
Status InvalidArgumentError(std::string_view message);
Status DeadlineExceededError(std::string_view message);
Status NotFoundError(std::string_view message);
Status ResourceExhaustedError(std::string_view message);
Status FailedPreconditionError(std::string_view message);
Status OutOfRangeError(std::string_view message);
Status UnimplementedError(std::string_view message);
Status InternalError(std::string_view message);
Status UnavailableError(std::string_view message);
Status DataLossError(std::string_view message);

std::ostream& operator<<(std::ostream& os, const Status& status);
bool operator==(const Status& a, const Status& b);

// Either a value of T or a non-OK Status. Accessing the value of a non-OK StatusOr aborts.
template <typename T>
class [[nodiscard]] StatusOr final {
  static_assert(!std::is_same_v<std::decay_t<T>, Status>, "StatusOr<Status> is not allowed");

 public:
  // REQUIRES: !status.ok()
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) AbortOkWithoutValue();
  }
  StatusOr(const T& value) : value_(value) {}        // NOLINT: implicit by design
  StatusOr(T&& value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  template <typename U,
            typename = std::enable_if_t<std::is_constructible_v<T, U&&> &&
                                        !std::is_same_v<std::decay_t<U>, Status> &&
                                        !std::is_same_v<std::decay_t<U>, StatusOr<T>> &&
                                        !std::is_same_v<std::decay_t<U>, T>>>
  StatusOr(U&& value) : value_(std::forward<U>(value)) {}  // NOLINT

  bool ok() const { return status_.ok(); }
  const Status& status() const& { return status_; }
  Status status() && { return std::move(status_); }

  const T& value() const& {
    EnsureValue();
    return *value_;
  }
  T& value() & {
    EnsureValue();
    return *value_;
  }
  T&& value() && {
    EnsureValue();
    return std::move(*value_);
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  void EnsureValue() const {
    if (!status_.ok()) AbortNoValue(status_);
  }
  [[noreturn]] static void AbortNoValue(const Status& status);
  [[noreturn]] static void AbortOkWithoutValue();

  Status status_;
  std::optional<T> value_;
};

namespace internal {
[[noreturn]] void AbortStatusOrAccess(const Status& status);
}  // namespace internal

template <typename T>
void StatusOr<T>::AbortNoValue(const Status& status) {
  internal::AbortStatusOrAccess(status);
}
template <typename T>
void StatusOr<T>::AbortOkWithoutValue() {
  internal::AbortStatusOrAccess(InternalError("StatusOr constructed from an OK Status"));
}

}  // namespace murmur

#define MURMUR_STATUS_CONCAT_INNER_(a, b) a##b
#define MURMUR_STATUS_CONCAT_(a, b) MURMUR_STATUS_CONCAT_INNER_(a, b)

// Returns from the enclosing function when `expr` (a Status) is not OK.
#define MURMUR_RETURN_IF_ERROR(expr)                           \
  do {                                                         \
    ::murmur::Status murmur_status_ = (expr);                  \
    if (!murmur_status_.ok()) return murmur_status_;           \
  } while (0)

// `lhs = value of expr` (a StatusOr), or returns its Status from the enclosing function.
// `lhs` may declare a variable: MURMUR_ASSIGN_OR_RETURN(auto x, Parse(s));
#define MURMUR_ASSIGN_OR_RETURN(lhs, expr) \
  MURMUR_ASSIGN_OR_RETURN_IMPL_(MURMUR_STATUS_CONCAT_(murmur_statusor_, __LINE__), lhs, expr)
#define MURMUR_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return std::move(tmp).status();      \
  lhs = std::move(tmp).value()
