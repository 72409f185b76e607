#include "cli/views/suggestions.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/views/format.h"
#include "fmt/format.h"

namespace prism::cli {

namespace {

// SuggestionRow is a suggestion and its rank (1 first).
struct SuggestionRow {
  int rank;
  const v1::Suggestion& suggestion;
};

constexpr Column<SuggestionRow> kSuggestionColumns[] = {
    {"rank", [](const SuggestionRow& r) { return absl::StrCat(r.rank); }},
    {"schedule",
     [](const SuggestionRow& r) { return r.suggestion.schedule(); }},
    {"principles",
     [](const SuggestionRow& r) {
       return PrincipleFlags(r.suggestion.principles());
     }},
    {"predicted_delta",
     [](const SuggestionRow& r) {
       return fmt::format("{:+.4f}", r.suggestion.predicted_delta());
     }},
    {"uncertainty",
     [](const SuggestionRow& r) {
       return Fixed(r.suggestion.uncertainty(), 4);
     }},
    {"lcb",
     [](const SuggestionRow& r) {
       return fmt::format("{:+.4f}", r.suggestion.acquisition());
     }},
};

}  // namespace

Table SuggestionsTable(const v1::SuggestResponse& response) {
  std::vector<SuggestionRow> rows;
  for (const v1::Suggestion& x : response.suggestions()) {
    rows.push_back({static_cast<int>(rows.size()) + 1, x});
  }
  return TableOf<SuggestionRow>(kSuggestionColumns, rows);
}

void PrintSuggestions(const v1::SuggestResponse& response, Format format,
                      std::ostream& out) {
  if (format == Format::kJson) {
    out << ProtoJson(response);
    return;
  }
  SuggestionsTable(response).Print(out, format);
  if (format == Format::kCsv) return;
  out << "predicted_delta: the surrogate's mean paired delta of final val "
         "loss vs the baseline (< 0 is better); uncertainty: its sd; lcb = "
         "predicted_delta - uncertainty, the rank order\n"
      << Printable(response.method()) << "\n";
  for (const std::string& w : response.warnings()) {
    out << WrapText(absl::StrCat("warning: ", Printable(w)), 100, 2) << "\n";
  }
}

}  // namespace prism::cli
