// The ASHA rungs: a count line per rung and the table of who reached it.
//
// Thread-safety: pure functions.
#ifndef PRISM_CLI_VIEWS_ASHA_H_
#define PRISM_CLI_VIEWS_ASHA_H_

#include <string>

#include "cli/output.h"
#include "prism/v1/prism.pb.h"

namespace prism::cli {

// AshaRungLine returns one rung's count, e.g. "rung 60: promoted 3 / quota 3
// / reached 9 of 9 members (complete)".
std::string AshaRungLine(const v1::AshaRung& rung);

// AshaRungsTable: per ASHA rung and schedule that reached it (best first),
// its score, whether that is a paired delta or a raw val loss, its seeds and
// whether it went on.
Table AshaRungsTable(const v1::RankResponse& response);

}  // namespace prism::cli

#endif  // PRISM_CLI_VIEWS_ASHA_H_
