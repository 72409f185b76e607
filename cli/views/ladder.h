// The ladder view: how a ranking transfers from one model size to the next.
//
// Thread-safety: pure functions.
#ifndef PRISM_CLI_VIEWS_LADDER_H_
#define PRISM_CLI_VIEWS_LADDER_H_

#include <ostream>

#include "cli/output.h"
#include "prism/v1/prism.pb.h"

namespace prism::cli {

// PrintLadder prints a ladder's transfer: per pair of consecutive rungs,
// Spearman and Kendall with their bootstrap intervals, the schedules
// matched and whether the small best-set holds the large best (text within
// 100 columns, CSV one row per pair); JSON is the response's JSON mapping.
void PrintLadder(const v1::LadderTransferResponse& response, Format format,
                 std::ostream& out);

}  // namespace prism::cli

#endif  // PRISM_CLI_VIEWS_LADDER_H_
