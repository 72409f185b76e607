#include "cli/views/trials.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "cli/views/format.h"
#include "fmt/format.h"
#include "proto/enum_names.h"

namespace prism::cli {

std::string MfuText(const v1::TrialMetrics& metrics) {
  const double peak = metrics.peak_matmul_flops();
  const double measured = metrics.measured_peak_matmul_flops();
  if (peak <= 0) return "MFU not measured";
  if (measured > 0 && measured < peak) {
    return fmt::format(
        "MFU {:.1f}% ({:.1f} GFLOP/s achieved, above the {:.1f} GFLOP/s "
        "matmul measured)",
        metrics.mfu() * 100, peak / 1e9, measured / 1e9);
  }
  return fmt::format("MFU {:.1f}% of {:.1f} GFLOP/s", metrics.mfu() * 100,
                     peak / 1e9);
}

namespace {

// IsFinished: a trial stopped at an ASHA rung shows its val loss there too.
bool IsFinished(const v1::Trial& t) {
  return t.state() == v1::TRIAL_COMPLETED || t.state() == v1::TRIAL_DIVERGED ||
         t.state() == v1::TRIAL_STOPPED_AT_RUNG;
}

constexpr Column<v1::Trial> kTrialColumns[] = {
    {"id", [](const v1::Trial& t) { return absl::StrCat(t.id()); }},
    {"schedule", [](const v1::Trial& t) { return t.schedule(); }},
    {"seed", [](const v1::Trial& t) { return absl::StrCat(t.seed()); }},
    {"baseline",
     [](const v1::Trial& t) -> std::string {
       return t.is_baseline() ? "true" : "false";
     }},
    {"state", [](const v1::Trial& t) { return EnumValueName(t.state()); }},
    {"attempt", [](const v1::Trial& t) { return absl::StrCat(t.attempt()); }},
    {"step", [](const v1::Trial& t) { return absl::StrCat(t.last_step()); }},
    {"total_steps",
     [](const v1::Trial& t) { return absl::StrCat(t.total_steps()); }},
    {"val_loss",
     [](const v1::Trial& t) -> std::string {
       return IsFinished(t) ? Fixed(t.metrics().final_val_loss(), 4) : "";
     }},
    {"worker", [](const v1::Trial& t) { return t.worker_id(); }},
};

constexpr Column<v1::LossPoint> kPointColumns[] = {
    {"split",
     [](const v1::LossPoint& p) -> std::string {
       return p.split() == v1::SPLIT_VAL ? "val" : "train";
     }},
    {"step", [](const v1::LossPoint& p) { return absl::StrCat(p.step()); }},
    {"loss", [](const v1::LossPoint& p) { return Fixed(p.loss(), 4); }},
    {"learning_rate",
     [](const v1::LossPoint& p) {
       return fmt::format("{:.3g}", p.learning_rate());
     }},
    {"tokens_per_s",
     [](const v1::LossPoint& p) { return Fixed(p.tokens_per_second(), 0); }},
    {"elapsed_s",
     [](const v1::LossPoint& p) { return Fixed(p.elapsed_seconds(), 1); }},
};

}  // namespace

Table TrialsTable(const v1::ListTrialsResponse& response) {
  return TableOf<v1::Trial>(kTrialColumns, response.trials());
}

Table PointsTable(const v1::GetTrialResponse& response) {
  return TableOf<v1::LossPoint>(kPointColumns, response.points());
}

}  // namespace prism::cli
