#include "base/status.h"

#include <cstdio>
#include <cstdlib>

namespace murmur {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid_argument";
    case StatusCode::kDeadlineExceeded: return "deadline_exceeded";
    case StatusCode::kNotFound: return "not_found";
    case StatusCode::kResourceExhausted: return "resource_exhausted";
    case StatusCode::kFailedPrecondition: return "failed_precondition";
    case StatusCode::kOutOfRange: return "out_of_range";
    case StatusCode::kUnimplemented: return "unimplemented";
    case StatusCode::kInternal: return "internal";
    case StatusCode::kUnavailable: return "unavailable";
    case StatusCode::kDataLoss: return "data_loss";
  }
  return "unknown";
}

Status::Status(StatusCode code, std::string_view message) {
  if (code != StatusCode::kOk) rep_ = std::make_unique<Rep>(Rep{code, std::string(message)});
}

Status::Status(const Status& other)
    : rep_(other.rep_ ? std::make_unique<Rep>(*other.rep_) : nullptr) {}

Status& Status::operator=(const Status& other) {
  if (this != &other) rep_ = other.rep_ ? std::make_unique<Rep>(*other.rep_) : nullptr;
  return *this;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(StatusCodeName(rep_->code));
  out += ": ";
  out += rep_->message;
  return out;
}

Status Status::WithContext(std::string_view prefix) const {
  if (ok()) return Status();
  std::string message(prefix);
  message += ": ";
  message += rep_->message;
  return Status(rep_->code, message);
}

Status InvalidArgumentError(std::string_view m) { return Status(StatusCode::kInvalidArgument, m); }
Status DeadlineExceededError(std::string_view m) {
  return Status(StatusCode::kDeadlineExceeded, m);
}
Status NotFoundError(std::string_view m) { return Status(StatusCode::kNotFound, m); }
Status ResourceExhaustedError(std::string_view m) {
  return Status(StatusCode::kResourceExhausted, m);
}
Status FailedPreconditionError(std::string_view m) {
  return Status(StatusCode::kFailedPrecondition, m);
}
Status OutOfRangeError(std::string_view m) { return Status(StatusCode::kOutOfRange, m); }
Status UnimplementedError(std::string_view m) { return Status(StatusCode::kUnimplemented, m); }
Status InternalError(std::string_view m) { return Status(StatusCode::kInternal, m); }
Status UnavailableError(std::string_view m) { return Status(StatusCode::kUnavailable, m); }
Status DataLossError(std::string_view m) { return Status(StatusCode::kDataLoss, m); }

std::ostream& operator<<(std::ostream& os, const Status& status) {
  return os << status.ToString();
}

bool operator==(const Status& a, const Status& b) {
  return a.code() == b.code() && a.message() == b.message();
}

namespace internal {
void AbortStatusOrAccess(const Status& status) {
  std::fprintf(stderr, "murmur: value() of a StatusOr without a value: %s\n",
               status.ToString().c_str());
  std::abort();
}
}  // namespace internal

}  // namespace murmur
