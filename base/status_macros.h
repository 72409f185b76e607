// Status propagation helpers (Abseil 20220623 has none public), for any
// module that returns absl::Status / absl::StatusOr:
//
//   PRISM_RETURN_IF_ERROR(conn.Exec("BEGIN"));
//   PRISM_ASSIGN_OR_RETURN(Query q, conn.Prepare(kSql));
//
// PRISM_RETURN_IF_ERROR returns the expression's status from the enclosing
// function when it is not OK. PRISM_ASSIGN_OR_RETURN moves the value of an OK
// StatusOr into `lhs` (a declaration or an lvalue), else returns its status.
//
// Thread-safety: macros only; no state.
#ifndef PRISM_BASE_STATUS_MACROS_H_
#define PRISM_BASE_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define PRISM_RETURN_IF_ERROR(expr)                \
  do {                                             \
    const ::absl::Status prism_status_ = (expr);   \
    if (!prism_status_.ok()) return prism_status_; \
  } while (false)

#define PRISM_STATUS_CONCAT_INNER_(a, b) a##b
#define PRISM_STATUS_CONCAT_(a, b) PRISM_STATUS_CONCAT_INNER_(a, b)
#define PRISM_ASSIGN_OR_RETURN(lhs, expr)                                      \
  PRISM_ASSIGN_OR_RETURN_IMPL_(PRISM_STATUS_CONCAT_(prism_or_, __LINE__), lhs, \
                               expr)
#define PRISM_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(*tmp)

#endif  // PRISM_BASE_STATUS_MACROS_H_
