#include "cli/views/ladder.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/views/format.h"
#include "fmt/format.h"
#include "proto/enum_names.h"

namespace prism::cli {

namespace {

using PairColumn = Column<v1::LadderPair>;

std::string Correlation(const v1::LadderEstimate& e) {
  return fmt::format("{:+.2f} [{:+.2f}, {:+.2f}]", e.estimate(), e.low(),
                     e.high());
}

// Measured: a pair with a note (why it could not be measured) has no
// figures.
bool Measured(const v1::LadderPair& p) { return p.note().empty(); }

// Number is a measured pair's figure, to 6 significant digits.
std::string Number(const v1::LadderPair& p, double value) {
  return Measured(p) ? fmt::format("{:.6g}", value) : std::string();
}

// Holds is whether the small best-set holds the large best, in `yes` and
// `no`'s words; "" when unknown.
std::string Holds(const v1::LadderPair& p, const char* yes, const char* no) {
  if (!p.has_best_set_holds_large_best()) return "";
  return p.best_set_holds_large_best() ? yes : no;
}

// Rungs is "1->2".
std::string Rungs(const v1::LadderPair& p) {
  return absl::StrCat(p.small_rung() + 1, "->", p.small_rung() + 2);
}

constexpr PairColumn kCsvColumns[] = {
    {"small_rung",
     [](const v1::LadderPair& p) { return absl::StrCat(p.small_rung() + 1); }},
    {"small_experiment",
     [](const v1::LadderPair& p) {
       return absl::StrCat(p.small_experiment_id());
     }},
    {"large_experiment",
     [](const v1::LadderPair& p) {
       return absl::StrCat(p.large_experiment_id());
     }},
    {"small_size", [](const v1::LadderPair& p) { return p.small_size(); }},
    {"large_size", [](const v1::LadderPair& p) { return p.large_size(); }},
    {"schedules",
     [](const v1::LadderPair& p) -> std::string {
       return Measured(p) ? absl::StrCat(p.schedules()) : "";
     }},
    {"small_seeds",
     [](const v1::LadderPair& p) -> std::string {
       return Measured(p) ? absl::StrCat(p.small_seeds()) : "";
     }},
    {"large_seeds",
     [](const v1::LadderPair& p) -> std::string {
       return Measured(p) ? absl::StrCat(p.large_seeds()) : "";
     }},
    {"spearman",
     [](const v1::LadderPair& p) {
       return Number(p, p.spearman().estimate());
     }},
    {"spearman_low",
     [](const v1::LadderPair& p) { return Number(p, p.spearman().low()); }},
    {"spearman_high",
     [](const v1::LadderPair& p) { return Number(p, p.spearman().high()); }},
    {"kendall",
     [](const v1::LadderPair& p) { return Number(p, p.kendall().estimate()); }},
    {"kendall_low",
     [](const v1::LadderPair& p) { return Number(p, p.kendall().low()); }},
    {"kendall_high",
     [](const v1::LadderPair& p) { return Number(p, p.kendall().high()); }},
    {"large_best", [](const v1::LadderPair& p) { return p.large_best(); }},
    {"best_set_holds_large_best",
     [](const v1::LadderPair& p) { return Holds(p, "true", "false"); }},
    {"note", [](const v1::LadderPair& p) { return p.note(); }},
};

// kTextColumns fit 100 columns; a pair's note goes below the table.
constexpr PairColumn kTextColumns[] = {
    {"rungs", Rungs},
    {"sizes",
     [](const v1::LadderPair& p) {
       return absl::StrCat(p.small_size(), "->", p.large_size());
     }},
    {"n",
     [](const v1::LadderPair& p) -> std::string {
       return Measured(p) ? absl::StrCat(p.schedules()) : "";
     }},
    {"spearman [95% CI]",
     [](const v1::LadderPair& p) -> std::string {
       return Measured(p) ? Correlation(p.spearman()) : "";
     }},
    {"kendall [95% CI]",
     [](const v1::LadderPair& p) -> std::string {
       return Measured(p) ? Correlation(p.kendall()) : "";
     }},
    {"holds best",
     [](const v1::LadderPair& p) -> std::string {
       return Measured(p) ? Holds(p, "yes", "no") : "";
     }},
};

// PrintLadderText prints the rungs, then the table of their pairs and the
// notes of those not measured.
void PrintLadderText(const v1::LadderTransferResponse& response,
                     std::ostream& out) {
  out << "ladder " << response.ladder_id() << ": " << response.rungs_size()
      << " of " << response.planned_rungs() << " rungs submitted\n";
  for (const v1::Experiment& e : response.rungs()) {
    out << "  rung " << e.ladder_rung() + 1 << ": experiment " << e.id() << ", "
        << EnumValueName(e.state());
    if (!e.ladder_note().empty()) out << "; " << Printable(e.ladder_note());
    out << "\n";
  }
  out << "\n";
  TableOf<v1::LadderPair>(kTextColumns, response.pairs())
      .Print(out, Format::kText);
  size_t notes = 0;
  for (const v1::LadderPair& p : response.pairs()) {
    if (Measured(p)) continue;
    out << Printable(absl::StrCat(Rungs(p), ": ", p.note())) << "\n";
    ++notes;
  }
  if (!response.pairs().empty() &&
      notes < static_cast<size_t>(response.pairs_size())) {
    out << "n: schedules run at both sizes (the baseline left out); "
           "correlations of their mean paired deltas, 95% bootstrap over "
           "seeds; holds best: the small best-set holds the large best\n";
  }
}

}  // namespace

void PrintLadder(const v1::LadderTransferResponse& response, Format format,
                 std::ostream& out) {
  switch (format) {
    case Format::kJson:
      out << ProtoJson(response);
      return;
    case Format::kCsv:
      TableOf<v1::LadderPair>(kCsvColumns, response.pairs()).Print(out, format);
      return;
    case Format::kText:
      PrintLadderText(response, out);
      return;
  }
}

}  // namespace prism::cli
