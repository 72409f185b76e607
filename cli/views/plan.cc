#include "cli/views/plan.h"

#include <cmath>
#include <iterator>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "cli/output.h"
#include "fmt/format.h"

namespace prism::cli {

std::string ExtensionLine(const v1::ExtendResponse& r, bool dry_run) {
  std::string what;
  const int seeds = r.seeds_added_size();
  if (seeds > 0) {
    absl::StrAppend(&what, seeds == 1 ? "seed " : "seeds ",
                    absl::StrJoin(r.seeds_added(), ", "));
    // Each schedule that gets seeds gets every new one, unless it lacked
    // some of the old ones too (to_seeds fills those).
    if (r.trials_created() % seeds == 0 && r.schedules_added().empty()) {
      absl::StrAppend(&what, " on ", r.trials_created() / seeds, " schedules");
    }
  }
  if (!r.schedules_added().empty()) {
    absl::StrAppend(&what, what.empty() ? "" : "; ", "schedules ",
                    absl::StrJoin(r.schedules_added(), " "));
  }
  return absl::StrCat(dry_run ? "would queue " : "queued ", r.trials_created(),
                      r.trials_created() == 1 ? " trial" : " trials",
                      what.empty() ? "" : absl::StrCat(" (", what, ")"), "; ",
                      dry_run ? "reuses " : "reused ", r.trials_reused(),
                      " finished trials");
}

std::string HeadroomLine(const v1::Headroom& h) {
  const auto of = [](int64_t value, int64_t limit) {
    return limit > 0 ? absl::StrCat(value, " of ", limit)
                     : absl::StrCat(value, " (no limit)");
  };
  return WrapText(
      absl::StrCat(
          "limits: ", of(h.trials(), h.max_trials_per_experiment()),
          " trials per experiment; your queued trials ",
          of(h.queued_trials(), h.max_queued_trials()),
          "; your active experiments ",
          of(h.active_experiments(), h.max_active_experiments()), "; spec ",
          fmt::format("{:.1f} of {:.1f} KiB",
                      static_cast<double>(h.spec_bytes()) / 1024.0,
                      static_cast<double>(h.max_stored_spec_bytes()) / 1024.0)),
      100, 2);
}

std::string Thousands(double value) {
  const std::string digits = fmt::format("{:.0f}", std::abs(value));
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return value < -0.5 ? "-" + out : out;
}

std::string Scaled(double value) {
  static constexpr const char* kUnits[] = {"", "k", "M", "G", "T", "P"};
  size_t unit = 0;
  while (std::abs(value) >= 1000.0 && unit + 1 < std::size(kUnits)) {
    value /= 1000.0;
    ++unit;
  }
  return unit == 0 ? fmt::format("{:.0f}", value)
                   : fmt::format("{:.1f}{}", value, kUnits[unit]);
}

namespace {

// WorkerTime renders worker-hours in the unit that reads: "195
// worker-hours", "4.7 worker-minutes", "28 worker-seconds".
std::string WorkerTime(double hours) {
  if (hours >= 1) {
    return absl::StrCat(
        hours >= 100 ? Thousands(hours) : fmt::format("{:.2g}", hours),
        " worker-hours");
  }
  if (hours * 60 >= 1) return fmt::format("{:.2g} worker-minutes", hours * 60);
  return fmt::format("{:.2g} worker-seconds", hours * 3600);
}

// PlanRow is one labelled line of the bill, its text wrapped under the label.
std::string PlanRow(absl::string_view label, absl::string_view text) {
  const std::string line =
      fmt::format("  {:<10}{}", std::string(label), std::string(text));
  return WrapText(line, 100, 12) + "\n";
}

}  // namespace

std::string PlanBlock(const v1::PlanEstimate& p) {
  std::string out;
  out += PlanRow(
      "schedules",
      absl::StrCat(Thousands(p.schedules()),
                   " in the space (the baseline "
                   "included); ",
                   Thousands(p.trials()), " trials queued now, ", p.seeds(),
                   p.seeds() == 1 ? " seed" : " seeds", " each"));
  out +=
      PlanRow("steps",
              fmt::format("{} expected, {} at most: {:.1f}% and {:.1f}% of the "
                          "grid's {} ({})",
                          Thousands(p.steps()), Thousands(p.max_steps()),
                          100.0 * p.expected_share(), 100.0 * p.max_share(),
                          Thousands(p.grid_steps()), p.share_source()));
  out +=
      PlanRow("tokens", fmt::format("{} expected, {} at most ({} a step)",
                                    Scaled(p.tokens()), Scaled(p.max_tokens()),
                                    Thousands(p.tokens_per_step())));
  out += PlanRow(
      "compute",
      fmt::format("{} parameters, {} FLOPs a token (6 x non-embedding "
                  "parameters + 6 x layers x context x d_model); {:.2e} "
                  "FLOPs expected",
                  Scaled(static_cast<double>(p.parameters())),
                  Scaled(p.flops_per_token()), p.flops()));
  out += PlanRow(
      "time",
      p.tokens_per_second() > 0
          ? fmt::format("{} expected, {} at most, at {} "
                        "tokens/s a worker ({})",
                        WorkerTime(p.worker_hours()),
                        WorkerTime(p.max_worker_hours()),
                        Scaled(p.tokens_per_second()), p.throughput_source())
          : std::string("unknown: no throughput measured or assumed"));
  out +=
      PlanRow("corpus",
              p.corpus_tokens() > 0
                  ? absl::StrCat(Scaled(static_cast<double>(p.corpus_tokens())),
                                 " train tokens")
                  : std::string("size unknown here"));
  for (const std::string& warning : p.warnings()) {
    out +=
        WrapText(absl::StrCat("warning: ", Printable(warning)), 100, 2) + "\n";
  }
  return out;
}

std::string PlanLine(const v1::PlanEstimate& p) {
  const bool measured = absl::StartsWith(p.throughput_source(), "measured");
  const std::string share =
      p.max_share() > p.expected_share()
          ? fmt::format("{:.1f}% of the grid's, at most {:.1f}%",
                        100.0 * p.expected_share(), 100.0 * p.max_share())
          : fmt::format("{:.1f}% of the grid's", 100.0 * p.expected_share());
  std::string line = fmt::format(
      "bill: {} steps ({}), {} tokens, {} ({})", Thousands(p.steps()), share,
      Scaled(p.tokens()), WorkerTime(p.worker_hours()),
      measured ? "measured" : "assumed");
  if (p.warnings_size() > 0) {
    absl::StrAppend(&line, "; ", p.warnings_size(),
                    p.warnings_size() == 1 ? " warning" : " warnings");
  }
  return WrapText(line, 100, 2);
}

}  // namespace prism::cli
