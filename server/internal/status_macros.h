// Status propagation helpers for server/ (Abseil 20220623 has none public).
//
//   PRISM_RETURN_IF_ERROR(conn.Exec("BEGIN"));
//   PRISM_ASSIGN_OR_RETURN(Query q, conn.Prepare(kSql));
//
// The definitions are guarded so another module's identical private copy can
// coexist in one translation unit.
#ifndef PRISM_SERVER_INTERNAL_STATUS_MACROS_H_
#define PRISM_SERVER_INTERNAL_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#ifndef PRISM_RETURN_IF_ERROR
#define PRISM_RETURN_IF_ERROR(expr)                \
  do {                                             \
    const ::absl::Status prism_status_ = (expr);   \
    if (!prism_status_.ok()) return prism_status_; \
  } while (false)
#endif

#ifndef PRISM_ASSIGN_OR_RETURN
#define PRISM_STATUS_CONCAT_INNER_(a, b) a##b
#define PRISM_STATUS_CONCAT_(a, b) PRISM_STATUS_CONCAT_INNER_(a, b)
#define PRISM_ASSIGN_OR_RETURN(lhs, expr)                                      \
  PRISM_ASSIGN_OR_RETURN_IMPL_(PRISM_STATUS_CONCAT_(prism_or_, __LINE__), lhs, \
                               expr)
#define PRISM_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(*tmp)
#endif

#endif  // PRISM_SERVER_INTERNAL_STATUS_MACROS_H_
