#pragma once
// Invariant checks. A failed check is a bug: it logs file:line, the condition and whatever was
// streamed into it, then aborts. A crashed node is a crash-stop failure the protocols handle.
//   MURMUR_CHECK(n > 0) << "n=" << n;
//   MURMUR_CHECK_EQ(a.size(), b.size());
// MURMUR_DCHECK* compile away in release builds (NDEBUG); use them on hot paths.

#include <sstream>

namespace murmur::internal {

class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  [[noreturn]] ~CheckFailure();
  std::ostream& stream() { return stream_; }

 private:
  std::ostringstream stream_;
};

// Makes `cond ? (void)0 : Voidify() & CheckFailure(...).stream() << ...` type-check.
struct Voidify {
  void operator&(std::ostream&) {}
};

}  // namespace murmur::internal

#define MURMUR_CHECK(cond)                \
  (cond) ? (void)0                        \
         : ::murmur::internal::Voidify() & \
               ::murmur::internal::CheckFailure(__FILE__, __LINE__, #cond).stream()

#define MURMUR_CHECK_OP_(a, op, b) \
  MURMUR_CHECK((a)op(b)) << "(" << (a) << " vs " << (b) << ") "
#define MURMUR_CHECK_EQ(a, b) MURMUR_CHECK_OP_(a, ==, b)
#define MURMUR_CHECK_NE(a, b) MURMUR_CHECK_OP_(a, !=, b)
#define MURMUR_CHECK_LT(a, b) MURMUR_CHECK_OP_(a, <, b)
#define MURMUR_CHECK_LE(a, b) MURMUR_CHECK_OP_(a, <=, b)
#define MURMUR_CHECK_GT(a, b) MURMUR_CHECK_OP_(a, >, b)
#define MURMUR_CHECK_GE(a, b) MURMUR_CHECK_OP_(a, >=, b)
// Aborts when a Status is not OK; for calls that cannot fail unless there is a bug.
#define MURMUR_CHECK_OK(expr)                              \
  do {                                                     \
    const ::murmur::Status murmur_check_status_ = (expr);  \
    MURMUR_CHECK(murmur_check_status_.ok()) << murmur_check_status_.ToString(); \
  } while (0)

#ifdef NDEBUG
#define MURMUR_DCHECK(cond) \
  while (false) MURMUR_CHECK(cond)
#else
#define MURMUR_DCHECK(cond) MURMUR_CHECK(cond)
#endif
