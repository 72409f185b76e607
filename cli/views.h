// Views: how the RPC responses print. One place turns experiments, trials,
// workers and rankings into cli/output.h Tables (text or CSV) or into the
// protobuf JSON mapping, so `prism status`, `prism results` and `prism run`
// show the same columns.
//
//   PrintRanking(response, Format::kText, std::cout);
//
// Each view has its own header under cli/views/; this one includes them all,
// for the commands. The formatting they share is cli/views/format.h.
//
// Thread-safety: pure functions.
#ifndef PRISM_CLI_VIEWS_H_
#define PRISM_CLI_VIEWS_H_

#include "cli/views/asha.h"         // IWYU pragma: export
#include "cli/views/compare.h"      // IWYU pragma: export
#include "cli/views/experiments.h"  // IWYU pragma: export
#include "cli/views/format.h"       // IWYU pragma: export
#include "cli/views/ladder.h"       // IWYU pragma: export
#include "cli/views/plan.h"         // IWYU pragma: export
#include "cli/views/principles.h"   // IWYU pragma: export
#include "cli/views/ranking.h"      // IWYU pragma: export
#include "cli/views/suggestions.h"  // IWYU pragma: export
#include "cli/views/summary.h"      // IWYU pragma: export
#include "cli/views/tokens.h"       // IWYU pragma: export
#include "cli/views/trials.h"       // IWYU pragma: export
#include "cli/views/workers.h"      // IWYU pragma: export

#endif  // PRISM_CLI_VIEWS_H_
