// The principle effects: their table, notes and method line, and the one
// line the ranking's summary gives them.
//
// Thread-safety: pure functions.
#ifndef PRISM_CLI_VIEWS_PRINCIPLES_H_
#define PRISM_CLI_VIEWS_PRINCIPLES_H_

#include <string>
#include <vector>

#include "absl/types/span.h"
#include "cli/output.h"
#include "prism/v1/prism.pb.h"

namespace prism::cli {

// PrincipleEffectsTable: per principle, the schedules that satisfy and
// violate it, the effect of violating it with its 95% CI half-width and p,
// the plain mean deltas, and a note: "12 schedules, 9 dof" or "not estimable
// (nothing violates it)".
// Without `wide`, the plain means (mean_delta_*) are left out.
Table PrincipleEffectsTable(const v1::RankResponse& response, bool wide = true);
// PrincipleEffectColumns are PrincipleEffectsTable's columns.
absl::Span<const Column<v1::PrincipleEffect>> PrincipleEffectColumns(bool wide);
// PrincipleEffectNote is that note; "" from a coordinator that sends no
// status.
std::string PrincipleEffectNote(const v1::PrincipleEffect& effect);
// PrincipleMethod is the one line that states how the effects are estimated.
std::string PrincipleMethod(bool wide = true);

// PrincipleSummaryLine condenses the principle table into one line:
// "principles (effect of violating, 95% CI, p): smooth +0.0040 ±0.0100 p
// 0.420, ..."; "" when the ranking has no principle analysis.
std::string PrincipleSummaryLine(const v1::RankResponse& response);

// PrincipleLongNotes are the notes the default principle table moved out:
// "pow2: not estimable (...)".
std::vector<std::string> PrincipleLongNotes(const v1::RankResponse& response);

}  // namespace prism::cli

#endif  // PRISM_CLI_VIEWS_PRINCIPLES_H_
