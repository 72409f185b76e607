// Checks on single values a client sent, shared by every domain: each
// returns InvalidArgument naming the field, so a caller learns what to fix.
//
//   PRISM_RETURN_IF_ERROR(CheckStringLength("host", host, max_string_bytes));
//   PRISM_RETURN_IF_ERROR(CheckFinite("tokens_per_second", tokens_per_second));
//
// The bounds themselves (the --max-... flags) are server/core/experiments/
// limits.h's. Thread-safety: pure functions.
#ifndef PRISM_SERVER_CORE_INFRA_CHECKS_H_
#define PRISM_SERVER_CORE_INFRA_CHECKS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "prism/v1/prism.pb.h"

namespace prism::server {

// OverLimit returns `code` with "<what> is <value>; limit --<flag>=<limit>".
absl::Status OverLimit(absl::StatusCode code, absl::string_view what,
                       int64_t value, absl::string_view flag, int64_t limit);

// CheckStringLength returns InvalidArgument naming `field` when `value` is
// longer than `max_string_bytes` (Limits::max_string_bytes).
absl::Status CheckStringLength(absl::string_view field, absl::string_view value,
                               int max_string_bytes);

// CheckFinite returns InvalidArgument "<field> is <value>; values must be
// finite" for NaN or an infinity.
absl::Status CheckFinite(absl::string_view field, double value);

// CheckMetricsFinite refuses non-finite final metrics of a trial that is not
// reported diverged (a diverged trial's loss may be NaN: it is recorded as
// diverged and never ranked). InvalidArgument naming the field.
absl::Status CheckMetricsFinite(const v1::TrialMetrics& metrics);

}  // namespace prism::server

#endif  // PRISM_SERVER_CORE_INFRA_CHECKS_H_
