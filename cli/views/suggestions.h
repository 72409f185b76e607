// The suggestions view: the surrogate's next schedules to try.
//
// Thread-safety: pure functions.
#ifndef PRISM_CLI_VIEWS_SUGGESTIONS_H_
#define PRISM_CLI_VIEWS_SUGGESTIONS_H_

#include <ostream>

#include "cli/output.h"
#include "prism/v1/prism.pb.h"

namespace prism::cli {

// SuggestionsTable: rank, schedule, principles, predicted delta vs the
// baseline, its uncertainty (sd) and the lower confidence bound.
Table SuggestionsTable(const v1::SuggestResponse& response);
// PrintSuggestions prints a Suggest response: in text the table, what its
// columns mean and the method line; in CSV the table; in JSON the response.
void PrintSuggestions(const v1::SuggestResponse& response, Format format,
                      std::ostream& out);

}  // namespace prism::cli

#endif  // PRISM_CLI_VIEWS_SUGGESTIONS_H_
