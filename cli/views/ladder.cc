#include "cli/views/ladder.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/views/format.h"
#include "fmt/format.h"
#include "proto/enum_names.h"

namespace prism::cli {

namespace {

std::string Correlation(const v1::LadderEstimate& e) {
  return fmt::format("{:+.2f} [{:+.2f}, {:+.2f}]", e.estimate(), e.low(),
                     e.high());
}

}  // namespace

void PrintLadder(const v1::LadderTransferResponse& response, Format format,
                 std::ostream& out) {
  if (format == Format::kJson) {
    out << ProtoJson(response);
    return;
  }
  if (format == Format::kCsv) {
    Table table({"small_rung", "small_experiment", "large_experiment",
                 "small_size", "large_size", "schedules", "small_seeds",
                 "large_seeds", "spearman", "spearman_low", "spearman_high",
                 "kendall", "kendall_low", "kendall_high", "large_best",
                 "best_set_holds_large_best", "note"});
    for (const v1::LadderPair& p : response.pairs()) {
      const bool measured = p.note().empty();
      auto num = [&](double v) {
        return measured ? fmt::format("{:.6g}", v) : std::string();
      };
      table.AddRow({absl::StrCat(p.small_rung() + 1),
                    absl::StrCat(p.small_experiment_id()),
                    absl::StrCat(p.large_experiment_id()), p.small_size(),
                    p.large_size(), measured ? absl::StrCat(p.schedules()) : "",
                    measured ? absl::StrCat(p.small_seeds()) : "",
                    measured ? absl::StrCat(p.large_seeds()) : "",
                    num(p.spearman().estimate()), num(p.spearman().low()),
                    num(p.spearman().high()), num(p.kendall().estimate()),
                    num(p.kendall().low()), num(p.kendall().high()),
                    p.large_best(),
                    p.has_best_set_holds_large_best()
                        ? (p.best_set_holds_large_best() ? "true" : "false")
                        : "",
                    p.note()});
    }
    table.Print(out, format);
    return;
  }
  out << "ladder " << response.ladder_id() << ": " << response.rungs_size()
      << " of " << response.planned_rungs() << " rungs submitted\n";
  for (const v1::Experiment& e : response.rungs()) {
    out << "  rung " << e.ladder_rung() + 1 << ": experiment " << e.id() << ", "
        << EnumValueName(e.state());
    if (!e.ladder_note().empty()) out << "; " << Printable(e.ladder_note());
    out << "\n";
  }
  out << "\n";
  Table table({"rungs", "sizes", "n", "spearman [95% CI]", "kendall [95% CI]",
               "holds best"});
  std::vector<std::string> notes;
  for (const v1::LadderPair& p : response.pairs()) {
    const std::string rungs =
        absl::StrCat(p.small_rung() + 1, "->", p.small_rung() + 2);
    const std::string sizes =
        absl::StrCat(p.small_size(), "->", p.large_size());
    if (!p.note().empty()) {
      table.AddRow({rungs, sizes, "", "", "", ""});
      notes.push_back(absl::StrCat(rungs, ": ", p.note()));
      continue;
    }
    table.AddRow({rungs, sizes, absl::StrCat(p.schedules()),
                  Correlation(p.spearman()), Correlation(p.kendall()),
                  p.has_best_set_holds_large_best()
                      ? (p.best_set_holds_large_best() ? "yes" : "no")
                      : ""});
  }
  table.Print(out, format);
  for (const std::string& note : notes) out << Printable(note) << "\n";
  if (!response.pairs().empty() &&
      notes.size() < static_cast<size_t>(response.pairs_size())) {
    out << "n: schedules run at both sizes (the baseline left out); "
           "correlations of their mean paired deltas, 95% bootstrap over "
           "seeds; holds best: the small best-set holds the large best\n";
  }
}

}  // namespace prism::cli
