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

Table TrialsTable(const v1::ListTrialsResponse& response) {
  Table table({"id", "schedule", "seed", "baseline", "state", "attempt", "step",
               "total_steps", "val_loss", "worker"});
  for (const v1::Trial& t : response.trials()) {
    // A trial stopped at an ASHA rung shows its val loss there.
    const bool finished = t.state() == v1::TRIAL_COMPLETED ||
                          t.state() == v1::TRIAL_DIVERGED ||
                          t.state() == v1::TRIAL_STOPPED_AT_RUNG;
    table.AddRow({absl::StrCat(t.id()), t.schedule(), absl::StrCat(t.seed()),
                  t.is_baseline() ? "true" : "false", EnumValueName(t.state()),
                  absl::StrCat(t.attempt()), absl::StrCat(t.last_step()),
                  absl::StrCat(t.total_steps()),
                  finished ? Fixed(t.metrics().final_val_loss(), 4) : "",
                  t.worker_id()});
  }
  return table;
}

Table PointsTable(const v1::GetTrialResponse& response) {
  Table table(
      {"split", "step", "loss", "learning_rate", "tokens_per_s", "elapsed_s"});
  for (const v1::LossPoint& p : response.points()) {
    table.AddRow(
        {p.split() == v1::SPLIT_VAL ? "val" : "train", absl::StrCat(p.step()),
         Fixed(p.loss(), 4), fmt::format("{:.3g}", p.learning_rate()),
         Fixed(p.tokens_per_second(), 0), Fixed(p.elapsed_seconds(), 1)});
  }
  return table;
}

}  // namespace prism::cli
