#include "cli/views/principles.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/views/format.h"
#include "fmt/format.h"
#include "proto/enum_names.h"

namespace prism::cli {

// PrincipleSummaryLine condenses the principle table into one line:
// "principles (effect of violating, 95% CI, p): smooth +0.0040 ±0.0100 p
// 0.420, ..."; "" when the ranking has no principle analysis.
std::string PrincipleSummaryLine(const v1::RankResponse& response) {
  std::vector<std::string> estimated, not_estimable;
  for (const v1::PrincipleEffect& e : response.principle_effects()) {
    if (e.has_effect()) {
      const std::string half = HalfWidth(e.effect());
      estimated.push_back(fmt::format(
          "{} {:+.4f}{}{}", EnumValueName(e.principle()), e.effect().mean(),
          half.empty() ? "" : absl::StrCat(" ±", half),
          e.has_p_value() ? absl::StrCat(" p ", PValue(e.p_value())) : ""));
    } else {
      not_estimable.push_back(EnumValueName(e.principle()));
    }
  }
  if (estimated.empty() && not_estimable.empty()) return "";
  std::string line = "principles";
  if (!estimated.empty()) {
    absl::StrAppend(&line, " (effect of violating, 95% CI, p): ",
                    absl::StrJoin(estimated, ", "));
  }
  if (!not_estimable.empty()) {
    absl::StrAppend(&line, estimated.empty() ? ": " : "; ",
                    absl::StrJoin(not_estimable, ", "),
                    " not estimable here (see the table)");
  }
  return line;
}

std::string PrincipleEffectNote(const v1::PrincipleEffect& effect) {
  if (effect.status() == v1::EFFECT_ESTIMATED && effect.has_effect()) {
    return fmt::format("{} schedules, {} dof", effect.effect().n(),
                       effect.dof());
  }
  if (effect.status() == v1::EFFECT_STATUS_UNSPECIFIED) return "";
  return absl::StrCat(
      "not estimable (",
      effect.note().empty() ? EnumValueName(effect.status()) : effect.note(),
      ")");
}

std::string PrincipleMethod(bool wide) {
  std::string text =
      "effect: coefficient of violating the principle in a regression of "
      "each schedule's mean paired delta on all the principles' "
      "violations (weighted by paired seeds, baseline left out), with its "
      "95% t-interval half-width and unadjusted p";
  if (wide) {
    absl::StrAppend(&text,
                    "; mean_delta_*: plain means, not adjusted for the other "
                    "principles");
  }
  return text;
}

namespace {

// kNarrowNoteWidth is the widest note the default principle table shows.
constexpr size_t kNarrowNoteWidth = 39;

}  // namespace

// PrincipleLongNotes are the notes the default principle table moved out:
// "pow2: not estimable (...)".
std::vector<std::string> PrincipleLongNotes(const v1::RankResponse& response) {
  std::vector<std::string> lines;
  for (const v1::PrincipleEffect& e : response.principle_effects()) {
    const std::string note = PrincipleEffectNote(e);
    if (note.size() > kNarrowNoteWidth) {
      lines.push_back(absl::StrCat(EnumValueName(e.principle()), ": ", note));
    }
  }
  return lines;
}

Table PrincipleEffectsTable(const v1::RankResponse& response, bool wide) {
  std::vector<std::string> columns = {"principle", "satisfied",   "violated",
                                      "effect",    "effect_ci95", "p"};
  if (wide) {
    columns.insert(columns.end(),
                   {"mean_delta_satisfied", "mean_delta_violated"});
  }
  columns.push_back("note");
  Table table(std::move(columns));
  for (const v1::PrincipleEffect& e : response.principle_effects()) {
    const bool estimated = e.has_effect();
    std::vector<std::string> cells = {
        EnumValueName(e.principle()),
        absl::StrCat(e.satisfied()),
        absl::StrCat(e.violated()),
        estimated ? fmt::format("{:+.4f}", e.effect().mean()) : "",
        estimated ? HalfWidth(e.effect()) : "",
        e.has_p_value() ? PValue(e.p_value()) : ""};
    if (wide) {
      cells.push_back(e.satisfied() > 0
                          ? fmt::format("{:+.4f}", e.mean_delta_satisfied())
                          : "");
      cells.push_back(e.violated() > 0
                          ? fmt::format("{:+.4f}", e.mean_delta_violated())
                          : "");
    }
    std::string note = PrincipleEffectNote(e);
    // The default view keeps the table within 100 columns: a longer note
    // goes under the table (PrincipleLongNotes).
    if (!wide && note.size() > kNarrowNoteWidth) note = "see below";
    cells.push_back(std::move(note));
    table.AddRow(std::move(cells));
  }
  return table;
}

}  // namespace prism::cli
