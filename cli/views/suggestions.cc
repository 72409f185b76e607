#include "cli/views/suggestions.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "cli/views/format.h"
#include "fmt/format.h"

namespace prism::cli {

Table SuggestionsTable(const v1::SuggestResponse& response) {
  Table table({"rank", "schedule", "principles", "predicted_delta",
               "uncertainty", "lcb"});
  int rank = 0;
  for (const v1::Suggestion& x : response.suggestions()) {
    table.AddRow(
        {absl::StrCat(++rank), x.schedule(), PrincipleFlags(x.principles()),
         fmt::format("{:+.4f}", x.predicted_delta()), Fixed(x.uncertainty(), 4),
         fmt::format("{:+.4f}", x.acquisition())});
  }
  return table;
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
