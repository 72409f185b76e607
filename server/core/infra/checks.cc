#include "server/core/infra/checks.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace prism::server {

absl::Status OverLimit(absl::StatusCode code, absl::string_view what,
                       int64_t value, absl::string_view flag, int64_t limit) {
  return absl::Status(
      code, absl::StrCat(what, " is ", value, "; limit --", flag, "=", limit));
}

absl::Status CheckStringLength(absl::string_view field, absl::string_view value,
                               int max_string_bytes) {
  if (value.size() <= static_cast<size_t>(max_string_bytes)) {
    return absl::OkStatus();
  }
  return OverLimit(absl::StatusCode::kInvalidArgument,
                   absl::StrCat(field, "'s length in bytes"),
                   static_cast<int64_t>(value.size()), "max-string-bytes",
                   max_string_bytes);
}

absl::Status CheckFinite(absl::string_view field, double value) {
  if (std::isfinite(value)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, " is ", value, "; values must be finite"));
}

absl::Status CheckMetricsFinite(const v1::TrialMetrics& m) {
  if (m.diverged()) return absl::OkStatus();
  const struct {
    const char* field;
    double value;
  } fields[] = {
      {"metrics.final_val_loss", m.final_val_loss()},
      {"metrics.min_val_loss", m.min_val_loss()},
      {"metrics.final_train_loss", m.final_train_loss()},
      {"metrics.tokens_per_second", m.tokens_per_second()},
      {"metrics.mfu", m.mfu()},
      {"metrics.peak_matmul_flops", m.peak_matmul_flops()},
      {"metrics.measured_peak_matmul_flops", m.measured_peak_matmul_flops()},
      {"metrics.wall_seconds", m.wall_seconds()},
  };
  for (const auto& f : fields) {
    absl::Status finite = CheckFinite(f.field, f.value);
    if (!finite.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(finite.message(),
                       " (a trial whose loss is not finite is reported "
                       "with metrics.diverged)"));
    }
  }
  for (int i = 0; i < m.attention_distance_size(); ++i) {
    PRISM_RETURN_IF_ERROR(
        CheckFinite(absl::StrCat("metrics.attention_distance[", i, "]"),
                    m.attention_distance(i)));
  }
  for (int i = 0; i < m.milestones_size(); ++i) {
    PRISM_RETURN_IF_ERROR(
        CheckFinite(absl::StrCat("metrics.milestones[", i, "].target"),
                    m.milestones(i).target()));
  }
  return absl::OkStatus();
}

}  // namespace prism::server
